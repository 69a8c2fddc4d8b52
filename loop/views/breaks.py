"""A broken branch (Break it here, loop/engine/broken.py) as the page draws it: where it was broken, where it
stopped and why, and its calls from there, as the Mistakes lab draws a loop (loop/views/mistakes.py `Call`).

All of it is read from the branch's trace, so a broken branch saved with its run and replayed draws the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.layer_mistake import NOT_RUN
from ..engine.mistakes import MISTAKES
from ..engine.trace import Trace
from .mistakes import Call, calls_of


@dataclass(frozen=True)
class BrokenView:
    mistake: str  # one of MISTAKES
    at: int  # the step it was broken at
    kept: int  # the last step kept as the run had it: `at`, or the step before when the break made `at` anew
    last: int  # its last step: the refused call, or where the loop ended
    status: int | None  # the API's error at the refused call (None when no call was refused)
    type: str | None
    not_run: bool  # no loop: the answer asked for a tool_use, and nothing runs it
    offline: bool  # the run was made with a real model: the branch ran against the offline model


def mistake_of(trace: Trace) -> str | None:
    """The mistake a branch was broken by, or None for any other trace."""
    fork = trace.meta.get("forked_from") or {}
    return fork.get("mistake") if fork.get("edit") == "mistake" and fork.get("mistake") in MISTAKES else None


def broken_view(trace: Trace) -> BrokenView | None:
    """What the page says of a broken branch; None when `trace` is not one (or has no steps)."""
    name = mistake_of(trace)
    if name is None or not trace.steps:
        return None
    fork = trace.meta["forked_from"]
    last = trace.steps[-1]
    error = (last.detail.error or {}) if last.stage == "refused" else {}
    at = int(fork.get("step", 0))
    kept = fork.get("kept", at)
    return BrokenView(name, at, kept if isinstance(kept, int) and 0 <= kept <= at else at, last.index,
                      error.get("status"), error.get("type"), last.ended == NOT_RUN, bool(fork.get("offline")))


def same_until(trace: Trace, other: Trace, at: int) -> bool:
    """Steps 0 to `at` of both are the same: `other` may be the branch `trace` was forked from at `at`."""
    return (len(trace.steps) > at and len(other.steps) > at
            and all(trace.steps[i].to_dict() == other.steps[i].to_dict() for i in range(at + 1)))


def calls_after(trace: Trace, at: int) -> list[Call]:
    """The calls of a branch from the last one made by step `at` on (the call whose answer the loop was handling
    when broken, the same on both branches), numbered as the run counts its calls, with what its tools said."""
    first = max((i for i in range(min(at, len(trace.steps) - 1) + 1)
                 if trace.steps[i].stage in ("call_model", "refused")), default=0)
    return calls_of(trace, first)
