"""Retry: a model call that failed on the way is called again, as a `retry` step, after a wait.

The chapter's table, "why the loop goes on" and "error handling": the minimal
loop ends on a failed call; a high-completion system has a retry branch for
transport errors. This layer wraps each model call (call_model, and the summary
call of a compaction): a failure that a later call may not meet (retry.py says
which) becomes a `retry` step, the wait before the next attempt is held here,
and the call goes again; past the profile's retries the loop ends. A failure an
inner layer turned into a step of its own (resume's `refused`) is left as it is.
"""

from __future__ import annotations

import time
from dataclasses import replace

from . import details, layers, retry
from .details import Detail
from .layers import Layer


class Attempt:
    """The model, called for attempt k of one call: the complete loop's own retry (the SDK's retry header says so)."""

    def __init__(self, model, attempt: int):
        self.model, self.attempt = model, attempt

    @property
    def config(self):
        return self.model.config

    def create(self, messages: list, tools: list | None = None, observer=None, **settings):
        return self.model.create(messages, tools, observer, attempt=self.attempt, **settings)


class Retry(Layer):
    wraps = ("call_model", "summarize")

    def __init__(self):
        self.wait_until: float | None = None  # time.time() the next call may go, after a retry step
        self.wait_from, self.skipped = 0.0, False

    def continues(self, run, frame, nxt):
        if nxt is not None and frame.state.stage == "retry":  # the call that failed, again
            return layers.last(run, frame).detail.stage or "call_model"
        return None

    def around(self, run, doing, call) -> Detail:
        s = doing.frame.state
        stage = doing.stage
        waited = self._wait(run)
        doing.model = Attempt(doing.frame.model, s.attempt)
        try:
            detail = call(doing)
        except Exception as exc:
            if not retry.transient(exc):
                raise
            doing.stage, detail = "retry", self._failed(run, s, stage, exc)
            return replace(detail, kind=doing.kind) if stage == "summarize" else detail
        if doing.stage != stage:  # an inner layer made it a step of its own
            return detail
        return replace(detail, attempt=s.attempt, **waited)

    def _failed(self, run, s, stage: str, exc: Exception) -> Detail:
        planned = retry.plan(exc, s.attempt - 1, run.rng, run.profile.retries)
        if planned["gave_up"]:
            s.ended, s.transition_reason = "retries_exhausted", None
        else:
            s.transition_reason = "retry"
        # the plan's facts in its order (retry.plan), then the call to make again and why
        return details.of("retry", {**planned, "stage": stage, "request": retry.request_of(exc),
                                    "why": retry.why(planned)})

    def recorded(self, run, doing, step) -> None:
        if step.stage == "retry" and not step.detail.gave_up:
            self.wait_from, self.wait_until, self.skipped = step.time, step.time + step.detail.wait_s, False

    def wait_left(self, run) -> float:
        """Seconds before the next call may go, after a `retry` step (0: it may go now)."""
        if self.wait_until is None or run.done:
            return 0.0
        return max(0.0, self.wait_until - time.time())

    def skip_wait(self, run) -> None:
        if self.wait_until is not None and self.wait_left(run) > 0:
            self.wait_until, self.skipped = time.time(), True

    def _wait(self, run) -> dict:
        """Wait what is left of the backoff before a call; what was waited, for the call's step."""
        if self.wait_until is None:
            return {}
        left = self.wait_left(run)
        if left > 0:
            run.sleep(left)
        waited = {"waited_s": round(max(0.0, time.time() - self.wait_from), 3), "skipped": self.skipped}
        self.wait_until = None
        return waited
