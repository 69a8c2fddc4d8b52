"""A recording of a learner's loop becomes a trace: the stages Step through records, read from the wire.

The keeper saw the calls: request k, response k (in the Messages API's form, an OpenAI chat call translated),
and the tools run after it. What the loop did between two calls is read from what the next request of the same
loop holds against the one before it, as an importer reads a recorded course trace (loop/importers/course.py):

    a request that goes on from a loop's history       -> that loop's next call
    a fresh history whose task is a pending tool_use's  -> a sub-agent's thread, inside that tool_use's run_tool
    a request with one message, no tools: a summary     -> `summarize` (the compaction's model call)
    the same loop's history, rewritten                  -> `compact` (earlier messages changed: micro; shorter: a
                                                           summary stands for it)

and in each loop, call by call:

    request k's messages, first call        -> user_request
    the call                                 -> call_model (or `refused`, when the API refused it: the run ends)
    request k+1 holds response k next        -> append_assistant (else the step is there, messages unchanged)
    request k+1 was sent at all              -> decide: the loop went on (else: it ended, and why)
    each tool_use of response k              -> run_tool, with that id, its result the one request k+1 carries,
                                                whoever ran it: the tool box (run_tool, run_bash) or the program's
                                                own code (a command it reported, with its line, as its word)
    request k+1's messages after that        -> write_back (turn_count += 1, "tool_result")

A `role: "system"` turn among the messages (Claude Code's environment block) is the harness's: a `harness` step
where it enters the history, never the user's request nor a write-back. A call beside the loop (another model, or
no tools where the loop offers them: a title, a summary by a small model) is a thread of its own, started by no
tool_use, and leaves the loop's stages as they are. Two messages are the same when the model reads the same: a text
string is its one text block, and a `cache_control` mark (which Claude Code moves to the newest message each call)
is no change.

A tool run the model never asked for is no run_tool step: it is listed beside the write-back (`also_ran`).
Each call_model step keeps the body sent (less `messages`, rebuilt from the history), the response, the
learner's `line` that sent it and the learner's own `learner` state then ({turn_count, transition_reason}),
beside the chapter's, which the trace counts itself. The transcript's meta keeps the learner's source and
the scenario (`meta["yours"]`), so a run saves, replays and links like any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from ..engine.blocks import tool_result
from ..engine.compact import RESENT_WHY, SUMMARY_PROMPT, estimate_tokens
from ..engine.details import Detail, RunToolDetail, UserRequestDetail
from ..engine.endings import GO_ON, why_ended
from ..engine.layer_mistake import NOT_RUN, REFUSED, WHY_GO_ON, WHY_NO_LOOP, WHY_REFUSED
from ..engine.mistakes import shape
from ..engine.rules import is_system, message_text, tool_results, tool_uses
from ..engine.scenarios import SCENARIOS, first_text
from ..engine.trace import MAIN, Step, Thread, Trace
from ..importers.common import SETTINGS
from ..text.catalogs import N_, Note
from ..tools import ToolOutput
from . import recording as rec
from .named import Named, named
from .recording import Exchange, Recording, ToolRun

# Said beside a run, in any language (not a broken rule)
ASKS_MORE = N_("The {scenario} scenario's answer is cut at {cut} tokens, but your file asks for {asked} "
               "(max_tokens): the answer fits, so nothing was cut. Ask for fewer to see the loop end on max_tokens.")
NOT_SEEN = "(not seen: the next request of this loop never carried it)"
SYSTEM_TURN_WHY = N_("the harness put this system turn (role system) into messages: its own words, not the "
                     "person's; the pairing rules pass it over")
SIDE_ANSWER = N_("a call beside the loop: the program takes its answer as it came; no loop goes on from it")
GAVE_UP = N_("the call failed, and the program sent it no more")
RETRIED = N_("the call failed; the program sent the same request again")
SIDE_CALL = N_("a call beside the loop (another model, or no tools where the loop offers them): not one of its "
               "turns")


@dataclass
class Yours:
    """A learner's run, read: the trace Step through draws, the first broken rule (None: none), the recording, and
    what is worth saying beside it (Notes)."""

    trace: Trace
    named: Named | None
    recording: Recording
    notes: list = field(default_factory=list)

    @property
    def kept_every_rule(self) -> bool:
        """The loop ended by itself, every rule kept (the CLI's exit 0)."""
        return self.named is None and self.recording.outcome == rec.RETURNED


def read(recording: Recording, recorded: dict | None = None) -> Yours:
    """The trace of `recording`, and the first rule it broke. `recorded`: a command recorded at the wire
    (`python -m loop record`), kept as the trace's meta["recorded"] in place of a learner's source."""
    broke = named(recording)  # once a read: the refused step names it too
    return Yours(_Reading(recording, broke, recorded).trace, broke, recording, _notes(recording))


def _notes(recording: Recording) -> list:
    """What to say beside the run: a max_tokens scenario its file asked too much of to be cut."""
    scenario = SCENARIOS.get(recording.scenario)
    if scenario is None or scenario.max_tokens >= 8000 or not recording.exchanges:
        return []
    asked = recording.exchanges[0].as_messages()[0].get("max_tokens")
    if isinstance(asked, int) and asked > scenario.max_tokens and not any(
            (e.as_messages()[1] or {}).get("stop_reason") == "max_tokens" for e in recording.exchanges):
        return [Note(ASKS_MORE, scenario=scenario.name, cut=scenario.max_tokens, asked=asked)]
    return []


def _json(value: object) -> object:
    """A value of the learner's state as JSON: as it is when it is JSON, else its repr (it is only shown)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


@dataclass
class _Call:
    """One exchange, as the Messages API's request and response."""

    exchange: Exchange
    request: dict
    response: dict | None
    sent: list
    exchange_index: int = 0

    @property
    def error(self):
        return self.exchange.error


@dataclass
class _Loop:
    """A loop seen on the wire: the main one or a sub-agent's, its calls in order, and what came before each."""

    id: str
    calls: list = field(default_factory=list)  # of _Call
    parent: str | None = None
    parent_tool_use_id: object = None
    summaries: dict = field(default_factory=dict)  # call index in `calls` -> the summary call made just before it
    children: dict = field(default_factory=dict)  # tool_use id -> child _Loop

    @property
    def sent(self) -> list:
        return self.calls[-1].sent if self.calls else []


def _view(exchange: Exchange, k: int = 0) -> _Call:
    request, response = exchange.as_messages()
    request = request if isinstance(request, dict) else {}
    messages = request.get("messages")
    return _Call(exchange, request, response, list(messages) if isinstance(messages, list) else [], k)


def as_read(message: object) -> object:
    """A message as the model reads it: a text string as its one text block, no `cache_control` mark."""
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        content = [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b for b in content]
    return {**message, "content": content}


def same(a: object, b: object) -> bool:
    """Do two messages say the same to the model (see `as_read`)?"""
    return a == b or as_read(a) == as_read(b)


def _goes_on(loop: _Loop, sent: list) -> bool:
    """Does a request keep this loop's history as it was, and add to it?"""
    before = loop.sent
    return bool(loop.calls) and len(sent) > len(before) and all(same(a, b) for a, b in zip(sent, before))


def _retries(loop: _Loop, sent: list) -> bool:
    """Does a request send again the history of the loop's last call, which failed (a retry)?"""
    last = loop.calls[-1] if loop.calls else None
    return last is not None and last.error is not None and len(sent) == len(last.sent) and all(
        same(a, b) for a, b in zip(sent, last.sent))


def _beside(call: _Call, main: _Loop) -> bool:
    """A call beside the loop: another model than the loop's, or no tools where the loop offers them."""
    first = main.calls[0].request
    return call.request.get("model") != first.get("model") or (bool(first.get("tools")) and
                                                              not call.request.get("tools"))


def _pending_prompt(loop: _Loop, task: str) -> object:
    """The id of the tool_use of the loop's last answer whose input holds `task` (a sub-agent's prompt), or None."""
    last = loop.calls[-1].response if loop.calls else None
    for use in tool_uses(last or {}):
        values = use.get("input").values() if isinstance(use.get("input"), dict) else ()
        if task and any(isinstance(v, str) and v.strip() == task.strip() for v in values) and \
                use.get("id") not in loop.children:
            return use.get("id")
    return None


def _is_summary_call(call: _Call) -> bool:
    return len(call.sent) == 1 and not call.request.get("tools") and first_text(call.sent).startswith(
        SUMMARY_PROMPT.split(".")[0])


def place(calls: list[_Call]) -> tuple[_Loop, list[_Call]]:
    """The loops the calls belong to: the main one (its children inside it), and the calls beside it. The main loop
    starts at the first call that offers tools (the first call, when none does)."""
    main = _Loop(MAIN)
    stack = [main]
    summary = None
    side: list[_Call] = []
    first = next((call for call in calls if call.request.get("tools")), calls[0] if calls else None)
    for call in calls:
        if not main.calls:
            (main.calls if call is first else side).append(call)
            continue
        owner = next((loop for loop in reversed(stack) if _goes_on(loop, call.sent) or _retries(loop, call.sent)),
                     None)
        if owner is not None:
            del stack[stack.index(owner) + 1:]
        else:
            task = first_text(call.sent)
            for loop in reversed(stack):
                started = _pending_prompt(loop, task)
                if started is not None:
                    del stack[stack.index(loop) + 1:]
                    owner = _Loop(f"task-{started}", parent=loop.id, parent_tool_use_id=started)
                    loop.children[started] = owner
                    stack.append(owner)
                    break
        if owner is None and _is_summary_call(call):
            summary = call  # the compaction's own call: drawn with the rewrite that follows it
            continue
        if owner is None and _beside(call, main):
            side.append(call)  # a title, a summary by a small model: a thread of its own, not the loop's turn
            continue
        if owner is None:  # the same loop, its history rewritten (a compaction)
            owner = next((loop for loop in reversed(stack) if loop.sent[:1] == call.sent[:1]), stack[-1])
            del stack[stack.index(owner) + 1:]
        if summary is not None:
            owner.summaries[len(owner.calls)] = summary
            summary = None
        owner.calls.append(call)
    return main, side


class _Reading:
    def __init__(self, recording: Recording, broke: Named | None, recorded: dict | None = None):
        self.recording, self.broke, self.recorded = recording, broke, recorded is not None
        calls = [_view(e, k) for k, e in enumerate(recording.exchanges)]
        main, self.side = place(calls)
        first = main.calls[0].request if main.calls else {}
        scenario = SCENARIOS.get(recording.scenario)
        task = scenario.task_in(recording.lang) if scenario else ""
        if recorded is not None and main.calls:  # the person's words, not the harness's around them
            task = first_text(main.calls[0].sent) or task
        meta = {key: first[key] for key in SETTINGS if key in first}
        meta.update(task=task, lang=recording.lang)
        if recorded is not None:
            meta["recorded"] = recorded
            if recording.side_calls:
                meta["side_calls"] = list(recording.side_calls)
        else:
            yours = {"source": recording.source, "scenario": recording.scenario}
            if recording.files:  # a project: the file run, and its modules it imported, drawn beside a saved run too
                yours.update(file=recording.file, files=dict(recording.files))
            meta["yours"] = yours
        if main.calls and main.calls[0].exchange.dialect != "anthropic":
            meta["dialect"] = main.calls[0].exchange.dialect
        self.trace = Trace(meta=meta, messages=[])
        self.ended = False  # a refused call ends the whole run
        if not main.calls:
            self.held = self.trace.threads[MAIN].messages
            self.state = self._fresh()
            self.thread = MAIN
            self.held.append({"role": "user", "content": task})
            self.add("user_request", {"task": task})
        else:
            self.walk(main, last=True)
        self.beside(None)
        self.trace.first()

    @staticmethod
    def _fresh() -> dict:
        return {"turn_count": 1, "transition_reason": None, "stop_reason": None, "ended": None,
                "input_tokens": 0, "output_tokens": 0}

    def walk(self, loop: _Loop, last: bool = False) -> None:
        """Walk one loop's calls into steps (a sub-agent's, where its parent's run_tool for it comes)."""
        outer = getattr(self, "thread", None), getattr(self, "held", None), getattr(self, "state", None), \
            getattr(self, "loop", None)
        if loop.id != MAIN:
            first = loop.calls[0]
            self.trace.add_thread(Thread(loop.id, parent=loop.parent, parent_tool_use_id=loop.parent_tool_use_id,
                                         system=first.request.get("system"), tools=first.request.get("tools"),
                                         label=" ".join(first_text(first.sent).split())[:60], messages=[]))
        self.thread, self.loop = loop.id, loop
        self.held = self.trace.threads[loop.id].messages
        self.state = self._fresh()
        sent = loop.calls[0].sent or [{"role": "user", "content": self.trace.meta.get("task", "")}]
        person = [m for m in sent if not is_system(m)]
        detail = UserRequestDetail(task=first_text(sent) or (message_text(person[0]) if person else ""))
        if loop.parent_tool_use_id is not None:
            detail = replace(detail, started_by=loop.parent_tool_use_id)
        self.enter(sent, "user_request", detail)  # Stage 1: the request went into messages before the first call
        for k, call in enumerate(loop.calls):
            if k and loop.calls[k - 1].error is None and loop.calls[k - 1].response is not None:
                self.between(loop.calls[k - 1], call, loop.summaries.get(k))
            if self.ended:
                break
            if loop.id == MAIN:
                self.beside(call)
            if call.error is not None or call.response is None:
                if k + 1 < len(loop.calls):  # the same history sent again: the call failed and was retried
                    self.add("retry", {"error": call.error or {}, "gave_up": False, "stage": "call_model",
                                       "request": self._settings(call), "why": RETRIED})
                    continue
                self.refused(call)
                break
            self.call_model(call)
        else:
            if last:
                self.after_last(loop.calls[-1])
            else:  # a sub-agent's loop: it ended by itself when its parent went on
                self.finish(loop.calls[-1])
        if outer[0] is not None:
            self.thread, self.held, self.state, self.loop = outer

    def enter(self, messages: list, stage: str, detail: Detail | dict) -> None:
        """`messages` into the history, in order, as steps: the first run of the loop's own messages as `stage`, a
        system turn as a `harness` step of its own (a later run of the loop's messages too: the harness's)."""
        runs: list[list] = []
        for message in messages:
            if is_system(message) or not runs or is_system(runs[-1][-1]):
                runs.append([message])
            else:
                runs[-1].append(message)
        done = False
        for run in runs:
            self.held.extend(run)
            if is_system(run[0]):
                self.add("harness", {"role": "system", "why": SYSTEM_TURN_WHY})
            elif not done:
                self.add(stage, detail)
                done = True
            else:
                self.add("harness", {"role": str(run[-1].get("role")) if isinstance(run[-1], dict) else "user",
                                     "why": SYSTEM_TURN_WHY})
        if not done:
            self.add(stage, detail)

    def beside(self, before: _Call | None) -> None:
        """The calls beside the loop made before `before` (every one left, when None), each a thread of its own."""
        while self.side and (before is None or self.side[0].exchange_index < before.exchange_index):
            call = self.side.pop(0)
            outer = self.thread, self.held, self.state, self.loop
            loop = _Loop(f"side-{call.exchange_index + 1}", calls=[call], parent=MAIN)
            model = call.request.get("model")
            self.trace.add_thread(Thread(loop.id, parent=MAIN, parent_tool_use_id=None,
                                         system=call.request.get("system"), tools=call.request.get("tools"),
                                         label=" ".join(f"{model} · {first_text(call.sent)}".split())[:60],
                                         messages=[], facts={"side_call": True, "model": model}))
            self.thread, self.loop, self.state = loop.id, loop, self._fresh()
            self.held = self.trace.threads[loop.id].messages
            sent = call.sent or [{"role": "user", "content": ""}]
            self.enter(sent, "user_request", {"task": first_text(sent), "note": SIDE_CALL})
            if call.error is not None or call.response is None:
                error = call.error or {}
                self.state.update(ended="error", transition_reason=None)
                self.add("refused", {"error": error, "stage": "call_model", "request": self._settings(call),
                                     "why": WHY_REFUSED.format(status=error.get("status"), type=error.get("type"))})
            else:
                self.call_model(call)
                self.held.append({"role": "assistant", "content": call.response.get("content")})
                self.add("append_assistant", {})
                self.state.update(ended=call.response.get("stop_reason"), transition_reason=None)
                self.add("decide", {"continues": False, "why": SIDE_ANSWER})
            self.thread, self.held, self.state, self.loop = outer

    def add(self, stage: str, detail: Detail | dict, rewritten=()) -> Step:  # a dict: the detail's JSON object
        s = self.state
        return self.trace.add(Step(
            index=0, stage=stage, turn_count=s["turn_count"], transition_reason=s["transition_reason"],
            stop_reason=s["stop_reason"], n_messages=len(self.held), input_tokens=s["input_tokens"],
            output_tokens=s["output_tokens"], ended=s["ended"], time=0.0, detail=detail, thread=self.thread),
            rewritten)

    def _file(self, file: object) -> dict:
        """{"file": …} for a line in another of the project's files than the one run; {} for the one run."""
        return {"file": file[:300]} if isinstance(file, str) and file != self.recording.file and \
            file in self.recording.files else {}

    @staticmethod
    def _learner(call: _Call) -> dict:
        state = call.exchange.state
        return {"turn_count": _json(state.turn_count), "transition_reason": _json(state.transition_reason)}

    @staticmethod
    def _settings(call: _Call) -> dict:
        settings = {k: v for k, v in call.request.items() if k != "messages"}
        if call.exchange.dialect != "anthropic":
            settings["dialect"] = call.exchange.dialect
        return settings

    # -- stage 2 --
    def call_model(self, call: _Call) -> None:
        response = call.response
        s = self.state
        s["stop_reason"] = response.get("stop_reason")
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        for side in ("input", "output"):
            count = usage.get(f"{side}_tokens")
            s[f"{side}_tokens"] += count if type(count) is int else 0
        self.add("call_model", {"request": self._settings(call), "response": response, "line": call.exchange.line,
                                **self._file(call.exchange.file), "learner": self._learner(call)})

    def refused(self, call: _Call) -> None:
        """The call the API refused: the broken loop ends here, as a broken branch of Step through ends."""
        error = call.error or {}
        s = self.state
        if self.recorded and error.get("status") != 400:  # a recorded command's call failed (a key, a limit)
            s.update(ended="retries_exhausted", transition_reason=None)
            self.add("retry", {"error": error, "gave_up": True, "stage": "call_model", "request": self._settings(call),
                               "why": GAVE_UP})
            self.ended = True
            return
        s.update(ended=REFUSED, transition_reason=None)
        mistake = self.broke
        self.add("refused", {"error": error, "stage": "call_model", "request": self._settings(call),
                             "why": WHY_REFUSED.format(status=error.get("status"), type=error.get("type")),
                             **({"mistake": mistake.name} if mistake else {}), "line": call.exchange.line,
                             **self._file(call.exchange.file), "learner": self._learner(call)})
        self.ended = True

    # -- stages 3, decide, 4 and 5, read from the next request --
    def between(self, before: _Call, call: _Call, summary: _Call | None) -> None:
        response, sent = before.response, call.sent
        n = len(self.held)
        changed = [j for j in range(min(n, len(sent))) if not same(sent[j], self.held[j])]
        grew = len(sent) > n and (not changed or (sent[:1] == self.held[:1] and len(changed) < n))
        answer = sent[n] if grew and n < len(sent) and isinstance(sent[n], dict) else None
        kept = answer is not None and answer.get("role") == "assistant" and shape(answer) == shape(response)
        if kept or not grew:  # a rewritten history holds a summary of the answer: it was appended before
            self.held.append({"role": "assistant", "content": response.get("content")})
            self.add("append_assistant", {})
        else:
            self.add("append_assistant", {"appended": False})  # the response was not kept in messages
        stop_reason = response.get("stop_reason")
        why = GO_ON if stop_reason == "tool_use" else WHY_GO_ON if stop_reason == "max_tokens" else \
            why_ended(stop_reason)
        self.add("decide", {"continues": True, "why": why})
        written = sent[len(self.held):] if grew else []
        results = [b for m in written if isinstance(m, dict) for b in tool_results(m)]
        also = self.run_tools(before, results)
        s = self.state
        s.update(turn_count=s["turn_count"] + 1, transition_reason="tool_result")
        why = RESENT_WHY.format(name=f"call {call.exchange_index + 1}", sent=len(sent), held=len(self.held))
        if grew:
            self.enter(written, "write_back", ({"results": len(results)} if written else
                                               {"results": 0, "printed": len(before.exchange.tool_runs)}) | also)
            if changed:  # the loop rewrote earlier messages in place (s06's micro-compact) before sending
                self.compact({"kind": "micro", "replaced": [{"index": j, "message": self.held[j]} for j in changed],
                              "why": why}, changed, sent)
            return
        # The loop rewrote its history: written back (unseen), then summarised or cut before this call.
        self.add("write_back", {"results": len(tool_uses(response)), "rewritten": True} | also)
        if summary is not None and summary.response is not None:
            self.summarize(summary)
        self.compact({"kind": "auto" if summary is not None else "imported", "history_before": list(self.held),
                      "why": why, **({"summary": _text(summary.response)} if summary is not None and summary.response
                                     else {})}, range(len(sent)), sent)

    def summarize(self, call: _Call) -> None:
        """The compaction's model call, as the loop made it (the course's s06: one message, no tools)."""
        self.add("summarize", {"kind": "auto", "request": self._settings(call) | {"messages": call.sent},
                               "response": call.response, "summary": _text(call.response)})

    def compact(self, rewrote: dict, rewritten, sent: list) -> None:
        before = list(self.held)
        self.held[:] = sent
        self.state["ended"] = None
        self.add("compact", {**rewrote, "messages_before": len(before), "messages_after": len(sent),
                             "tokens_before": _estimate(before), "tokens_after": _estimate(sent)}, rewritten=rewritten)

    def run_tools(self, call: _Call, written: list[dict], ran_only: bool = False) -> dict:
        """A run_tool step for each tool_use of `call`'s answer, with that id and the result written back; whoever
        ran it (the tool box, or the program's own code by its report). With `ran_only`, only those seen to run."""
        by_id = {b.get("tool_use_id"): b for b in written if isinstance(b.get("tool_use_id"), str)}
        runs = list(call.exchange.tool_runs)
        uses = tool_uses(call.response or {})
        matched = _match(uses, runs)
        for use, run in zip(uses, matched):
            use_id = use.get("id")
            child = self.loop.children.get(use_id) if self.loop is not None else None
            result = by_id.get(use_id)
            if result is None and run is None and child is None and ran_only:
                continue
            if child is not None:
                self.walk(child)
            if result is None:
                output = run.output if run is not None and run.by == rec.BY_TOOL_BOX else NOT_SEEN
                result = tool_result(use_id, ToolOutput(output, is_error=bool(run and run.is_error)))
            detail = RunToolDetail(tool_use_id=use_id, name=use.get("name"), input=use.get("input"),
                                   output=result.get("content"), is_error=bool(result.get("is_error")),
                                   tool_result=result, given_by_user=False, line=run.line if run is not None else None,
                                   **self._file(run.file if run is not None else None))
            if child is not None:
                detail = replace(detail, thread=child.id)
            if run is not None:  # who ran it; the program's own word when it ran the command itself
                reported = {"command": run.input.get("command"), "line": run.line, "file": run.file} \
                    if run.by == rec.BY_PROGRAM else None
                detail = replace(detail, ran_by=run.by, reported=reported)
            self.add("run_tool", detail)
        rest = [r for r in runs if not any(r is m for m in matched)]
        # run, but asked for by no tool_use: the program's doing, listed beside the write-back, never a run_tool
        return {"also_ran": [{"name": r.name, "input": r.input, "line": r.line, "ran_by": r.by} for r in rest]} \
            if rest else {}

    def finish(self, call: _Call) -> None:
        """A sub-agent's last call: its answer kept, and its loop ended by itself."""
        response = call.response
        self.held.append({"role": "assistant", "content": response.get("content")})
        self.add("append_assistant", {})
        stop_reason = response.get("stop_reason")
        self.state.update(ended=stop_reason, transition_reason=None)
        self.add("decide", {"continues": False, "why": why_ended(stop_reason)})

    def after_last(self, call: _Call) -> None:
        """After the last call: the answer kept, and the loop ended by itself, or stopped from outside."""
        response = call.response
        s = self.state
        outcome = self.recording.outcome
        if outcome != rec.RETURNED:  # stopped while it went on: what it ran is shown, then where it stopped
            self.run_tools(call, [], ran_only=True)
            self.trace.steps[-1].ended = outcome
            return
        self.held.append({"role": "assistant", "content": response.get("content")})
        self.add("append_assistant", {})
        stop_reason = response.get("stop_reason")
        if stop_reason == "tool_use" and tool_uses(response):
            if not call.exchange.tool_runs:  # statement 1: nothing ran the tool_use
                s.update(ended=NOT_RUN, transition_reason=None)
                self.add("decide", {"continues": False, "why": WHY_NO_LOOP})
                return
            self.add("decide", {"continues": True, "why": GO_ON})
            self.run_tools(call, [], ran_only=True)
            self.trace.steps[-1].ended = NOT_RUN  # ran, and returned: the results never went back
            return
        s.update(ended=stop_reason, transition_reason=None)
        self.add("decide", {"continues": False, "why": why_ended(stop_reason)})


def _match(uses: list[dict], runs: list[ToolRun]) -> list[ToolRun | None]:
    """The run of each tool_use: the tool box's by its id, then any run whose input is the tool_use's (a command
    the program ran itself is matched by its text), then the unclaimed ones in order."""
    found: list[ToolRun | None] = [None] * len(uses)
    free = list(runs)

    def take(i: int, run: ToolRun) -> None:
        found[i] = run
        free.remove(run)

    for i, use in enumerate(uses):
        run = next((r for r in free if r.tool_use_id is not None and r.tool_use_id == use.get("id")), None)
        if run is not None:
            take(i, run)
    for i, use in enumerate(uses):
        if found[i] is None:
            values = list(use.get("input").values()) if isinstance(use.get("input"), dict) else []
            run = next((r for r in free if r.tool_use_id is None and (
                r.input == use.get("input") or (r.by == rec.BY_PROGRAM and r.input.get("command") in values))), None)
            if run is not None:
                take(i, run)
    for i in range(len(uses)):
        if found[i] is None:
            run = next((r for r in free if r.tool_use_id is None), None)
            if run is not None:
                take(i, run)
    return found


def _text(response: dict | None) -> str:
    blocks = (response or {}).get("content")
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text") \
        if isinstance(blocks, list) else ""


def _estimate(messages: list) -> int:
    try:
        return estimate_tokens(messages)
    except (TypeError, ValueError, RecursionError):
        return 0


def _last_at(trace: Trace, index: int, key: str, kind: type):
    """The newest value of detail field `key` of type `kind` among steps 0..`index` (of the stages that have it),
    or None."""
    for i in range(min(index, len(trace.steps) - 1), -1, -1):
        value = getattr(trace.steps[i].detail, key, None)
        if isinstance(value, kind):
            return value
    return None


def file_at(trace: Trace, index: int) -> str | None:
    """The learner's file of `line_at(trace, index)`: None for the file run, else one of their project's."""
    for i in range(min(index, len(trace.steps) - 1), -1, -1):
        detail = trace.steps[i].detail
        if isinstance(getattr(detail, "line", None), int):  # a stage with a line has its file beside it
            return detail.file if isinstance(detail.file, str) else None
    return None


def line_at(trace: Trace, index: int) -> int | None:
    """The learner's line to light at step `index`: the step's own (a call, a tool run), else the last one before it.

    The channel sees the calls and the tool box the tool runs; an append or a write-back happens between them
    in the learner's code, after the line lit last."""
    return _last_at(trace, index, "line", int)


def learner_at(trace: Trace, index: int) -> dict | None:
    """The learner's own state ({turn_count, transition_reason}) as their code left it at the call made last by
    step `index`, or None before any call."""
    return _last_at(trace, index, "learner", dict)


def call_step(trace: Trace, call: int) -> int | None:
    """The index of the step of model call `call` (0-based): its call_model step, or the refused one; the last
    call's when there are fewer; None when the run made no call."""
    calls = [i for i, step in enumerate(trace.steps) if step.stage in ("call_model", "refused")]
    return calls[min(call, len(calls) - 1)] if calls else None

