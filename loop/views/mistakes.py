"""The Mistakes lab's record: a loop (the correct one, or one broken one of the seven classic ways) call by call.

The loops themselves are made in the engine (loop/engine/broken.py `lab`, the same layer Break it here breaks a
run with), through the real SDK against the offline model, which checks the Messages API's rules as the API does;
what each mistake is, its lines, rule and fix, is defined once in loop/engine/mistakes.py. One mistake breaks no
rule: with no loop at all, the model's tool_use is never run, and the answer stays a wish (the chapter's first
closing point). No SDK here: this reads a trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.layer_mistake import NOT_RUN, REFUSED
from ..engine.trace import Trace

REFUSED_400 = "400"  # how LabRun.ended says the API refused a call
NOT_RUN_YET = "tool_use"  # how it says the answer asked for a tool_use and nothing ran it
MAX_CALLS = "max calls"


@dataclass
class Call:
    """One model call of a loop: what was sent and what came back."""

    number: int  # 1-based, as the run counts its calls
    messages: list  # the history sent
    response: dict | None = None
    error: str | None = None  # the API's words when it refused the request
    tool_outputs: list = field(default_factory=list)  # what the tools printed after this call


@dataclass
class LabRun:
    mistake: str | None  # None: the correct loop
    calls: list[Call]
    ended: str  # the last stop_reason ("end_turn", "max_tokens"), "400", "tool_use" (no loop: asked, never run)
    tools_run: int = 0  # tool_use blocks really run

    @property
    def broke_at(self) -> Call | None:
        return next((c for c in self.calls if c.error), None)


def calls_of(trace: Trace, first: int = 0) -> list[Call]:
    """The calls of `trace` made at or after step `first`, numbered as the run counts its calls, with what its tools
    said after each."""
    calls: list[Call] = []
    number = 0
    for i, step in enumerate(trace.steps):
        if step.stage == "run_tool":
            if i >= first and calls:
                calls[-1].tool_outputs.append(str(step.detail.output or ""))
            continue
        if step.stage not in ("call_model", "refused"):
            continue
        number += 1
        if i < first:
            continue
        request = trace.request_at(i) or {}
        call = Call(number, list(request.get("messages") or trace.messages_at(i)))
        if step.stage == "refused":
            error = step.detail.error or {}
            call.error = str(error.get("message") or error)
        else:
            call.response = trace.response_at(i)
        calls.append(call)
    return calls


def lab_run(trace: Trace, mistake: str | None) -> LabRun:
    """A loop of the lab, read from its trace (loop/engine/broken.py `lab`)."""
    last = trace.steps[-1] if trace.steps else None
    if last is None:
        ended = MAX_CALLS
    elif last.ended == REFUSED and last.stage == "refused":
        ended = REFUSED_400
    elif last.ended == NOT_RUN and mistake is not None:
        ended = NOT_RUN_YET
    else:
        ended = str(last.stop_reason or last.ended or MAX_CALLS)
    tools_run = sum(1 for s in trace.steps if s.stage == "run_tool")
    return LabRun(mistake, calls_of(trace), ended, tools_run)


def ids_of(calls: list[Call]) -> list[str]:
    """Every id the calls draw, the ids the model gave (its tool_use blocks') first, in order: an id a tool_result
    carries that no tool_use asked for (a wrong id) comes after them, so it never takes a real id's colour
    (loop/views/parts.py `screen_colours`)."""
    asked: list[str] = []
    carried: list[str] = []
    for call in calls:
        messages = [*call.messages, *([call.response] if call.response else [])]
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    asked.append(block["id"])
                elif block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    carried.append(block["tool_use_id"])
    return list(dict.fromkeys([*asked, *carried]))
