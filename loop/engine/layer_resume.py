"""Compact-resume: the API refused the prompt as too long, so the loop compacts, then calls again.

The chapter's table, "why the loop goes on" (continuing after compaction) and
"state" (a budget held explicitly): a model call the API refuses as too long
(400 `prompt is too long: N tokens > M maximum`) becomes a `refused` step, the
budget shrinks to what the window holds, and a summary and a compaction follow
before the call goes again; refused once more after a compaction, the loop ends.
The same compaction comes first when the history's estimate passes the budget.
"""

from __future__ import annotations

from dataclasses import replace

from . import compact, layers, retry
from .details import Detail, RefusedDetail
from .layer_compact import Compacting, compacted


class Resume(Compacting):
    wraps = ("call_model", "summarize")
    back_to_call = ("compact", "refused")

    def before(self, run, frame, nxt):
        return "summarize" if nxt == "call_model" and self.due(run, frame) else None

    def due(self, run, frame) -> str | None:
        """"resume" when the complete loop compacts before calling again: the API refused the prompt as too long,
        or the history's estimate passes the budget (once between two calls)."""
        last = layers.last(run, frame)
        if last is not None and last.stage == "refused":
            return "resume"
        if any(step.detail.kind == "resume" for step in compacted(run, frame)):
            return None
        s = frame.state
        if s.budget is not None and len(s.messages) > 1 and run.sizer.estimate(s.messages) > s.budget:
            return "resume"
        return None

    def around(self, run, doing, call) -> Detail:
        try:
            return call(doing)
        except Exception as exc:
            found = retry.too_long(exc)
            if not found:
                raise
            stage, doing.stage = doing.stage, "refused"
            detail = self._refused(run, doing.frame, stage, exc, *found)
            return replace(detail, kind=doing.kind) if stage == "summarize" else detail

    def _refused(self, run, frame, stage: str, exc: Exception, tokens: int, maximum: int) -> Detail:
        s = frame.state
        request = retry.request_of(exc)
        estimate = run.sizer.estimate(s.messages)
        # The window as the loop's estimate of `messages` counts it: the API also counted what the estimate
        # leaves out (the system prompt, the tools). 10% kept spare. Numbers that leave no room teach nothing.
        room = maximum - max(0, tokens - estimate)
        if room > 0:
            s.budget = min(int(room * 0.9), s.budget or int(room * 0.9))
        if stage == "summarize" or any(step.detail.kind == "resume" for step in compacted(run, frame)):
            s.ended, s.transition_reason = "prompt_too_long", None  # compacted already, and still too long
            why = compact.STILL_TOO_LONG.format(tokens=tokens, maximum=maximum)
        else:
            s.transition_reason = "compact_resume"
            why = compact.REFUSED_WHY.format(tokens=tokens, maximum=maximum)
        return RefusedDetail(error=retry.error_facts(exc), tokens=tokens, maximum=maximum, estimate=estimate,
                             budget=s.budget, stage=stage, request=request, why=why)
