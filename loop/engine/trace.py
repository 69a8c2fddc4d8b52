"""The trace: one self-contained record a stage, and a cursor over them.

As in Python Tutor, a view renders step *i* from the trace alone and moving
the cursor runs nothing. A step keeps its own small facts (stage, turn_count,
transition_reason, stop_reason, tokens, what the stage did), the thread it
belongs to and the length of that thread's history at that moment.

A run holds threads: the main loop, and a loop of its own for each sub-agent a
`task` tool_use starts. The cursor walks one sequence of steps; a sub-agent's
steps sit between its parent's `decide` and the parent's `run_tool` step that
gets its answer, like a call frame. Each thread's history is kept once
(`history.History`): the loop appends, and a `compact` step may rewrite, so
the history at step *i* is rebuilt from the versions kept, never copied a step.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, fields

from . import details
from ..text.catalogs import N_
from .details import Detail
from .history import History

MAIN = "main"
STAGES = ("user_request", "call_model", "append_assistant", "decide", "run_tool", "write_back")
MORE_STAGES = ("summarize", "compact")  # compaction (loop/engine/compact.py): a summary call, then the rewrite
COMPLETE_STAGES = ("retry", "refused", "recover")  # the complete loop's (loop/engine/profiles.py)
# An import's: a message the agent's harness put into the history (a course trace's between two recorded calls, a
# Claude Code `<synthetic>` or `isMeta` record). No stage of the loop made it and no model call produced it.
HARNESS = "harness"
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
    "summarize": N_("compact · summarise the history (a model call)"),
    "compact": N_("compact · rewrite messages"),
    "retry": N_("2 · the call failed: wait, then retry"),
    "refused": N_("2 · the call was refused: prompt too long"),
    "recover": N_("recover · ask the model to continue"),
    HARNESS: N_("the harness added a message (no model call)"),
}
# A broken loop's call (layer_mistake.py) is refused for a rule it broke, not for a prompt too long.
REFUSED_BROKEN = N_("2 · the API refused the request (400)")


def stage_title(step: "Step") -> str:
    """The English title of `step`'s stage (a catalog message): a broken loop's refused call has its own."""
    if step.stage == "refused" and step.detail.mistake:
        return REFUSED_BROKEN
    return STAGE_TITLES.get(step.stage, step.stage)


@dataclass(slots=True)
class Step:
    index: int
    stage: str
    turn_count: int
    transition_reason: str | None
    stop_reason: str | None
    n_messages: int  # len(messages) of its thread after this stage
    input_tokens: int  # summed over the thread so far
    output_tokens: int
    ended: str | None  # why the loop ended, on the step that ended it and after
    time: float  # seconds since the epoch
    detail: Detail = field(default_factory=dict)  # what this stage did: its stage's type in details.py
    thread: str = MAIN  # the id of the thread (the loop) it is a step of

    def __post_init__(self) -> None:
        # The runner and the importers build a dict; the step keeps it as its stage's type.
        if not isinstance(self.detail, Detail):
            self.detail = details.of(self.stage, self.detail)

    def to_dict(self) -> dict:
        """The step as JSON: its detail as the object it was given (see details.Detail.to_dict)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["detail"] = self.detail.to_dict()
        return out

    @property
    def turn(self) -> int:
        """The turn this step is part of; 0 for the user's request, which comes once, before turn 1.

        A turn is one round of stages 2 to 5 (call the model, append its response, check
        stop_reason, run the tools, write the results back), as the chapter counts it.
        `turn_count` is the number of the turn in progress or about to start, so
        `write_back`, which ends turn k, leaves it at k + 1: the step itself belongs to
        turn k. A max-turns stop comes after the last turn's write-back and belongs to it. The complete loop's
        `recover` (the request to continue after max_tokens) ends its turn as a write-back does. A message the
        harness added (an import's `harness` step) before the first call of its request comes before turn 1 too.
        """
        if self.stage == "user_request":
            return 0
        if self.stage == HARNESS and self.turn_count == 1 and self.stop_reason is None:
            return 0  # a message the harness added before the request's first call (a caveat before the request)
        return self.turn_count - 1 if self.stage in ("write_back", "stop", "recover") else self.turn_count


@dataclass(eq=False)
class Thread:
    """One loop of a run: the main one, or a sub-agent's, started by a `tool_use` of its parent."""

    id: str
    parent: str | None = None  # the parent thread's id (None for the main thread)
    parent_tool_use_id: str | None = None  # the tool_use that started it
    system: str | None = None
    tools: list | None = None
    label: str = ""  # a few words on what it was asked, for breadcrumbs and pickers
    messages: list = field(default_factory=list)  # its newest history (a live run's LoopState.messages itself)
    history: History = field(default_factory=History)  # every version of it, by step
    facts: dict = field(default_factory=dict)  # what an importer knew beside (agent id, source file, ...)

    @property
    def is_main(self) -> bool:
        return self.parent is None


class Trace:
    """Steps, the threads with their histories, facts about the run, and a cursor."""

    def __init__(self, meta: dict | None = None, messages: list | None = None, steps: list | None = None,
                 cursor: int = -1, branches: list | None = None, threads: dict | None = None):
        self.meta = meta if meta is not None else {}  # model, system, tools, max_tokens, task, created
        self.steps: list[Step] = steps if steps is not None else []
        self.cursor = cursor  # -1 before the first step
        self.branches: list[Trace] = branches if branches is not None else []  # forks saved with this one
        if threads is None:
            # One thread whose history only grew (a live run starting, a v1 transcript, a derived import).
            messages = messages if messages is not None else []
            threads = {MAIN: Thread(MAIN, system=self.meta.get("system"), tools=self.meta.get("tools"),
                                    messages=messages, history=History(messages))}
        self.threads: dict[str, Thread] = threads
        self._by_thread: dict[str, list[int]] = {}
        self._indexed = 0
        self._compactions = 0  # summarize and compact steps among those indexed

    # -- the main thread's history, as a v1 trace had it --
    @property
    def messages(self) -> list:
        """The main thread's newest history (the final one, once the run has ended)."""
        return self.threads[MAIN].messages

    def __repr__(self) -> str:
        return f"Trace({len(self.steps)} steps, {len(self.threads)} thread(s), cursor {self.cursor})"

    def take(self, longer: "Trace") -> None:
        """This trace becomes `longer`, a later recording of the same run (its steps, threads and facts, shared),
        keeping its own cursor and branches: what holds this object (a page's step) now draws the longer run."""
        self.meta, self.steps, self.threads = longer.meta, longer.steps, longer.threads
        self._by_thread, self._indexed, self._compactions = {}, 0, 0

    def with_branches(self, branches: list) -> "Trace":
        """The same trace (steps, threads and cursor shared) saved with other `branches` beside it."""
        return Trace(self.meta, steps=self.steps, cursor=self.cursor, branches=branches, threads=self.threads)

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

    def recorded(self, index: int) -> tuple:
        """Step `index` as recorded now (the list of steps, the step), for a cache of what was built from it to tell,
        by identity, whether it still holds: a trace taken over by a longer recording has other steps."""
        return self.steps, (self.steps[index] if 0 <= index < len(self.steps) else None)

    @property
    def loop_ended(self) -> bool:
        """Whether the recorded steps end the main loop: a run read from a file may stop before its loop did."""
        return bool(self.steps) and self.steps[-1].ended is not None and self.steps[-1].thread == MAIN

    # -- adding a step --
    def add(self, step: Step, rewritten=()) -> Step:
        """Append `step`; its thread's history is now that thread's `messages` (`rewritten`: slots it replaced)."""
        step.index = len(self.steps)
        thread = self.threads[step.thread]
        thread.history.record(step.index, thread.messages, rewritten)
        self.steps.append(step)
        return step

    def add_thread(self, thread: Thread) -> Thread:
        if thread.id in self.threads:
            raise ValueError(f"thread {thread.id!r} exists already")
        self.threads[thread.id] = thread
        return thread

    # -- threads --
    @property
    def has_threads(self) -> bool:
        return len(self.threads) > 1

    @property
    def has_compaction(self) -> bool:
        self._index()
        return self._compactions > 0

    def thread_of(self, index: int) -> Thread:
        """The thread of step `index` (the main thread before the first step)."""
        return self.threads[self.steps[index].thread] if 0 <= index < len(self.steps) else self.threads[MAIN]

    def path(self, index: int) -> list[Thread]:
        """The threads from the main one down to step `index`'s: the breadcrumb."""
        out = [self.thread_of(index)]
        while out[-1].parent is not None and out[-1].parent in self.threads and len(out) <= len(self.threads):
            out.append(self.threads[out[-1].parent])
        return out[::-1]

    def steps_of(self, thread_id: str) -> list[int]:
        """The indices of a thread's steps, in order."""
        self._index()
        return self._by_thread.get(thread_id, [])

    def _index(self) -> None:
        if self._indexed > len(self.steps):  # steps were taken away: index again
            self._by_thread, self._indexed, self._compactions = {}, 0, 0
        for i in range(self._indexed, len(self.steps)):
            step = self.steps[i]
            self._by_thread.setdefault(step.thread, []).append(i)
            self._compactions += step.stage in MORE_STAGES
        self._indexed = len(self.steps)

    def previous_in_thread(self, index: int) -> int | None:
        """The step of the same thread before step `index`, or None."""
        own = self.steps_of(self.steps[index].thread)
        k = bisect_right(own, index) - 1  # own[k] == index
        return own[k - 1] if k > 0 else None

    def last_in_thread(self, thread_id: str, upto: int) -> int | None:
        """The thread's last step at or before `upto`, or None."""
        own = self.steps_of(thread_id)
        k = bisect_right(own, upto)
        return own[k - 1] if k else None

    def opened_at(self, thread_id: str) -> int | None:
        """The first step of a thread."""
        own = self.steps_of(thread_id)
        return own[0] if own else None

    def returned_at(self, thread_id: str) -> int | None:
        """The parent's run_tool step that took a sub-agent's answer, or None (not yet, or not linked)."""
        thread = self.threads.get(thread_id)
        if thread is None or thread.parent is None or thread.parent_tool_use_id is None:
            return None
        for i in self.steps_of(thread.parent):
            step = self.steps[i]
            if step.stage == "run_tool" and step.detail.tool_use_id == thread.parent_tool_use_id:
                return i
        return None

    # -- what a view needs at step i --
    def messages_at(self, index: int) -> list:
        """The history of step `index`'s thread as its model will see it after step `index`."""
        if not 0 <= index < len(self.steps):
            return []
        step = self.steps[index]
        return self.threads[step.thread].history.at(index, step.n_messages)

    def window_at(self, index: int, start: int, end: int) -> list:
        """messages_at(index)[start:end], without building the rest."""
        if not 0 <= index < len(self.steps):
            return []
        step = self.steps[index]
        return self.threads[step.thread].history.window(index, max(0, start), min(end, step.n_messages))

    def results_at(self, index: int) -> list[dict]:
        """tool_result blocks collected but not yet written back at step `index` (in its thread)."""
        if not 0 <= index < len(self.steps):
            return []
        own = self.steps_of(self.steps[index].thread)
        pending: list[dict] = []
        for k in range(bisect_right(own, index) - 1, -1, -1):
            step = self.steps[own[k]]
            if step.stage != "run_tool":
                break
            pending.append(step.detail.tool_result)
        return pending[::-1]

    def request_at(self, index: int) -> dict | None:
        """The exact body sent at a call_model (or summarize) step: its settings plus the history then."""
        step = self.steps[index]
        if step.stage == "summarize":  # its own request: the summary prompt, not the history
            request = step.detail.request
            return dict(request) if isinstance(request, dict) else None
        if step.stage in ("retry", "refused"):  # a call that failed: what it sent, if it was sent
            request = step.detail.request
            return dict(request, messages=self.messages_at(index)) if isinstance(request, dict) else None
        if step.stage != "call_model":
            return None
        request = dict(step.detail.request)
        request["messages"] = self.messages_at(index)
        return request

    def response_at(self, index: int) -> dict | None:
        step = self.steps[index]
        return step.detail.response if step.stage in ("call_model", "summarize") else None

    def new_blocks_at(self, index: int) -> tuple[int, int]:
        """(first message index, count) of the messages step `index` appended to its thread (none on a rewrite)."""
        step = self.steps[index]
        previous = self.previous_in_thread(index)
        before = self.steps[previous].n_messages if previous is not None else 0
        if step.stage == "compact" or step.n_messages < before:
            return 0, 0
        return before, step.n_messages - before

    def history_before(self, index: int) -> list:
        """The history of step `index`'s thread just before the step (for a compact step: what it rewrote)."""
        previous = self.previous_in_thread(index) if 0 <= index < len(self.steps) else None
        return self.messages_at(previous) if previous is not None else []
