"""Minimal beside complete: one scenario run in both loop profiles, model call by model call.

The page shows them side by side, as the Mistakes lab shows a broken loop
beside the chapter's: where the minimal loop stops (half an answer on
max_tokens, the error that ends the run, the API refusing a prompt that is too
long), the complete loop goes on, and says why. Both run for real (the
scripted model through the SDK, real tools in a workspace of their own); the
complete loop's retry waits are recorded, not waited, here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..text.catalogs import N_
from .errors import explain
from .narrate_complete import number
from ..engine.profiles import COMPLETE, MINIMAL
from ..engine.retry import error_facts, label
from ..engine.runner import start
from ..engine.trace import Step, Trace

SCENARIOS = ("overloaded", "long-answer", "big-context", "parallel")  # one row of the chapter's table each
CALLS = ("call_model", "summarize", "retry", "refused")  # the steps that are a model call

# What the loop did after a call, in words (the page says them in the learner's language)
THEN = {
    "tool_use": N_("stop_reason tool_use: run the tools, write the results back, call again"),
    "end": N_("the loop ends: {why}"),
    "retry": N_("wait {wait} s, then call again (attempt {k} of {n})"),
    "gave_up": N_("no retry left: the loop ends"),
    "recover": N_("keep the cut answer, ask the model to continue, call again"),
    "compact": N_("compact the history, then call again"),
    "summary": N_("a summary call: the history is replaced by its answer"),
    "error": N_("the run stops here: {error}"),
}


@dataclass
class Call:
    """One model call of a run: what was sent, what came back, and what the loop did next."""

    number: int  # 1-based
    stage: str  # call_model, summarize, retry, refused, or "error" (the call the minimal loop died on)
    messages: list  # the history sent
    response: dict | None = None
    error: dict | None = None  # {"status", "type", "message"}: the API's words when the call failed
    then: str = "end"  # a key of THEN
    values: dict = field(default_factory=dict)  # what THEN's words need
    tool_outputs: list = field(default_factory=list)  # what the tools printed after this call
    parallel: dict | None = None  # the tools' wall time beside their sum, when they ran at once
    why_step: Step | None = None  # the step whose `why` THEN says (kept in English: narrate.why_in says it again)
    request: dict | None = None  # the body sent to /v1/messages, as the API received it (None: not known)


@dataclass
class ProfileRun:
    profile: str
    calls: list[Call]
    ended: str  # why the run ended: a stop_reason, retries_exhausted, ..., or "error"
    steps: int
    wall_ms: float  # from the first step to the last (retry waits are not waited here)
    waited_s: float  # the retry waits the complete loop would have waited (not waited here)
    trace: Trace | None = None


def run_profile(scenario: str, profile: str, lang: str = "en", tool_timeout: float = 10.0) -> ProfileRun:
    """Run `scenario` to its end in `profile`; an error that ends the minimal loop ends the run, as it would."""
    with start(scenario=scenario, profile=profile, lang=lang, tool_timeout=tool_timeout) as run:
        run.sleep = lambda seconds: None  # the waits are recorded, not waited, beside each other
        failed = None
        try:
            run.run_to_end()
        except Exception as exc:  # the chapter's loop has no error handling: the call that failed ends it
            failed = exc
        calls = calls_of(run.trace)
        if failed is not None:
            facts = error_facts(failed)
            calls.append(Call(len(calls) + 1, "error", list(run.state.messages), error=facts, then="error",
                              values={"error": explain(failed, lang)}, request=sent_body(failed)))
        waited = sum(s.detail.wait_s or 0 for s in run.trace.steps if s.stage == "retry")
        times = [s.time for s in run.trace.steps]
        return ProfileRun(profile, calls, "error" if failed else run.state.ended or "", len(run.trace),
                          round((times[-1] - times[0]) * 1000, 3) if times else 0.0,
                          round(waited, 3), run.trace)


def calls_of(trace: Trace) -> list[Call]:
    """Each model call of the main thread, with what the loop did after it."""
    out: list[Call] = []
    steps = trace.steps
    for i, step in enumerate(steps):
        if step.stage not in CALLS or step.thread != trace.steps[0].thread:
            continue
        request = trace.request_at(i) or {}
        call = Call(len(out) + 1, step.stage, list(request.get("messages") or trace.history_before(i)),
                    request=request or None)
        d = step.detail
        if step.stage == "retry":
            call.error = d.error
            if d.gave_up:
                call.then = "gave_up"
            else:
                call.then, call.values = "retry", {"wait": f"{number(d.wait_s):.2f}",
                                                   "k": f"{number(d.attempt, 1) + 1:g}", "n": d.attempts}
        elif step.stage == "refused":
            call.error = d.error
            call.then = "end" if step.ended else "compact"
            call.values, call.why_step = {"why": d.why or ""}, step
        elif step.stage == "summarize":
            call.response, call.then = d.response, "summary"
        else:
            call.response = d.response
            call.then, call.values = _after(trace, i)
            call.why_step = next((s for s in trace.steps[i + 1:] if s.stage == "decide"), None)
            call.tool_outputs, call.parallel = _tools_after(trace, i)
        out.append(call)
    return out


def sent_body(failed: BaseException) -> dict | None:
    """The body of the request a failed call sent, as the SDK sent it (its headers, the key among them, left out).

    The chapter's loop dies on the call, so its trace has no step that holds what was sent: the SDK's error does.
    """
    request = getattr(failed, "request", None)
    try:
        body = json.loads(request.content) if request is not None else None
    except Exception:  # a streamed body not read (httpx says so with its own error), or no JSON: not known
        return None
    return body if isinstance(body, dict) else None


def _after(trace: Trace, i: int) -> tuple[str, dict]:
    """What the loop did after the call at step i: its decide step says."""
    for step in trace.steps[i + 1:]:
        if step.stage == "decide":
            if step.detail.recover:
                return "recover", {}
            if step.detail.continues:
                return "tool_use", {}
            return "end", {"why": step.detail.why if step.detail.given("why") else step.ended}
    return "end", {"why": trace.steps[-1].ended or ""}


def _tools_after(trace: Trace, i: int) -> tuple[list[str], dict | None]:
    outputs, parallel = [], None
    for step in trace.steps[i + 1:]:
        if step.stage in CALLS:
            break
        if step.stage == "run_tool":
            outputs.append(str(step.detail.output if step.detail.given("output") else ""))
        if step.stage == "write_back" and isinstance(step.detail.parallel, dict):
            parallel = step.detail.parallel
    return outputs, parallel


def side_by_side(scenario: str, lang: str = "en") -> tuple[ProfileRun, ProfileRun]:
    """(the minimal loop's run, the complete loop's run) of one scenario."""
    return run_profile(scenario, MINIMAL, lang), run_profile(scenario, COMPLETE, lang)


def failure(call: Call) -> str:
    """A failed call in a few words: `529 overloaded_error`."""
    return label(call.error or {})
