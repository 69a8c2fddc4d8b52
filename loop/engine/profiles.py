"""Loop profiles: the chapter's minimal loop (the default), and the complete loop a production harness runs.

The chapter ends with a table: its minimal loop beside a high-completion
system, the same skeleton with more around it. Both profiles run the same five
stage functions (stages.py); `complete` adds four layers (layers.py), each in a module of its own:

| aspect | minimal | complete |
| --- | --- | --- |
| why the loop goes on | `tool_result` | also `retry` (layer_retry.py), `max_tokens_recovery` (layer_recovery.py), `compact_resume` (layer_resume.py) |
| tool execution | after the whole response, in order | at once when all are safe, started early while streaming (layer_parallel.py) |
| state | `messages`, `turn_count`, `transition_reason` | also budget, retries, recoveries, compactions, the transition history |
| error handling | a failed call ends the run | transport errors retried, a cut answer continued, a too long prompt compacted |
| observability | the trace | also progress (attempt k of n, the wait left, tools running) and a JSON line a step |
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..text.catalogs import N_
from .trace import Trace

MINIMAL, COMPLETE = "minimal", "complete"
BUDGET = 150_000  # estimated tokens a request may hold before the complete loop compacts first


@dataclass(frozen=True)
class Profile:
    """What the loop does beyond the chapter's five stages: the layers it adds (layers.py), and their numbers."""

    name: str
    layers: tuple[str, ...] = field(default=())  # "retry", "recovery", "resume", "parallel"
    retries: int = 0  # failed calls the loop retries itself (the SDK's own retries are off when > 0)
    recoveries: int = 0  # max_tokens recoveries in a row
    budget: int | None = None  # estimated tokens a request may hold before resume compacts first

    @property
    def complete(self) -> bool:
        return self.name == COMPLETE

    @property
    def resume(self) -> bool:
        """Compact and call again when the prompt is too long, or the estimate passes the budget."""
        return "resume" in self.layers

    @property
    def parallel(self) -> bool:
        """Tool_use blocks safe together run at once; with streaming, started early."""
        return "parallel" in self.layers


PROFILES = {
    MINIMAL: Profile(MINIMAL),
    COMPLETE: Profile(COMPLETE, ("retry", "recovery", "resume", "parallel"), retries=3, recoveries=3, budget=BUDGET),
}
ABOUT = {
    MINIMAL: N_("minimal: the chapter's loop; only tool_result makes it go on"),
    COMPLETE: N_("complete: a production harness's loop (retry, recovery, compaction, parallel tools)"),
}
NAMES = {  # as the sidebar offers them
    MINIMAL: N_("minimal: the chapter's loop"),
    COMPLETE: N_("complete: a production harness's loop"),
}
# Why the loop goes on, each reason in a few words (the LoopState's transition history)
TRANSITIONS = {
    "tool_result": N_("tool_result: the tools ran, their results were written back"),
    "retry": N_("retry: the call failed on the way; wait, then call again"),
    "max_tokens_recovery": N_("max_tokens_recovery: the answer was cut; ask the model to continue"),
    "compact_resume": N_("compact_resume: the prompt was too long; compact, then call again"),
}


def profile(name: str | None) -> Profile:
    """The profile named `name` (the minimal one for None); KeyError for an unknown name."""
    return PROFILES[name or MINIMAL]


def layers(chosen: Profile, compacts: bool, tools) -> list[str]:
    """The layers of a run (layers.py): those every run has, its profile's, and its toolset's (s06 compacts, a
    `task` tool starts sub-agents)."""
    names = ["max_turns", "gate", *chosen.layers]
    if compacts:
        names.append("compaction")
    if any(getattr(tool, "starts_thread", False) for tool in getattr(tools, "tools", {}).values()):
        names.append("sub_agent")
    return names


def counters(trace: Trace, index: int) -> dict:
    """The complete loop's explicit state after step `index`, in the step's thread, read from the trace alone.

    {"retries", "recoveries", "recoveries_in_a_row", "compactions", "attempt", "budget", "transitions"}: what
    the runner's LoopState holds at that step (a test checks they agree). A step that sets a
    transition_reason adds it to `transitions`.
    """
    out = {"retries": 0, "recoveries": 0, "recoveries_in_a_row": 0, "compactions": 0, "attempt": 1,
           "budget": trace.meta.get("budget"), "transitions": []}
    if not 0 <= index < len(trace):
        return out
    for i in trace.steps_of(trace.steps[index].thread):
        if i > index:
            break
        note(out, trace.steps[i])
    return out


SETS_TRANSITION = {"write_back": "tool_result", "retry": "retry", "recover": "max_tokens_recovery",
                   "refused": "compact_resume"}


def note(state, step) -> None:
    """Count `step` into the explicit state (a dict from `counters`, or a LoopState's fields)."""
    get = state.get if isinstance(state, dict) else lambda k: getattr(state, k)
    put = state.__setitem__ if isinstance(state, dict) else lambda k, v: setattr(state, k, v)
    stage, detail = step.stage, step.detail
    if stage == "retry" and not detail.gave_up:
        put("retries", get("retries") + 1)
        put("attempt", get("attempt") + 1)
    elif stage in ("call_model", "summarize"):
        put("attempt", 1)
        if stage == "call_model" and step.stop_reason != "max_tokens":
            put("recoveries_in_a_row", 0)
    elif stage == "recover":
        put("recoveries", get("recoveries") + 1)
        put("recoveries_in_a_row", get("recoveries_in_a_row") + 1)
    elif stage == "compact":
        put("compactions", get("compactions") + 1)
    if stage == "refused" and detail.budget is not None:
        put("budget", detail.budget)
    reason = SETS_TRANSITION.get(stage)
    if stage == "retry" and detail.gave_up:
        reason = None
    if stage == "compact" and detail.kind == "resume":
        reason = "compact_resume"
    if reason:
        get("transitions").append(reason)
