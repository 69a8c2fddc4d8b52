"""The trace: one self-contained record a stage, and a cursor over them.

As in Python Tutor, a view renders step *i* from the trace alone and moving
the cursor runs nothing. A step keeps its own small facts (stage, turn_count,
transition_reason, stop_reason, tokens, what the stage did) and the length of
the history at that moment. The history itself is kept once: the loop only
ever appends to `messages`, so the history at step *i* is a prefix of it.
That keeps memory linear in the work instead of one copy of the history a step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .catalogs import N_

STAGES = ("user_request", "call_model", "append_assistant", "decide", "run_tool", "write_back")
# Numbered as the chapter numbers its five stages: the check of stop_reason between 3 and 4 has no number of its
# own there (it appears only in the whole loop), so it has none here either.
STAGE_TITLES = {
    "user_request": N_("1 · user request into messages"),
    "call_model": N_("2 · call the model"),
    "append_assistant": N_("3 · append the assistant response"),
    "decide": N_("stop_reason: go on or end?"),
    "run_tool": N_("4 · run a tool_use"),
    "write_back": N_("5 · write tool_results back"),
    "stop": N_("stopped: max turns"),
}


@dataclass(slots=True)
class Step:
    index: int
    stage: str
    turn_count: int
    transition_reason: str | None
    stop_reason: str | None
    n_messages: int  # len(messages) after this stage
    input_tokens: int  # summed over the run so far
    output_tokens: int
    ended: str | None  # why the loop ended, on the step that ended it and after
    time: float  # seconds since the epoch
    detail: dict = field(default_factory=dict)  # what this stage did; see runner.py

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def turn(self) -> int:
        """The turn this step is part of; 0 for the user's request, which comes once, before turn 1.

        A turn is one round of stages 2 to 5 (call the model, append its response, check
        stop_reason, run the tools, write the results back), as the chapter counts it.
        `turn_count` is the number of the turn in progress or about to start, so
        `write_back`, which ends turn k, leaves it at k + 1: the step itself belongs to
        turn k. A max-turns stop comes after the last turn's write-back and belongs to it.
        """
        if self.stage == "user_request":
            return 0
        return self.turn_count - 1 if self.stage in ("write_back", "stop") else self.turn_count


@dataclass
class Trace:
    """Steps, the one shared history, facts about the run, and a cursor."""

    meta: dict = field(default_factory=dict)  # model, system, tools, max_tokens, task, created
    messages: list = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    cursor: int = -1  # -1 before the first step
    branches: list["Trace"] = field(default_factory=list)  # other branches saved with this one (forks)

    # -- the cursor (moving it never runs anything) --
    def __len__(self) -> int:
        return len(self.steps)

    @property
    def at_end(self) -> bool:
        return self.cursor >= len(self.steps) - 1

    def goto(self, index: int) -> int:
        self.cursor = max(-1 if not self.steps else 0, min(index, len(self.steps) - 1))
        return self.cursor

    def first(self) -> int:
        return self.goto(0)

    def back(self) -> int:
        return self.goto(self.cursor - 1)

    def forward(self) -> int:
        return self.goto(self.cursor + 1)

    def last(self) -> int:
        return self.goto(len(self.steps) - 1)

    @property
    def current(self) -> Step | None:
        return self.steps[self.cursor] if 0 <= self.cursor < len(self.steps) else None

    # -- what a view needs at step i --
    def messages_at(self, index: int) -> list:
        """The history as the model will see it after step `index`."""
        return self.messages[: self.steps[index].n_messages] if 0 <= index < len(self.steps) else []

    def results_at(self, index: int) -> list[dict]:
        """tool_result blocks collected but not yet written back at step `index`."""
        pending: list[dict] = []
        for step in reversed(self.steps[: index + 1]):
            if step.stage != "run_tool":
                break
            pending.append(step.detail["tool_result"])
        return pending[::-1]

    def request_at(self, index: int) -> dict | None:
        """The exact body sent at a call_model step: its settings plus the history then."""
        step = self.steps[index]
        if step.stage != "call_model":
            return None
        request = dict(step.detail["request"])
        request["messages"] = self.messages[: step.n_messages]
        return request

    def response_at(self, index: int) -> dict | None:
        step = self.steps[index]
        return step.detail.get("response") if step.stage == "call_model" else None

    def new_blocks_at(self, index: int) -> tuple[int, int]:
        """(first message index, count) of the messages step `index` added."""
        before = self.steps[index - 1].n_messages if index > 0 else 0
        return before, self.steps[index].n_messages - before
