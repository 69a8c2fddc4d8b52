"""A recorded history becomes the steps a live run would have made.

An import knows only the messages (and, for some formats, the responses and
tool runs recorded beside them). `trace_from_history` walks the history by the
chapter's rules and emits the same stages, in the same order, with the same
`turn_count`, `transition_reason` and `n_messages` as `Run.execute` would:

    user message              -> user_request
    assistant message         -> call_model, append_assistant, decide
      each of its tool_use    -> run_tool (its result read from the next message)
    user message of results   -> write_back  (turn_count += 1, "tool_result")

so every view of a live run (history, pairs, LoopState, diagram) works on an
imported one unchanged. Nothing here runs a tool or calls a model.

A step's `detail` holds what runner.py puts there, less what the source did
not record (no `duration_ms` unless recorded, no `retries`), plus:
    call_model    "recorded": a response was recorded beside the history;
                  "stop_reason_inferred": the stop_reason was filled in from the content;
                  "cycle": the course trace's cycle number
    run_tool      "recorded": false when no tool_result answered the tool_use (the step
                  then carries an is_error tool_result saying so, in detail only);
                  "tool_use_result": a Claude Code log's tool-specific account of the run;
                  "tool_execution": the course trace's {name, input, output}
    user_request  "note": why a user message past the first is a step of its own
    harness       "role", "why": a message the agent's harness put into the history (`Segment.harness`):
                  no model call produced it, so it is no call_model, and the loop's state is left as it was
    every stage   "origin": where in the file the record it was made from is (common.origin_of)

A log of several threads (sub-agents) or a history rewritten on the way
(compaction) is given as `ParsedThread`s, each a list of `Segment`s: a
stretch of history between two compactions. `trace_from_threads` walks each
thread as above, puts a `compact` step (kind "imported", unless the log says
more) where one stretch gives way to the next, and walks a sub-agent's thread
where its parent's `run_tool` step for the tool_use that started it comes, so
its steps sit inside that one, as in a live run.
"""

from __future__ import annotations

from dataclasses import replace

from ..engine import details
from ..engine.blocks import tool_result
from ..text.catalogs import N_, N_n
from ..engine.compact import REWRITTEN_WHY
from ..engine.rules import blocks, message_text, tool_results, tool_uses
from ..engine.details import AppendAssistantDetail, DecideDetail, Detail, HarnessDetail, UserRequestDetail
from ..engine.details import WriteBackDetail
from ..engine.endings import GO_ON, why_ended
from ..tools import ToolOutput
from ..engine.trace import HARNESS, MAIN, Step, Thread, Trace
from ..files.transcript import MAX_COUNT
from .common import SETTINGS, ParsedThread, Segment, id_key, origin_of, quoted
from .notes import WHERE_FROM, Note, in_thread

NOT_RECORDED = "(no tool_result was recorded for this tool_use)"
# A tool_use in the history's last message: its result may still be coming (a log being written, followed) or
# never came (the session stopped there). Either way the log holds none yet: not a failed run, so no is_error.
LOG_ENDS = "(the log ends before this tool_use's tool_result)"


def trace_from_history(messages: list, meta: dict, responses: dict | None = None, tool_details: dict | None = None,
                       *, times: dict | None = None, warnings: list | None = None,
                       origins: list | None = None) -> Trace:
    """The trace a live run would have recorded for `messages`.

    `messages` becomes the trace's history as it is (not copied). Optional facts
    recorded beside it:
      responses    {index of an assistant message: the response as recorded}: its
                   `stop_reason`, `usage`, `id`, `model`, ... (`content` too, when
                   the recorded response differs from the message); "request" (the
                   settings of that call), "duration_ms" and "detail" (more facts for
                   the call_model step) are read off it.
      tool_details {tool_use id (common.id_key): extra facts for its run_tool step}, e.g. the
                   tool-specific `toolUseResult` of a Claude Code log.
      times        {message index: seconds since the epoch}.
      origins      [message index -> where in the file it came from], for each step's "origin".
    A missing stop_reason is inferred as the API would give it: "tool_use" when
    the message has tool_use blocks, else "end_turn". What cannot be derived
    (a tool_use nobody answered, ...) is appended to `warnings`, a Note each.
    """
    main = ParsedThread(MAIN, [Segment(messages, responses=responses or {}, times=times or {},
                                       origins=origins or [])])
    trace = trace_from_threads([main], meta, tool_details, warnings=warnings)
    trace.threads[MAIN].messages = messages  # the very list given, as before threads
    return trace


def trace_from_threads(threads: list[ParsedThread], meta: dict, tool_details: dict | None = None,
                       *, warnings: list | None = None) -> Trace:
    """The trace of a log of several threads, each a history that may have been rewritten (see the module doc).

    `threads[0]` is the main one. A sub-agent's thread is walked where its
    parent's run_tool step for `parent_tool_use_id` comes; one whose tool_use
    is not found is walked after the main thread, and said so.
    """
    notes = warnings if warnings is not None else []
    settings = {k: meta[k] for k in SETTINGS if meta.get(k) is not None}
    trace = Trace(meta=meta, threads={})
    taken: set[str] = set()
    for n, parsed in enumerate(threads):  # a log may give two threads one name: each keeps one of its own
        if n == 0:
            parsed.id = MAIN
        while parsed.id in taken:
            parsed.id = f"{parsed.id}#{n}"
        taken.add(parsed.id)
    for parsed in threads:
        facts = dict(parsed.facts)
        trace.add_thread(Thread(parsed.id, parent=parsed.parent if parsed.id != MAIN else None,
                                parent_tool_use_id=parsed.parent_tool_use_id if parsed.id != MAIN else None,
                                system=parsed.system if parsed.id != MAIN else meta.get("system"),
                                tools=parsed.tools if parsed.id != MAIN else meta.get("tools"),
                                label=parsed.label, messages=[], facts=facts))
    walker = _Walk(trace, {t.id: t for t in threads}, settings, tool_details or {}, notes)
    walker.thread(threads[0])
    for parsed in threads[1:]:
        if parsed.id not in walker.walked:
            if parsed.parent_tool_use_id:
                said = Note(N_("no tool_use of another thread started it (its tool_use {id} is not in {parent}); "
                               "its steps are put after the main thread's"),
                            id=str(parsed.parent_tool_use_id), parent=str(parsed.parent))
            else:
                said = Note(N_("no tool_use of another thread started it; its steps are put after the main thread's"))
            notes.append(in_thread(parsed.id, said))
            walker.thread(parsed)
    trace.first()
    return trace


class _Walk:
    """Walks threads into steps, one message at a time, keeping each thread's history as a live run does."""

    def __init__(self, trace: Trace, threads: dict, settings: dict, tool_details: dict, notes: list):
        self.trace = trace
        self.threads = threads
        self.settings = settings
        self.tool_details = tool_details
        self.notes = notes
        self.walked: set[str] = set()
        self.children: dict = {}  # (parent thread id, tool_use id) -> the sub-agent's ParsedThread
        for parsed in threads.values():
            if parsed.id != MAIN and parsed.parent is not None and parsed.parent_tool_use_id is not None:
                self.children.setdefault((parsed.parent, id_key(parsed.parent_tool_use_id)), parsed)

    def thread(self, parsed: ParsedThread) -> None:
        self.walked.add(parsed.id)
        held = self.trace.threads[parsed.id].messages  # the history so far, the thread's own list
        state = {"turn_count": 1, "transition_reason": None, "stop_reason": None, "ended": None,
                 "input_tokens": 0, "output_tokens": 0}
        for k, segment in enumerate(parsed.segments):
            if k:
                self.compact(parsed, segment, held, state, k)
            self.segment(parsed, segment, held, state, k)

    def where(self, parsed: ParsedThread, k: int, i: int, segment: Segment) -> str | Note:
        """How a warning names message i of a stretch: `messages.i`, with its thread and its line in the file."""
        origin = segment.origins[i] if i < len(segment.origins) else None
        place: str | Note = f"messages.{i}"
        if origin and origin != f"messages[{i}]":
            place = Note(WHERE_FROM, where=place, origin=origin)
        if parsed.id != MAIN:
            place = in_thread(parsed.id, place)
        return Note(N_("{where} (after compaction {k})"), where=place, k=k) if k else place

    def add(self, parsed: ParsedThread, stage: str, n: int, detail: Detail, at: float, state: dict,
            segment: Segment, held: list, rewritten=()) -> None:
        if len(held) < n:  # the history grows to what this step holds
            held.extend(segment.messages[len(held): n])
        origin = origin_of(segment.origins, _source_message(stage, n, detail))
        if origin is not None and not detail.given("origin"):  # a run_tool's result may have named its own record
            detail = replace(detail, origin=origin)
        self.trace.add(Step(
            index=0, stage=stage, turn_count=state["turn_count"], transition_reason=state["transition_reason"],
            stop_reason=state["stop_reason"], n_messages=n, input_tokens=state["input_tokens"],
            output_tokens=state["output_tokens"], ended=state["ended"], time=at, detail=detail, thread=parsed.id,
        ), rewritten)

    def compact(self, parsed: ParsedThread, segment: Segment, held: list, state: dict, k: int) -> None:
        """The compact step where one stretch of a thread gives way to the next."""
        new = segment.messages[: segment.start]
        facts = dict(segment.compaction or {})  # what the log said of it, in its order; a kind and a why if not
        facts.setdefault("kind", "imported")
        facts.setdefault("why", REWRITTEN_WHY)
        detail = details.of("compact", facts)
        if segment.summarize is not None:  # the call that wrote the summary, as recorded: its own step, first
            summarize = details.of("summarize", {k: v for k, v in segment.summarize.items() if k != "ts"})
            self.add(parsed, "summarize", len(held), replace(summarize, kind=summarize.kind or detail.kind),
                     float(segment.times.get(0) or 0.0), state, segment, held)
        recorded = detail.pre_tokens
        # the log's own count of the history compacted, when it has one; else the estimate (JSON length / 4)
        tokens_before = recorded if type(recorded) is int and 0 <= recorded < MAX_COUNT else _estimate(held)
        if len(new) == len(held):
            changed = [j for j in range(len(held)) if held[j] != new[j]]
            detail = replace(detail, replaced=[{"index": j, "message": held[j]} for j in changed])
            rewritten = changed
        else:
            detail = replace(detail, history_before=list(held))
            rewritten = range(len(new))
        detail = replace(detail, messages_before=len(held), messages_after=len(new), tokens_before=tokens_before,
                         tokens_after=_estimate(new))
        held[:] = new
        state["ended"] = None  # the history goes on from here: what ended the loop before is not this step's ending
        at = float(segment.times.get(segment.start) or segment.times.get(0) or 0.0)
        self.add(parsed, "compact", len(new), detail, at, state, segment, held, rewritten)

    def segment(self, parsed: ParsedThread, segment: Segment, held: list, state: dict, k: int) -> None:
        messages, times = segment.messages, segment.times
        write_backs: set[int] = set()  # user messages that answer the previous assistant's tool_use blocks
        # the last message the loop or the model put there (not the harness), which the rules below look back to
        said = segment.start - 1 if segment.start > 0 else None
        for i in range(segment.start, len(messages) + 1):
            at = float(times.get(i) or times.get(i - 1) or 0.0)
            for event in segment.events.get(i, ()):  # what happened before message i and put nothing into messages
                self.event(parsed, event, i, at, state, segment, held)
            if i == len(messages):
                break
            message = messages[i]
            role = message.get("role") if isinstance(message, dict) else None
            if i in segment.harness and i not in write_backs:
                # Put there by the harness: no stage of the loop made it, so the loop's state stays as it was; a
                # user message after the loop ended starts it again, as a request would.
                if role == "user" and state["ended"] is not None:
                    state.update(turn_count=1, transition_reason=None, stop_reason=None, ended=None)
                self.add(parsed, HARNESS, i + 1, HarnessDetail(role=role, why=segment.harness[i]), at, state, segment,
                         held)
                continue
            before, said = said, i
            if role == "user" and i in write_backs:
                # Stage 5: the results go back as one user message; the loop goes round again.
                state.update(turn_count=state["turn_count"] + 1, transition_reason="tool_result", ended=None)
                self.add(parsed, "write_back", i + 1, WriteBackDetail(results=len(tool_results(message))), at, state,
                         segment, held)
            elif role == "user":
                # Stage 1. A user message anywhere else is a new request (after the model's answer)
                # or one the person or the harness slipped in before the next call.
                started_by = parsed.parent_tool_use_id \
                    if before is None and parsed.parent_tool_use_id is not None and parsed.id != MAIN else None
                note = None
                after = messages[before] if before is not None else None
                if before is None or (isinstance(after, dict) and after.get("role") == "assistant") \
                        or state["ended"] is not None:
                    if before is not None:
                        note = "a new request in the same conversation: the loop starts again on the history so far"
                    state.update(turn_count=1, transition_reason=None, stop_reason=None, ended=None)
                else:
                    note = ("a user message that is not a write-back of tool_results (typed by the person, or "
                            "added by the agent's harness) before the next call")
                if i in segment.notes:
                    note = segment.notes[i]
                # a fact the log did not give is left out (replace writes what has a value)
                detail = replace(UserRequestDetail(task=message_text(message)), started_by=started_by, note=note)
                self.add(parsed, "user_request", i + 1, detail, at, state, segment, held)
            elif role == "assistant":
                self.assistant(parsed, segment, k, i, held, state, write_backs)

    def event(self, parsed: ParsedThread, event: dict, i: int, at: float, state: dict, segment: Segment,
              held: list) -> None:
        """A step that put nothing into messages: a call that failed (`retry`), or words the agent showed its user
        and sent no model (`harness`, `in_messages` false)."""
        facts = dict(event["detail"])  # what the reader found, in its order
        if event["stage"] == "retry":
            facts["request"] = facts.get("request")  # written: null when the log holds no request
            detail = details.of("retry", facts)
            if detail.gave_up:  # the agent gave up on this call: the loop ends here
                state.update(transition_reason=None, ended="retries_exhausted")
            else:
                state.update(transition_reason="retry", ended=None)
            self.add(parsed, "retry", i, detail, at, state, segment, held)
        else:
            self.add(parsed, HARNESS, i, details.of(HARNESS, facts), at, state, segment, held)

    def assistant(self, parsed: ParsedThread, segment: Segment, k: int, i: int, held: list, state: dict,
                  write_backs: set) -> None:
        messages, notes = segment.messages, self.notes
        message = messages[i]
        at = float(segment.times.get(i) or 0.0)
        recorded = segment.responses.get(i) or {}
        content = blocks(message)
        uses = tool_uses(message)
        if i == 0:
            notes.append(Note(N_("{where}: the history starts with an assistant message (no user request was "
                                 "recorded)"), where=self.where(parsed, k, 0, segment)))
        elif isinstance(messages[i - 1], dict) and messages[i - 1].get("role") == "assistant":
            notes.append(Note(N_("{where}: an assistant message follows another assistant message (the API would "
                                 "join them into one)"), where=self.where(parsed, k, i, segment)))
        # Stage 2: the call, as far as the record tells it.
        settings = dict(self.settings)
        if parsed.id != MAIN:
            settings.update({key: value for key, value in (("system", parsed.system), ("tools", parsed.tools))
                             if value is not None})
        request = settings
        request.update({key: v for key, v in (recorded.get("request") or {}).items() if key != "messages"})
        response = {key: v for key, v in recorded.items() if key not in ("request", "duration_ms", "detail")}
        response.setdefault("content", content)
        if not isinstance(response.get("stop_reason"), (str, type(None))):
            notes.append(Note(N_("{where}: the recorded stop_reason {value} is not a string; inferred from the "
                                 "content instead"), where=self.where(parsed, k, i, segment),
                              value=quoted(response["stop_reason"])))
            response["stop_reason"] = None
        inferred = response.get("stop_reason") is None
        if inferred:
            response["stop_reason"] = "tool_use" if uses else "end_turn"
        state["stop_reason"] = stop_reason = response["stop_reason"]
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        state["input_tokens"] += _tokens(usage.get("input_tokens"))
        state["output_tokens"] += _tokens(usage.get("output_tokens"))
        state["ended"] = None
        # Facts the source did not record are left out, not guessed (docs/transcript-format.md).
        timing = {"duration_ms": recorded["duration_ms"]} if recorded.get("duration_ms") is not None else {}
        self.add(parsed, "call_model", i, details.of("call_model", {
            "request": request, "response": response, **timing, "recorded": bool(recorded),
            "stop_reason_inferred": inferred, **(recorded.get("detail") or {})}), at, state, segment, held)
        # Stage 3: the assistant response itself goes into the history.
        self.add(parsed, "append_assistant", i + 1, AppendAssistantDetail(), at, state, segment, held)
        # Stage 4: anything but stop_reason "tool_use" ends the loop.
        continues = stop_reason == "tool_use" and bool(uses)
        if not continues:
            state["transition_reason"] = None
            state["ended"] = stop_reason if stop_reason != "tool_use" else "tool_use without a tool_use block"
        self.add(parsed, "decide", i + 1, DecideDetail(continues=continues,
                                                       why=GO_ON if continues else why_ended(stop_reason)),
                 at, state, segment, held)
        if uses and not continues:
            notes.append(Note(N_n("{where}: stop_reason {reason} ends the chapter's loop, yet the message has {n} "
                                  "tool_use block; it is shown as the log went on",
                                  "{where}: stop_reason {reason} ends the chapter's loop, yet the message has {n} "
                                  "tool_use blocks; they are shown as the log went on"),
                              where=self.where(parsed, k, i, segment), reason=repr(stop_reason), n=len(uses)))
        if not uses:
            return
        following = messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
        answers = {}
        if following is not None and following.get("role") == "user" and tool_results(following):
            answers = {id_key(b.get("tool_use_id")): b for b in tool_results(following)}
            write_backs.add(i + 1)
        # Stage 4, again for each tool_use: what the log says the tool gave back.
        for use in uses:
            key = id_key(use.get("id"))
            child = self.children.get((parsed.id, key))
            if child is not None and child.id not in self.walked:
                self.thread(child)  # the sub-agent's loop runs inside this run_tool step
            result = answers.get(key)
            if result is None:
                result = tool_result(use.get("id"), ToolOutput(NOT_RECORDED, is_error=True) if following is not None
                                     else ToolOutput(LOG_ENDS, is_error=False))
                said = {"where": self.where(parsed, k, i, segment), "id": str(use.get("id")),
                        "name": str(use.get("name"))}
                if following is not None:
                    notes.append(Note(N_("{where}: tool_use {id} ({name}) has no tool_result in the next message"),
                                      **said))
                else:
                    notes.append(Note(N_("{where}: tool_use {id} ({name}) has no tool_result (the history ends "
                                         "here)"), **said))
            detail = details.of("run_tool", {
                "tool_use_id": use.get("id"), "name": use.get("name"), "input": use.get("input"),
                "output": result.get("content"), "is_error": bool(result.get("is_error")), "tool_result": result,
                "given_by_user": False, "recorded": key in answers,
                **({"thread": child.id} if child is not None else {}),
                **(self.tool_details.get(key) or {})})  # the reader's own facts of the run (its record, its account)
            self.add(parsed, "run_tool", i + 1, detail,
                     float(segment.times.get(i + 1) or at) if key in answers else at, state, segment, held)


def _source_message(stage: str, n: int, detail: Detail) -> int:
    """The index of the message a step was made from: the response a call received, the tool_result a run gave
    back (the tool_use when none was recorded), else the newest message the step holds."""
    if stage == "call_model":
        return n
    if stage == "run_tool" and detail.recorded:
        return n
    return n - 1


def _estimate(messages: list) -> int:
    from ..engine.compact import estimate_tokens

    try:
        return estimate_tokens(messages)
    except (TypeError, ValueError, RecursionError):  # a hostile log's oddities: no estimate, no crash
        return 0
def cover_the_rest(trace: Trace) -> Note | None:
    """Steps for the messages a transcript holds past its last step; what was done, said in one line (None: nothing).

    A transcript cut after its history was written (by hand, or by a tool that
    kept `messages` and dropped steps) would replay without its last messages and
    say nothing. When its steps are the ones the chapter's rules give for the
    history, the missing ones are derived here; otherwise the warning says where
    the replay stops.
    """
    last = trace.last_in_thread(MAIN, len(trace.steps) - 1) if trace.steps else None
    covered = trace.steps[last].n_messages if last is not None else 0
    total = len(trace.messages)
    if covered >= total:
        return None
    which = Note(N_n("the last {n} message ({first} to {last})", "the last {n} messages ({first} to {last})"),
                 n=total - covered, first=f"messages.{covered}", last=f"messages.{total - 1}")
    if trace.has_threads or trace.has_compaction:  # the chapter's rules derive one thread whose history only grew
        return Note(N_("{which} are in the file, but no step reaches them: the replay ends before them"), which=which)
    derived = trace_from_history(trace.messages, trace.meta, warnings=[]).steps
    k = len(trace.steps)
    if k < len(derived) and [(s.stage, s.n_messages) for s in trace.steps] == [(s.stage, s.n_messages) for s in derived[:k]]:
        trace.steps.extend(derived[k:])
        return Note(N_("{which} had no step in the file: steps {first} to {last} were derived from the history by "
                       "the chapter's rules"), which=which, first=k + 1, last=len(trace.steps))
    return Note(N_("{which} are in the file, but no step reaches them and none could be derived: the replay ends "
                   "before them"), which=which)


def _tokens(value: object) -> int:
    """A recorded token count, or 0 for one that is no count (a string, a 400-digit number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else 0
