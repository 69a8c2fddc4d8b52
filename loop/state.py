"""LoopState: the chapter's three fields, plus what the views need to show a step."""

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
