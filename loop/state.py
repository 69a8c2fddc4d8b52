"""LoopState: the chapter's three fields, what the views need to show a step, and the complete loop's explicit state."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LoopState:
    # The chapter's state, with its names.
    messages: list = field(default_factory=list)  # the working context of the next call
    turn_count: int = 1
    transition_reason: str | None = None  # "tool_result" while the loop goes on

    # What the views need beyond the chapter.
    stage: str | None = None  # the stage executed last
    stop_reason: str | None = None  # of the last response
    input_tokens: int = 0  # summed over the run
    output_tokens: int = 0
    response: dict | None = None  # the last response, read by stages 3 and 4
    results: list = field(default_factory=list)  # tool_result blocks of this turn, not yet written back
    ended: str | None = None  # why the loop ended; None while it runs

    # The complete loop's state, held explicitly (profiles.py); the chapter's minimal loop leaves it at rest.
    attempt: int = 1  # of the next model call: 1, or 1 + the retries already made for it
    retries: int = 0  # failed calls retried, over the run
    recoveries: int = 0  # max_tokens recoveries, over the run
    recoveries_in_a_row: int = 0  # since the last answer that was not cut
    compactions: int = 0  # rewrites of `messages` (compact steps)
    budget: int | None = None  # estimated tokens the next request may hold before the loop compacts first
    transitions: list = field(default_factory=list)  # every transition_reason set, in order
