"""What the pages show at step i, as plain data: tables, colours, windows, lines.

No Streamlit here: the pages draw these, the tests read them. Each function
takes (trace, cursor) and looks at nothing else, as a Python Tutor view does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

import pandas as pd

from . import rules
from .catalogs import N_
from .narrate import short, what
from .trace import STAGE_TITLES, Trace
from .transcript import MAX_COUNT

# Red is kept for is_error, so an id's colour never reads as a failure.
ID_COLOURS = ("blue", "green", "orange", "violet", "yellow", "gray")

COLLECTED = N_("(collected, not yet written back)")  # a result column's start, before the result is in messages
PAIR_COLUMNS = ["turn", "id", "colour", "tool", "input", "result", "is_error", "status"]
STEP_COLUMNS = ["now", "step", "stage", "turn_count", "transition_reason", "stop_reason", "messages",
                "input tokens", "output tokens"]


def id_colour(tool_use_id: object) -> str:
    """The colour of an id, the same on every page and in every replay: a hash of the id."""
    digest = hashlib.sha256(str(tool_use_id).encode()).digest()
    return ID_COLOURS[digest[0] % len(ID_COLOURS)]


def result_text(content: object) -> str:
    """A tool_result's content as text: a string as it is, a list of blocks by their text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", json.dumps(b)) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


# -- the line over the views --
def status_line(trace: Trace, cursor: int, translate: Callable[[str], str] = str) -> str:
    """`Step k of n · turn t · stage` for the step under the cursor; `translate` puts each English phrase into
    the page's language (the diagram's labels are translated the same way)."""
    if not 0 <= cursor < len(trace):
        return translate(N_("Step 0 of {n} · not started")).format(n=len(trace))
    step = trace.steps[cursor]
    return translate(N_("Step {k} of {n} · turn {turn} · {stage}")).format(
        k=cursor + 1, n=len(trace), turn=step.turn_count, stage=translate(STAGE_TITLES.get(step.stage, step.stage)))


def what_happened(trace: Trace, cursor: int, lang: str = "en") -> str:
    """What the step under the cursor did, in one line of `lang` (the narration without its `[k] turn t · stage` head)."""
    if not 0 <= cursor < len(trace):
        return ""
    return what(trace, cursor, lang)


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
    """At a call_model step: the response received but not yet appended to messages."""
    if 0 <= cursor < len(trace) and trace.steps[cursor].stage == "call_model":
        return trace.response_at(cursor)
    return None


def last_call_at(trace: Trace, cursor: int) -> int | None:
    """The index of the last call_model step at or before `cursor`."""
    for i in range(min(cursor, len(trace) - 1), -1, -1):
        if trace.steps[i].stage == "call_model":
            return i
    return None


# -- Pairs: one row per tool_use --
def pairs_table(trace: Trace, cursor: int, *, recent: int | None = None, problems: int = 200) -> pd.DataFrame:
    """`pairs_rows` as a table (for the CSV export); `table.attrs["total"]` is the number of rows in all."""
    rows, total = pairs_rows(trace, cursor, recent=recent, problems=problems)
    table = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    table.attrs["total"] = total
    return table


def pairs_rows(trace: Trace, cursor: int, *, recent: int | None = None, problems: int = 200) -> tuple[list[dict], int]:
    """The tool_use/tool_result pairs of the history at `cursor`, with results collected but not written back.

    One dict a pair, keyed by PAIR_COLUMNS, and the number of pairs in all. With
    `recent`, a long history keeps only its last `recent` paired rows and its
    first `problems` waiting or orphan rows (only those are formatted, so it
    stays cheap).
    """
    messages = trace.messages_at(cursor)
    # keyed like Pair.tool_use_id (a string): a broken file may hold an object or a list where an id belongs
    pending = {str(b.get("tool_use_id")): b for b in trace.results_at(cursor)} if 0 <= cursor < len(trace) else {}
    found = rules.pairs(messages)
    chosen = range(len(found))
    if recent is not None and len(found) > recent + problems:
        paired = [i for i, p in enumerate(found) if p.status == "paired"]
        others = [i for i, p in enumerate(found) if p.status != "paired"]
        chosen = sorted(others[:problems] + paired[-recent:] if recent else others[:problems])
    turn_of: list[int] = []  # the turn a message belongs to: one assistant message a turn
    turn = 0
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            turn += 1
        turn_of.append(max(turn, 1))
    rows = []
    for pair in (found[i] for i in chosen):
        result, is_error = pair.result, pair.is_error
        shown = short(result_text(result)) if pair.result_index is not None or pair.status == "orphan" else ""
        if pair.status == "waiting" and pair.tool_use_id in pending:
            collected = pending[pair.tool_use_id]
            is_error = bool(collected.get("is_error"))
            shown = COLLECTED + " " + short(result_text(collected.get("content")), 60)
        where = pair.use_index if pair.use_index is not None else pair.result_index
        rows.append({
            "turn": turn_of[where] if where is not None and where < len(turn_of) else None,
            "colour": id_colour(pair.tool_use_id),
            "id": pair.tool_use_id,
            "tool": pair.name or "",
            "input": short(pair.input) if pair.input is not None else "",
            "result": shown,
            "is_error": is_error,
            "status": pair.status,
        })
    return rows, len(found)


# -- LoopState: one row per step --
def step_row(trace: Trace, i: int) -> list:
    """Step i's row of the LoopState table (STEP_COLUMNS), "now" left empty: the LoopState after it."""
    step = trace.steps[i]
    return ["", i + 1, step.stage, step.turn_count, step.transition_reason, step.stop_reason, step.n_messages,
            step.input_tokens, step.output_tokens]


def steps_window(trace: Trace, cursor: int, around: int | None = None) -> tuple[int, int]:
    """The rows [start, end) of the LoopState table to draw: all, or `around` each side of the cursor."""
    start, end = 0, len(trace)
    if around is not None and end > 2 * around + 1:
        start = min(max(0, cursor - around), end - (2 * around + 1))
        end = start + 2 * around + 1
    return start, end


def steps_table(trace: Trace) -> pd.DataFrame:
    """One row per step: the LoopState after it (for the CSV export)."""
    return pd.DataFrame([step_row(trace, i) for i in range(len(trace))], columns=STEP_COLUMNS)


def state_rows(trace: Trace, cursor: int) -> list[tuple[str, str]]:
    """The chapter's LoopState after the step under the cursor, as (field, value)."""
    if 0 <= cursor < len(trace):
        step = trace.steps[cursor]
        values = [str(step.n_messages), str(step.turn_count), str(step.transition_reason)]
    else:
        values = ["0", "1", "None"]
    return list(zip(["messages (count)", "turn_count", "transition_reason"], values))


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
    for step in trace.steps[: cursor + 1]:
        if step.stage != "call_model":
            continue
        usage = (step.detail.get("response") or {}).get("usage") or {}
        rows.append({"turn": step.turn_count, "messages sent": step.n_messages,
                     "input tokens": _count(usage.get("input_tokens")),
                     "output tokens": _count(usage.get("output_tokens"))})
    return pd.DataFrame(rows, columns=["turn", "messages sent", "input tokens", "output tokens"]).set_index("turn")
