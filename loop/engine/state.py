"""LoopState: the chapter's three fields, what the views need to show a step, and the complete loop's explicit state.

Also what a run is made of beside it: a `Frame` (one loop in progress), and the `Status` a page may read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tools import ToolBox
    from .trace import Thread


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

    def count_usage(self, response: dict) -> None:
        """Add a response's tokens to the run's sums (every model call: the chapter's, a summary's)."""
        usage = response.get("usage") or {}
        self.input_tokens += usage.get("input_tokens") or 0
        self.output_tokens += usage.get("output_tokens") or 0


@dataclass(eq=False)
class Frame:
    """One loop in progress: the main one, or a sub-agent's that a `task` tool_use started."""

    thread: Thread
    state: LoopState
    model: object  # a Model, or a subagent.ThreadModel with the child's system prompt
    tools: ToolBox
    task: str
    max_turns: int


@dataclass(frozen=True)
class Status:
    """What a page may know of a live run, read-only: where the top loop is and what comes next."""

    next_stage: str | None
    pending_tool_use: dict | None  # the tool_use the next run_tool would run (for the approval gate)
    wait_left: float  # seconds before the next call may go, after a retry
    running: list  # (tool_use id, tool name, seconds so far) of each tool started ahead of its step
    stage: str | None  # the top loop's last stage (None before its first)
    ended: str | None  # why the top loop ended
    attempt: int  # of the top loop's next model call
    attempts: int  # calls a model call may take: 1 + the profile's retries
    in_child: bool  # the top loop is a sub-agent's
