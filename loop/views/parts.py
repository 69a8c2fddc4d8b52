"""What the pages show at step i, as plain data: tables, colours, windows, lines.

No Streamlit here: the tests read them, and loop/views/step.py gathers what a
page draws of step i into one record. Each function takes (trace, cursor) and
looks at nothing else, as a Python Tutor view does.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from typing import Callable, TypedDict

import pandas as pd

from ..engine import rules
from ..text.catalogs import N_
from .narrate import short, what
from ..engine.trace import MAIN, Thread, Trace, stage_title
from ..files.transcript import MAX_COUNT

# Red is kept for is_error, so an id's colour never reads as a failure.
ID_COLOURS = ("blue", "green", "orange", "violet", "yellow", "gray")

COLLECTED = N_("(collected, not yet written back)")  # a result column's start, before the result is in messages
PAIR_COLUMNS = ["turn", "id", "colour", "tool", "input", "result", "is_error", "status"]
# A row's tokens are its own model call's (what that call sent and got back, as the API counted them): the
# figures the step's line and the context chart show. The sums over every call are apart, labelled as sums.
CALL_TOKENS = ["input tokens (this call)", "output tokens (this call)"]
TOTAL_TOKENS = ["input tokens (all calls)", "output tokens (all calls)"]
STEP_COLUMNS = ["now", "step", "turn", "stage", "turn_count", "transition_reason", "stop_reason", "messages",
                *CALL_TOKENS]
PRESENTER_FIELDS = ["turn_count", "transition_reason", "stop_reason", "messages"]

# How a loop that ended says why, in a sentence (the key is `ended`: a stop_reason, or max_turns).
ENDINGS = {
    "end_turn": N_("The model finished its answer (end_turn)."),
    "max_tokens": N_("The answer was cut off at max_tokens: it is incomplete, and the loop does not go on."),
    "stop_sequence": N_("The model stopped at a stop sequence."),
    "refusal": N_("The model refused."),
    "pause_turn": N_("The server paused a long turn; the s01 loop ends here."),
    "model_context_window_exceeded": N_("The context window is full: the answer was cut off."),
    "max_turns": N_("Max turns reached: the loop was stopped before calling the model again."),
    # A broken loop's (loop/engine/layer_mistake.py): the API refused its request; without a loop, nothing ran.
    "invalid_request": N_("The API refused the request (400 invalid_request_error): the broken loop ends here."),
    "tool_use": N_("The answer asks for a tool_use and nothing runs it: no tool_result is written back, and the "
                   "answer stays a wish."),
}
OTHER_ENDING = N_("stop_reason {stop} is not tool_use, so the loop ends.")

# A run with sub-agents adds a thread column to both (a run without keeps the chapter's columns).
THREAD_COLUMN = "thread"
NAME_LIMIT = 40  # characters of a thread's id its name keeps


def pair_columns(trace: Trace) -> list[str]:
    return [THREAD_COLUMN, *PAIR_COLUMNS] if trace.has_threads else PAIR_COLUMNS


def step_columns(trace: Trace) -> list[str]:
    return [*STEP_COLUMNS[:2], THREAD_COLUMN, *STEP_COLUMNS[2:]] if trace.has_threads else STEP_COLUMNS


def thread_name(thread: Thread) -> str:
    """How a thread is named on a page: `main`, or `task toolu_…` after the tool_use that started it.

    An id as long as an API's (toolu_ and 24 characters) is named whole, so the heading and the breadcrumb say
    which task it is; a longer one (a log's) is cut in the middle. A table cuts it shorter still, the whole name in
    a tooltip."""
    if thread.is_main:
        return MAIN
    started = thread.parent_tool_use_id
    if (thread.facts.get("started_by") or {}).get("tool") == "spawn_teammate":
        return _cut_middle(thread.id)  # a teammate (teammate-bob): its own loop, not a task's
    if isinstance(started, str) and started:
        return f"task {_cut_middle(started)}"
    return _cut_middle(thread.id)


def _cut_middle(name: str) -> str:
    """A name of at most NAME_LIMIT characters, cut in the middle: two ids of one log share their start and
    differ at their end, which a cut at the end would drop."""
    if len(name) <= NAME_LIMIT:
        return name
    half = NAME_LIMIT // 2
    return name[:half - 1] + "…" + name[-half:]


def breadcrumb(trace: Trace, cursor: int) -> list[tuple[Thread, int | None]]:
    """The threads from the main one down to the cursor's, each with the step that goes there.

    Going up leads to the parent's run_tool step that took the sub-agent's
    answer (or, while it runs, the parent's last step before it); the last
    item is the cursor's own thread (its step: the cursor).
    """
    path = trace.path(cursor)
    out = []
    for thread, below in zip(path, path[1:]):
        to = trace.returned_at(below.id)
        if to is None:
            first = trace.opened_at(below.id)
            to = trace.last_in_thread(thread.id, first) if first is not None else None
        out.append((thread, to))
    out.append((path[-1], cursor if 0 <= cursor < len(trace) else None))
    return out


def sub_agent_at(trace: Trace, cursor: int) -> Thread | None:
    """The sub-agent a step leads into: the one its run_tool took the answer of, or the one about to start."""
    if not 0 <= cursor < len(trace):
        return None
    step = trace.steps[cursor]
    if step.stage == "run_tool" and step.detail.thread in trace.threads:
        return trace.threads[step.detail.thread]
    if cursor + 1 < len(trace):
        after = trace.steps[cursor + 1]
        thread = trace.threads.get(after.thread)
        if thread is not None and thread.parent == step.thread and trace.opened_at(after.thread) == cursor + 1:
            return thread
    return None


def id_colour(tool_use_id: object) -> str:
    """The colour of an id, the same on every page and in every replay: a hash of the id."""
    digest = hashlib.sha256(str(tool_use_id).encode()).digest()
    return ID_COLOURS[digest[0] % len(ID_COLOURS)]


def screen_colours(ids: list) -> dict[str, str]:
    """The colour of each id drawn together, in the order given (the run's): two ids never share one while the
    palette has room.

    An id keeps its own colour (`id_colour`) unless an id before it took that one; then it takes the first colour
    still free. Once every colour is taken, the ids after that keep their own, so some repeat.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for tool_use_id in ids:
        key = str(tool_use_id)
        if key in out:
            continue
        own = id_colour(key)
        free = [c for c in ID_COLOURS if c not in taken]
        out[key] = own if own not in taken or not free else free[0]
        taken.add(out[key])
    return out



def result_text(content: object) -> str:
    """A tool_result's content as text: a string as it is, a list of blocks by their text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] if isinstance(b, dict) and isinstance(b.get("text"), str)  # a log may hold "text": null
                         else json.dumps(b) if isinstance(b, dict) else str(b)
                         for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


# -- the line over the views --
def status_line(trace: Trace, cursor: int, translate: Callable[[str], str] = str, shown: int | None = None) -> str:
    """`Step k of n · turn t · stage` for the step under the cursor; `translate` puts each English phrase into
    the page's language (the diagram's labels are translated the same way). `shown`: the steps the learner may
    know of, when fewer than are recorded (a step held back until its question is answered)."""
    n = len(trace) if shown is None else shown
    if not 0 <= cursor < len(trace):
        return translate(N_("Step 0 of {n} · not started")).format(n=n)
    step = trace.steps[cursor]  # the turn the step is part of (Step.turn): the request comes before turn 1
    stage = translate(stage_title(step))
    thread = trace.thread_of(cursor)
    if not thread.is_main:  # a sub-agent's step: its own turns, in its own thread
        if step.turn < 1:
            return translate(N_("Step {k} of {n} · {thread} · before turn 1 · {stage}")).format(
                k=cursor + 1, n=n, thread=thread_name(thread), stage=stage)
        return translate(N_("Step {k} of {n} · {thread} · turn {turn} · {stage}")).format(
            k=cursor + 1, n=n, thread=thread_name(thread), turn=step.turn, stage=stage)
    if step.turn < 1:
        return translate(N_("Step {k} of {n} · before turn 1 · {stage}")).format(k=cursor + 1, n=n,
                                                                                  stage=stage)
    return translate(N_("Step {k} of {n} · turn {turn} · {stage}")).format(
        k=cursor + 1, n=n, turn=step.turn, stage=stage)


def what_happened(trace: Trace, cursor: int, lang: str = "en") -> str:
    """What the step under the cursor did, in one line of `lang` (the narration without its `[k] turn t · stage` head)."""
    if not 0 <= cursor < len(trace):
        return ""
    return what(trace, cursor, lang)


def turn_count_change(trace: Trace, cursor: int) -> tuple[int, int] | None:
    """(before, after) when the step under the cursor moved `turn_count` (a write-back), else None."""
    if not 0 <= cursor < len(trace):
        return None
    step = trace.steps[cursor]
    earlier = trace.previous_in_thread(cursor)  # a sub-agent counts its own turns: the step before in its thread
    before = trace.steps[earlier].turn_count if earlier is not None else 1
    return (before, step.turn_count) if step.turn_count != before else None


def turn_count_cell(trace: Trace, i: int) -> str:
    """`turn_count` after step i as a table shows it: `1 → 2` at the step that moved it."""
    change = turn_count_change(trace, i)
    return f"{change[0]} → {change[1]}" if change else str(trace.steps[i].turn_count)


def ending(trace: Trace, cursor: int, translate: Callable[[str], str] = str,
           quote: Callable[[str], str] = str) -> str | None:
    """Why the loop ended, in a sentence, at the step that ended it and after; None while it goes on.

    `quote` makes a stop_reason the loop does not know (a transcript's, a model's) text where the sentence is
    drawn: the pages draw it as Markdown."""
    if not 0 <= cursor < len(trace) or not trace.steps[cursor].ended:
        return None
    ended = trace.steps[cursor].ended
    if ended in ENDINGS:
        return translate(ENDINGS[ended])
    return translate(OTHER_ENDING).format(stop=quote(repr(ended)))


# -- the moment the model reads a failure --
def errors_read_at(trace: Trace, cursor: int) -> list[tuple[int, int, str]]:
    """At a call_model step: the is_error tool_results the model reads in this request, as (message, block, id).

    Those are the results written back just before the call (the last message sent):
    the step where a failure becomes the model's observation, closing statement 3 at work.
    """
    if not 0 <= cursor < len(trace) or trace.steps[cursor].stage != "call_model":
        return []
    n = trace.steps[cursor].n_messages
    if not n or n > len(trace.messages):
        return []
    last = trace.messages[n - 1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return []
    return [(n - 1, j, str(b.get("tool_use_id"))) for j, b in enumerate(rules.blocks(last))
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("is_error")]


# -- the history, a bounded window of it --
def window(total: int, size: int, offset: int = 0, snap: int = 10) -> tuple[int, int]:
    """[start, end) of the messages shown: the newest `size` or up to `snap` - 1 more, or `offset` windows back.

    The newest window starts at a multiple of `snap`, so a step that adds a message
    adds it below the ones already drawn instead of moving every one of them up a
    place; the browser then redraws one message, not the whole window.
    """
    anchor = max(0, (total - size) // snap * snap)
    if offset <= 0:
        return anchor, total
    end = max(anchor - (offset - 1) * size, min(total, size))  # never page past the oldest window
    return max(0, end - size), end


def pending_response(trace: Trace, cursor: int) -> dict | None:
    """At a call_model step: the response received but not yet appended to messages (at a summarize step: the
    summary, not yet in place of the history)."""
    if 0 <= cursor < len(trace) and trace.steps[cursor].stage in ("call_model", "summarize"):
        return trace.response_at(cursor)
    return None


def last_call_at(trace: Trace, cursor: int) -> int | None:
    """The index of the last call_model (or summarize) step of the cursor's thread at or before `cursor`."""
    if not 0 <= cursor < len(trace):
        return None
    own = trace.steps_of(trace.steps[cursor].thread)
    for i in reversed(own[: bisect_right(own, cursor)]):
        if trace.steps[i].stage in ("call_model", "summarize"):
            return i
    return None


class SentRequest(TypedDict):
    """The request a call sent, as the history panel heads it: what the API received besides the messages, and
    which messages the model had not been sent before."""

    system: str  # the system prompt's text ("" when none was sent)
    tools: list[str]  # the tools' names, in the order sent
    max_tokens: int | None
    new_since_last_call: list[tuple[int, int]]  # (first message, count) spans the thread's previous call did not send


SENDING_STAGES = ("call_model", "retry", "refused")  # a step that sent the thread's history to the model


def _system_text(system: object) -> str:
    if isinstance(system, list):  # the API's other form: a list of text blocks
        return "\n\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return system if isinstance(system, str) else ""


def new_since_last_call(trace: Trace, cursor: int) -> list[tuple[int, int]]:
    """(first message, count) spans of the messages a call at `cursor` sent that the thread's previous call_model
    did not: at a second call, the response appended and the tool_results going back; at a first, everything.

    Counts say it while the history only grew since that call; after a compaction between the two, the
    messages are compared one by one (a rewritten message is one the model has not read).
    """
    step = trace.steps[cursor]
    own = trace.steps_of(step.thread)
    k = bisect_right(own, cursor) - 1
    previous, grew_only, size = None, True, step.n_messages
    for j in reversed(own[:k]):
        other = trace.steps[j]
        if other.stage == "call_model":
            previous = j
            break
        if other.stage == "compact" or other.n_messages > size:
            grew_only = False
        size = other.n_messages
    if previous is None:
        return [(0, step.n_messages)] if step.n_messages else []
    before = trace.steps[previous].n_messages
    if grew_only and step.n_messages >= before:
        return [(before, step.n_messages - before)] if step.n_messages > before else []
    old, now = trace.messages_at(previous), trace.messages_at(cursor)
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(now):
        if i < len(old) and old[i] == message:
            continue
        if spans and spans[-1][0] + spans[-1][1] == i:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        else:
            spans.append((i, 1))
    return spans


def request_as_sent(trace: Trace, index: int) -> dict | None:
    """The body a call sent: as the agent itself recorded it where its log holds the messages it sent (an imported
    Claude Code 2.1 call's `messages_sent`: its system-reminder blocks and `role: "system"` messages included),
    else its request with the history of that moment (`Trace.request_at`)."""
    request = trace.request_at(index)
    step = trace.steps[index]
    sent = step.detail.messages_sent if request is not None and step.stage == "call_model" else None
    if isinstance(sent, list):
        request["messages"] = sent
    return request


def sent_request(trace: Trace, cursor: int) -> SentRequest | None:
    """At a step that sent a request (call_model, or a retry or refused call): its head and what is new in it."""
    if not 0 <= cursor < len(trace) or trace.steps[cursor].stage not in SENDING_STAGES:
        return None
    request = trace.steps[cursor].detail.request  # each of SENDING_STAGES has one
    if not isinstance(request, dict):
        return None
    tools = request.get("tools")
    max_tokens = request.get("max_tokens")
    return SentRequest(system=_system_text(request.get("system")),
                       tools=[str(tool.get("name")) for tool in tools if isinstance(tool, dict)]
                       if isinstance(tools, list) else [],
                       max_tokens=max_tokens if isinstance(max_tokens, int) else None,
                       new_since_last_call=new_since_last_call(trace, cursor))


def compaction_at(trace: Trace, cursor: int) -> dict | None:
    """At a compact step, what it rewrote, as the page shows it side by side.

    {"kind", "why", "before": {"messages", "tokens"}, "after": {...}, "pairs": [(index, old, new)] for messages
    replaced in place, or "history_before" and "history_after" when the whole history was replaced}.
    """
    if not 0 <= cursor < len(trace) or trace.steps[cursor].stage != "compact":
        return None
    step = trace.steps[cursor]
    d = step.detail
    before_n = d.messages_before if d.given("messages_before") else len(trace.history_before(cursor))
    out = {"kind": d.kind, "why": d.why if d.given("why") else "",
           "before": {"messages": before_n, "tokens": d.tokens_before},
           "after": {"messages": step.n_messages, "tokens": d.tokens_after}}
    if d.given("history_before"):
        out["history_before"] = d.history_before
        out["history_after"] = trace.messages_at(cursor)
        out["summary"] = d.summary
    else:
        replaced = d.replaced if d.given("replaced") else []
        slots = sorted({item.get("index") for item in replaced if isinstance(item.get("index"), int)})
        now = {slot: trace.window_at(cursor, slot, slot + 1) for slot in slots}
        old = {item["index"]: item.get("message") for item in replaced if isinstance(item.get("index"), int)}
        out["pairs"] = [(slot, old[slot], (now[slot] or [None])[0]) for slot in slots]
    return out


# -- Pairs: one row per tool_use --
def pairs_table(trace: Trace, cursor: int, *, recent: int | None = None, problems: int = 200) -> pd.DataFrame:
    """`pairs_rows` as a table (for the CSV export); `table.attrs["total"]` is the number of rows in all."""
    rows, total = pairs_rows(trace, cursor, recent=recent, problems=problems)
    table = pd.DataFrame(rows, columns=pair_columns(trace))
    table.attrs["total"] = total
    return table


def pairs_signature(trace: Trace, cursor: int) -> tuple:
    """What the Pairs table at `cursor` depends on: each thread's last step and version then. Two cursors with
    the same signature show the same table (Back and Step often go between two such)."""
    here = trace.thread_of(cursor).id
    out = [here]
    for tid, thread in trace.threads.items():
        last = cursor if tid == here else trace.last_in_thread(tid, cursor)
        if last is not None:
            out += [tid, trace.steps[last].n_messages, bisect_right(thread.history.writes, last),
                    len(trace.results_at(last))]
    return tuple(out)


def message_turns(trace: Trace, thread_id: str, at: int, n: int) -> list[int]:
    """The turn each of the first `n` messages of a thread's history at step `at` was written in: the turn of the
    step that wrote it, as the heading and the LoopState count turns. (Counted from the messages, a log that
    splits one answer over several assistant messages, or holds several requests, would be turns ahead.)"""
    turns = [1] * n
    before = 0
    for i in trace.steps_of(thread_id):
        if i > at:
            break
        step = trace.steps[i]
        count = step.n_messages
        if count != before:  # appended (from `before` on), or rewritten whole (a compaction: fewer, or as many)
            for m in range(before if count > before else 0, min(count, n)):
                turns[m] = max(step.turn, 1)
        before = count
    return turns


def pairs_rows(trace: Trace, cursor: int, *, recent: int | None = None, problems: int = 200) -> tuple[list[dict], int]:
    """The tool_use/tool_result pairs of the history at `cursor`, with results collected but not written back.

    One dict a pair, keyed by the pair columns (and "depth": 0 for the main thread, 1 for a sub-agent it
    started, ...), and the number of pairs in all. A run with sub-agents has a row for each pair of every
    thread's history as it stands at the cursor, in the order the run made them: a sub-agent's pairs come right
    under the parent's tool_use that started it (whose row then takes the sub-agent's answer). With `recent`, a
    long history keeps only its last `recent` paired rows and its first `problems` waiting or orphan rows (only
    those are formatted, so it stays cheap). Each id has a colour of its own among the rows (`screen_colours`).
    """
    here = trace.thread_of(cursor).id
    pairs_of = {}  # thread id -> (thread, its pairs, results collected, turn of each message)
    for thread in trace.threads.values():
        at = cursor if thread.id == here else trace.last_in_thread(thread.id, cursor)
        if at is None or not 0 <= at < len(trace):
            continue
        messages = trace.messages_at(at)
        pending = {str(b.get("tool_use_id")): b for b in trace.results_at(at)}
        pairs_of[thread.id] = (thread, rules.pairs(messages), pending, message_turns(trace, thread.id, at, len(messages)))
    started: dict[str, list[str]] = {}  # a tool_use id -> the threads it started
    for tid, (thread, _, _, _) in pairs_of.items():
        if not thread.is_main and thread.parent_tool_use_id is not None:
            started.setdefault(str(thread.parent_tool_use_id), []).append(tid)
    found = []  # (thread, pair, pending, turn_of, depth), in the run's order
    done: set[str] = set()

    def walk(tid: str, depth: int) -> None:
        done.add(tid)
        thread, pairs, pending, turn_of = pairs_of[tid]
        for pair in pairs:
            found.append((thread, pair, pending, turn_of, depth))
            for child in started.get(str(pair.tool_use_id), []):
                if child not in done:
                    walk(child, depth + 1)

    for tid in [MAIN, *pairs_of]:  # the main loop first; then any thread whose start is not in a history shown
        if tid in pairs_of and tid not in done:
            walk(tid, 0 if pairs_of[tid][0].is_main else 1)
    chosen = range(len(found))
    if recent is not None and len(found) > recent + problems:
        paired = [i for i, f in enumerate(found) if f[1].status == "paired"]
        others = [i for i, f in enumerate(found) if f[1].status != "paired"]
        chosen = sorted(others[:problems] + paired[-recent:] if recent else others[:problems])
    picked = [found[i] for i in chosen]
    colours = screen_colours([f[1].tool_use_id for f in picked])
    rows = []
    for thread, pair, pending, turn_of, depth in picked:
        result, is_error = pair.result, pair.is_error
        shown = short(result_text(result)) if pair.result_index is not None or pair.status == "orphan" else ""
        if pair.status == "waiting" and pair.tool_use_id in pending:
            collected = pending[pair.tool_use_id]
            is_error = bool(collected.get("is_error"))
            shown = COLLECTED + " " + short(result_text(collected.get("content")), 60)
        where = pair.use_index if pair.use_index is not None else pair.result_index
        row = {THREAD_COLUMN: thread_name(thread), "depth": depth} if trace.has_threads else {}
        row.update({
            "turn": turn_of[where] if where is not None and where < len(turn_of) else None,
            "colour": colours[str(pair.tool_use_id)],
            "id": pair.tool_use_id,
            "tool": pair.name or "",
            "input": short(pair.input) if pair.input is not None else "",
            "result": shown,
            "is_error": is_error,
            "status": pair.status,
        })
        rows.append(row)
    return rows, len(found)


# -- LoopState: one row per step --
def step_row(trace: Trace, i: int) -> list:
    """Step i's row of the LoopState table (`step_columns`), "now" left empty: the LoopState of its thread after it.

    `turn` is the turn the step is part of (None for the request, before turn 1); `turn_count` the
    chapter's variable after the step, so a write-back shows its turn and the next turn's count.
    """
    step = trace.steps[i]
    thread = [thread_name(trace.threads[step.thread])] if trace.has_threads else []
    return ["", i + 1, *thread, step.turn or None, step.stage, step.turn_count, step.transition_reason, step.stop_reason,
            step.n_messages, *call_tokens(trace, i)]


def call_tokens(trace: Trace, i: int) -> tuple[int | None, int | None]:
    """(input, output) tokens of step i's own model call (a call_model or a summarize step), as the API reported
    them; (None, None) at a step that called no model. The input is what the call sent: the context then."""
    step = trace.steps[i]
    if step.stage not in ("call_model", "summarize"):
        return None, None
    response = trace.response_at(i)
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage if isinstance(usage, dict) else {}  # a log may hold anything there
    return _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))


def token_totals(trace: Trace, cursor: int) -> tuple[int, int] | None:
    """(input, output) tokens summed over every model call of the cursor's thread up to it; None before a step."""
    if not 0 <= cursor < len(trace):
        return None
    step = trace.steps[cursor]
    return step.input_tokens, step.output_tokens


def steps_window(trace: Trace, cursor: int, around: int | None = None) -> tuple[int, int]:
    """The rows [start, end) of the LoopState table to draw: all, or `around` each side of the cursor."""
    start, end = 0, len(trace)
    if around is not None and end > 2 * around + 1:
        start = min(max(0, cursor - around), end - (2 * around + 1))
        end = start + 2 * around + 1
    return start, end


def steps_table(trace: Trace) -> pd.DataFrame:
    """One row per step: the LoopState after it, its call's tokens and the sums so far (for the CSV export)."""
    table = pd.DataFrame([step_row(trace, i) + list(token_totals(trace, i)) for i in range(len(trace))],
                         columns=[*step_columns(trace), *TOTAL_TOKENS])
    # whole numbers, empty for the request (before turn 1) and for a step that called no model
    return table.astype({"turn": "Int64", **{c: "Int64" for c in CALL_TOKENS}})


def state_rows(trace: Trace, cursor: int) -> list[tuple[str, str]]:
    """The chapter's LoopState after the step under the cursor, as (field, value); `1 → 2` at a write-back."""
    if 0 <= cursor < len(trace):
        step = trace.steps[cursor]
        values = [str(step.n_messages), turn_count_cell(trace, cursor), str(step.transition_reason)]
    else:
        values = ["0", "1", "None"]
    return list(zip(["messages (count)", "turn_count", "transition_reason"], values))


# -- the complete loop's explicit state (profiles.py), beside the chapter's three fields --
TRANSITIONS_SHOWN = 8  # groups of the transition history drawn, the newest


def transition_history(reasons: list[str], shown: int = TRANSITIONS_SHOWN) -> str:
    """`tool_result → retry ×3 → tool_result`: the reasons in order, repeats grouped, the newest `shown` groups."""
    groups: list[list] = []
    for reason in reasons:
        if groups and groups[-1][0] == reason:
            groups[-1][1] += 1
        else:
            groups.append([reason, 1])
    words = [f"{r} ×{n}" if n > 1 else r for r, n in groups]
    return ("… → " if len(words) > shown else "") + " → ".join(words[-shown:]) if words else "—"


def complete_state(trace: Trace, cursor: int, estimate: Callable[[list], int]) -> dict:
    """The complete loop's state after the step under the cursor: {"tokens" (the history's estimate), "budget",
    "turn", "max_turns", "retries", "attempt", "recoveries", "recoveries_in_a_row", "compactions", "transitions"
    (a line), "tools" (the last response's tools' wall time beside their sum, or None)}."""
    from ..engine.profiles import counters

    state = counters(trace, cursor)
    step = trace.steps[cursor] if 0 <= cursor < len(trace) else None
    return {**state, "tokens": estimate(trace.messages_at(cursor)) if step is not None else 0,
            "turn": step.turn_count if step is not None else 1, "max_turns": trace.meta.get("max_turns"),
            "transitions": transition_history(state["transitions"]), "tools": _batch_at(trace, cursor)}


def _batch_at(trace: Trace, cursor: int) -> dict | None:
    """The timing of the tools of the last response, once written back (at its write_back and until the next
    call): a step shows what was known then, never a later step's figures."""
    if not 0 <= cursor < len(trace):
        return None
    own = trace.steps_of(trace.steps[cursor].thread)
    for i in reversed(own[: bisect_right(own, cursor)]):
        step = trace.steps[i]
        if step.stage == "write_back":
            return step.detail.parallel if isinstance(step.detail.parallel, dict) else None
        if step.stage not in ("compact", "summarize"):
            return None
    return None


def presenter_state(trace: Trace, cursor: int) -> list[tuple[str, str]]:
    """The one row of LoopState presenter mode shows: turn_count, transition_reason, stop_reason, messages."""
    if 0 <= cursor < len(trace):
        step = trace.steps[cursor]
        values = [turn_count_cell(trace, cursor), str(step.transition_reason), str(step.stop_reason),
                  str(step.n_messages)]
    else:
        values = ["1", "None", "None", "0"]
    return list(zip(PRESENTER_FIELDS, values))


# -- context growth: one row per model call --
def _count(value: object) -> int | None:
    """A token count as recorded, or None (a gap in the chart) for one that is no count: a hostile file's
    400-digit number would stop the chart's drawing."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else None


def growth_table(trace: Trace, cursor: int) -> pd.DataFrame:
    """Per model call up to `cursor`: the turn, the messages sent, and the call's input and output tokens.

    Indexed by turn, for a line chart of how the context grows as tool_results are written back.
    """
    rows = []
    here = trace.thread_of(cursor).id  # the growth of the cursor's thread: each loop has its own context
    for step in trace.steps[: cursor + 1]:
        if step.stage != "call_model" or step.thread != here:
            continue
        response = step.detail.response
        usage = response.get("usage") if isinstance(response, dict) else None
        usage = usage if isinstance(usage, dict) else {}  # a log may hold anything there
        rows.append({"turn": step.turn_count, "messages sent": step.n_messages,
                     "input tokens": _count(usage.get("input_tokens")),
                     "output tokens": _count(usage.get("output_tokens"))})
    return pd.DataFrame(rows, columns=["turn", "messages sent", "input tokens", "output tokens"]).set_index("turn")
