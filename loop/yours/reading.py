"""A recording of a learner's loop becomes a trace: the stages Step through records, read from the requests.

The channel saw only the calls: request k, response k, and the tools run after it. What the loop did between
two calls is read from what the next request holds against the one before it, as an importer reads a history
(loop/importers/derive.py, by the same rules):

    request k's messages, first call        -> user_request
    the call                                 -> call_model (or `refused`, when the API refused it: the run ends)
    request k+1 holds response k next        -> append_assistant (else the step is there, messages unchanged)
    request k+1 was sent at all              -> decide: the loop went on (else: it ended, and why)
    each tool the tool box ran after call k  -> run_tool, its tool_result the one request k+1 carries
    request k+1's messages after that        -> write_back (turn_count += 1, "tool_result")

Each call_model step keeps the body sent (less `messages`, rebuilt from the history), the response, the
learner's `line` that sent it and the learner's own `learner` state then ({turn_count, transition_reason}),
beside the chapter's, which the trace counts itself. The transcript's meta keeps the learner's source and
the scenario (`meta["yours"]`), so a run saves, replays and links like any other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..engine.blocks import tool_result
from ..engine.endings import GO_ON, why_ended
from ..engine.layer_mistake import NOT_RUN, REFUSED, WHY_GO_ON, WHY_NO_LOOP, WHY_REFUSED
from ..engine.rules import tool_results, tool_uses
from ..engine.scenarios import SCENARIOS
from ..engine.trace import MAIN, Step, Trace
from ..importers.common import SETTINGS
from ..importers.derive import message_text
from ..tools import ToolOutput
from . import recording as rec
from .named import Named, _shape, named
from .recording import Exchange, Recording


@dataclass
class Yours:
    """A learner's run, read: the trace Step through draws, the first broken rule (None: none), the recording."""

    trace: Trace
    named: Named | None
    recording: Recording

    @property
    def kept_every_rule(self) -> bool:
        """The loop ended by itself, every rule kept (the CLI's exit 0)."""
        return self.named is None and self.recording.outcome == rec.RETURNED


def read(recording: Recording) -> Yours:
    """The trace of `recording`, and the first rule it broke."""
    return Yours(_Reading(recording).trace, named(recording), recording)


def _json(value: object) -> object:
    """A value of the learner's state as JSON: as it is when it is JSON, else its repr (it is only shown)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


class _Reading:
    def __init__(self, recording: Recording):
        self.recording = recording
        calls = recording.exchanges
        first = calls[0].request if calls and isinstance(calls[0].request, dict) else {}
        scenario = SCENARIOS.get(recording.scenario)
        task = scenario.task_in(recording.lang) if scenario else ""
        meta = {key: first[key] for key in SETTINGS if key in first}
        meta.update(task=task, lang=recording.lang, yours={"source": recording.source, "scenario": recording.scenario})
        self.trace = Trace(meta=meta, messages=[])
        self.held = self.trace.threads[MAIN].messages  # the history as the requests show it, step by step
        self.state = {"turn_count": 1, "transition_reason": None, "stop_reason": None, "ended": None,
                      "input_tokens": 0, "output_tokens": 0}
        sent = self._sent(calls[0]) if calls else [{"role": "user", "content": task}]
        # Stage 1: the request went into messages before the first call.
        self.held.extend(sent)
        self.add("user_request", {"task": message_text(sent[0]) if sent else task})
        for k, call in enumerate(calls):
            if k:
                self.between(calls[k - 1], self._sent(call))
            if call.error is not None or call.response is None:
                self.refused(call)
                return
            self.call_model(call)
        if calls:
            self.after_last(calls[-1])
        self.trace.first()

    @staticmethod
    def _sent(call: Exchange) -> list:
        messages = call.request.get("messages") if isinstance(call.request, dict) else None
        return list(messages) if isinstance(messages, list) else []

    def add(self, stage: str, detail: dict, rewritten=()) -> Step:
        s = self.state
        return self.trace.add(Step(
            index=0, stage=stage, turn_count=s["turn_count"], transition_reason=s["transition_reason"],
            stop_reason=s["stop_reason"], n_messages=len(self.held), input_tokens=s["input_tokens"],
            output_tokens=s["output_tokens"], ended=s["ended"], time=0.0, detail=detail), rewritten)

    @staticmethod
    def _learner(call: Exchange) -> dict:
        return {"turn_count": _json(call.state.turn_count), "transition_reason": _json(call.state.transition_reason)}

    @staticmethod
    def _settings(call: Exchange) -> dict:
        return {k: v for k, v in call.request.items() if k != "messages"} if isinstance(call.request, dict) else {}

    # -- stage 2 --
    def call_model(self, call: Exchange) -> None:
        response = call.response
        s = self.state
        s["stop_reason"] = response.get("stop_reason")
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        for side in ("input", "output"):
            count = usage.get(f"{side}_tokens")
            s[f"{side}_tokens"] += count if type(count) is int else 0
        self.add("call_model", {"request": self._settings(call), "response": response, "line": call.line,
                                "learner": self._learner(call)})

    def refused(self, call: Exchange) -> None:
        """The call the API refused: the broken loop ends here, as a broken branch of Step through ends."""
        error = call.error or {}
        s = self.state
        s.update(ended=REFUSED, transition_reason=None)
        mistake = named(self.recording)
        self.add("refused", {"error": error, "stage": "call_model", "request": self._settings(call),
                             "why": WHY_REFUSED.format(status=error.get("status"), type=error.get("type")),
                             **({"mistake": mistake.name} if mistake else {}), "line": call.line,
                             "learner": self._learner(call)})
        self.trace.first()

    # -- stages 3, decide, 4 and 5, read from the next request --
    def between(self, before: Exchange, sent: list) -> None:
        response = before.response
        n = len(self.held)
        grew = sent[:n] == self.held
        answer = sent[n] if grew and n < len(sent) and isinstance(sent[n], dict) else None
        if answer is not None and answer.get("role") == "assistant" and _shape(answer) == _shape(response):
            self.held.append(answer)
            self.add("append_assistant", {})
        else:
            self.add("append_assistant", {"appended": False})  # the response was not kept in messages
        stop_reason = response.get("stop_reason")
        why = GO_ON if stop_reason == "tool_use" else WHY_GO_ON if stop_reason == "max_tokens" else \
            why_ended(stop_reason)
        self.add("decide", {"continues": True, "why": why})
        written = sent[len(self.held):] if grew else list(sent)
        self.run_tools(before, [b for m in written if isinstance(m, dict) for b in tool_results(m)])
        s = self.state
        s.update(turn_count=s["turn_count"] + 1, transition_reason="tool_result")
        if grew:
            self.held.extend(written)
            self.add("write_back", {"results": sum(len(tool_results(m)) for m in written if isinstance(m, dict))}
                     if written else {"results": 0, "printed": len(before.tool_runs)})
        else:  # the loop rewrote messages: the next request is the history from here on
            self.held[:] = sent
            self.add("write_back", {"results": sum(len(tool_results(m)) for m in sent if isinstance(m, dict)),
                                    "rewritten": True}, rewritten=range(len(sent)))

    def run_tools(self, call: Exchange, written: list[dict]) -> None:
        """A run_tool step for each tool the tool box ran after `call`, its result as the loop wrote it back."""
        by_id = {b.get("tool_use_id"): b for b in written if isinstance(b.get("tool_use_id"), str)}
        for j, run in enumerate(call.tool_runs):
            result = by_id.get(run.tool_use_id) or (written[j] if j < len(written) else None) or \
                tool_result(run.tool_use_id, ToolOutput(run.output, is_error=run.is_error))
            self.add("run_tool", {"tool_use_id": run.tool_use_id, "name": run.name, "input": run.input,
                                  "output": run.output, "is_error": run.is_error, "tool_result": result,
                                  "given_by_user": False, "line": run.line})

    def after_last(self, call: Exchange) -> None:
        """After the last call: the answer kept, and the loop ended by itself, or stopped from outside."""
        response = call.response
        s = self.state
        outcome = self.recording.outcome
        if outcome != rec.RETURNED:  # stopped while it went on: what it ran is shown, then where it stopped
            self.run_tools(call, [])
            self.trace.steps[-1].ended = outcome
            return
        self.held.append({"role": "assistant", "content": response.get("content")})
        self.add("append_assistant", {})
        stop_reason = response.get("stop_reason")
        if stop_reason == "tool_use" and tool_uses(response):
            if not call.tool_runs:  # statement 1: nothing ran the tool_use
                s.update(ended=NOT_RUN, transition_reason=None)
                self.add("decide", {"continues": False, "why": WHY_NO_LOOP})
                return
            self.add("decide", {"continues": True, "why": GO_ON})
            self.run_tools(call, [])
            self.trace.steps[-1].ended = NOT_RUN  # ran, and returned: the results never went back
            return
        s.update(ended=stop_reason, transition_reason=None)
        self.add("decide", {"continues": False, "why": why_ended(stop_reason)})


def _last_at(trace: Trace, index: int, key: str, kind: type):
    """The newest value of detail `key` of type `kind` among steps 0..`index`, or None."""
    for i in range(min(index, len(trace.steps) - 1), -1, -1):
        value = trace.steps[i].detail.get(key)
        if isinstance(value, kind):
            return value
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

