"""Max_tokens recovery: an answer cut at max_tokens is continued, not lost (recovery.py says how).

The chapter's table, "why the loop goes on" (recovery) and "error handling"
(truncation): the chapter's decide ends the loop on max_tokens, and must. This
layer wraps decide: a cut answer, while fewer than the profile's recoveries were
made in a row, does not end the loop, and a `recover` step follows it that
writes the continuation message back; then the loop calls the model again.
"""

from __future__ import annotations

from dataclasses import replace

from . import recovery
from .details import Detail, RecoverDetail
from .layers import Layer
from .rules import tool_uses


class Recovery(Layer):
    stages = ("recover",)
    wraps = ("decide",)
    back_to_call = ("recover",)

    def continues(self, run, frame, nxt):
        s = frame.state
        if nxt is not None and s.stage == "decide" and s.stop_reason == "max_tokens":  # caught: continue
            return "recover"
        return None

    def around(self, run, doing, call) -> Detail:
        detail = call(doing)
        s, limit = doing.frame.state, run.profile.recoveries
        if recovery.catch(s, limit):
            return replace(detail, continues=True, recover=True,
                           why=recovery.WHY_RECOVER.format(k=s.recoveries_in_a_row + 1, limit=limit))
        if s.ended == "max_tokens" and s.recoveries_in_a_row:
            return replace(detail, why=recovery.WHY_EXHAUSTED.format(limit=limit))
        return detail

    def execute(self, run, doing) -> Detail:
        s = doing.frame.state
        recovery.continue_after_cut(s)
        return RecoverDetail(k=s.recoveries_in_a_row + 1, limit=run.profile.recoveries,
                             not_run=[b.get("id") for b in tool_uses(s.response)])
