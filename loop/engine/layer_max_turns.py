"""Max turns: the loop stops before calling the model again once `turn_count` passes the limit.

The chapter's table, "state": a high-completion system holds the turn (and its
budget) explicitly. The chapter's loop runs until the model stops asking for
tools; this layer adds a `stop` step before the call that would pass the limit
(the run's max_turns, a sub-agent's own).
"""

from __future__ import annotations

from .details import Detail, StopDetail
from .endings import MAX_TURNS
from .layers import Layer


class MaxTurns(Layer):
    stages = ("stop",)

    def before(self, run, frame, nxt):
        return "stop" if nxt == "call_model" and frame.state.turn_count > frame.max_turns else None

    def execute(self, run, doing) -> Detail:
        doing.frame.state.ended = "max_turns"
        return StopDetail(why=MAX_TURNS.format(n=doing.frame.max_turns))
