"""Drives the stages one at a time and records each as a step of the trace.

`Run.step()` moves the cursor forward; only at the end of the trace does it execute the next stage. A stage that
raises (an API error, say) leaves the state and the trace exactly as they were, so the same step can be retried.

The runner schedules the chapter's stages (chapter.py) and records them; each addition is a layer that wraps a
stage or adds one (layers.py): a sub-agent's loop, compaction, retry, recovery, compact-resume, parallel tools,
the max turns stop, the approval gate. A profile or a toolset is the list of layers it uses (profiles.py); the
runner names none of their stages.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from . import chapter, compact, layering, layers, profiles, subagent
from .compact import Compaction
from .rules import tool_uses
from .state import Frame, LoopState, Status
from ..tools import ToolBox, ToolOutput, Workspace, WorkspaceError
from .toolsets import default_toolbox
from .trace import MAIN, Step, Thread, Trace

if TYPE_CHECKING:
    from .model import Model, Observer


@dataclass(frozen=True)
class Settings:
    """How a run was set up, besides its task and model: what a fork or a resumed run takes over.

    `toolset` names the built-in toolset (toolsets.TOOLSETS) the run's tools are; None for tools of one's own.
    `lang` is the language the run was started in: its task, the model's words, its notes.
    `compact_at` is s06's threshold.
    """

    max_turns: int = 20
    tool_timeout: float = 30.0
    toolset: str | None = None
    lang: str = "en"
    compact_at: int | None = None  # with toolset s06: the auto-compact threshold (estimated tokens)
    profile: str = profiles.MINIMAL  # the chapter's loop, or "complete" (profiles.py)
    budget: int | None = None  # with the complete profile: estimated tokens a request may hold (default BUDGET)

    def compaction(self) -> Compaction | None:
        """The compaction these settings ask for: s06's, or none (the chapter's loop, whose history only grows)."""
        return Compaction(self.compact_at or compact.THRESHOLD) if self.toolset == "s06" else None


class Run:
    """One live run of the loop: its state, its model, its tools, its settings and its trace.

    `frames` is the stack of loops in progress: the main loop, and on top of it
    the sub-agent a `task` tool_use started, while it runs. Every stage is
    executed on the top frame and recorded as a step of its thread.

    A run owns its tool box, and with it the workspace Loopscope made for it:
    close() (or leaving a `with` block) removes them. A workspace the user
    gave, or one made with keep_workspace=True, stays.
    """

    def __init__(self, task: str, model: Model, tools: ToolBox, max_turns: int = 20, *,
                 settings: Settings | None = None):
        self.task = task
        self.model = model
        self.tools = tools
        self.settings = settings or Settings(max_turns=max_turns)
        self.max_turns = self.settings.max_turns
        self.lang = self.settings.lang  # the language the run was started in: its task, the model's words, its notes
        self.compaction = self.settings.compaction()  # None: the chapter's loop, whose history only grows
        self.profile = profiles.PROFILES.get(self.settings.profile) or profiles.PROFILES[profiles.MINIMAL]
        self.sizer = self.compaction or Compaction()  # estimates a request's tokens, for the budget
        self.rng = random.Random()  # the retry waits' jitter
        self.sleep = time.sleep  # waits before a retry (a permalink rebuilding a run skips them)
        self.layers = layering.make(profiles.layers(self.profile, self.compaction is not None, tools))
        self.gate = layers.the(self.layers, "gate")
        self._hooks = layering.hooks(self.layers)  # asked at each stage, outermost first
        self._calls: dict = {}  # each stage's function, wrapped by the layers around it
        self._to_call = chapter.TO_CALL.union(*(layer.back_to_call for layer in self.layers))
        state = LoopState()
        if self.profile.resume:
            state.budget = self.settings.budget or self.profile.budget
        main = Thread(MAIN, system=model.config.system, tools=tools.specs(), messages=state.messages)
        meta = {"model": model.name, "scripted": model.config.scripted, "system": model.config.system,
                "tools": tools.specs(), "max_tokens": model.config.max_tokens, "task": task, "max_turns": self.max_turns,
                "lang": self.lang, "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if self.settings.toolset:
            meta["toolset"] = self.settings.toolset
        if self.compaction is not None:
            meta["compact_at"] = self.compaction.threshold
        if self.profile.complete:  # the chapter's loop writes no profile: its transcripts are as they were
            meta["profile"] = self.profile.name
            meta["budget"] = state.budget
        if model.config.context_window:
            meta["context_window"] = model.config.context_window
        self.trace = Trace(meta=meta, threads={MAIN: main})
        self.frames = [Frame(main, state, model, tools, task, self.max_turns)]

    def add_outermost(self, layer: layers.Layer) -> None:
        """Put `layer` around every other layer from the next stage on, asked first (a broken branch's mistake)."""
        self.layers.insert(0, layer)
        self._hooks, self._calls = layering.hooks(self.layers), {}  # the stages composed again, around it too
        self._to_call = self._to_call.union(layer.back_to_call)

    @property
    def state(self) -> LoopState:
        """The main loop's state."""
        return self.frames[0].state

    @property
    def frame(self) -> Frame:
        """The loop the next stage belongs to (a sub-agent's while one runs)."""
        return self.frames[-1]

    @property
    def workspace(self) -> Path:
        return self.tools.workspace

    def close(self) -> None:
        """Remove what the run made: its cgroups, and its workspace unless it was given or kept."""
        for layer in self.layers:
            layer.close()
        close = getattr(self.tools, "close", None)  # a stand-in box (a test's) may have nothing to close
        if callable(close):
            close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def done(self) -> bool:
        return self.state.ended is not None

    def next_stage(self) -> str | None:
        """The stage `step()` would execute next, or None when the loop has ended: the chapter's next one, unless
        a layer goes on from its own stage or adds one before it (the first that answers)."""
        frame = self.frames[-1]
        nxt = chapter.next_stage(frame.state, self._to_call)
        for ask in self._hooks["continues"]:
            stage = ask(self, frame, nxt)
            if stage is not None:
                return stage
        for ask in self._hooks["before"]:
            stage = ask(self, frame, nxt)
            if stage is not None:
                return stage
        return nxt

    def step(self, observer: Observer | None = None) -> Step | None:
        """Forward one step: move the cursor, or at the end execute the next stage (`observer` watches a model call)."""
        if not self.trace.at_end:
            self.trace.forward()
            return self.trace.current
        if self.done:
            return None
        return self.execute(observer=observer)

    def run_to_end(self, on_step=None, observer: Observer | None = None) -> None:
        """Execute stages until the loop ends (or max turns stops it); `on_step(step)` after each."""
        self.trace.last()
        while not self.done:
            step = self.execute(observer=observer)
            if on_step:
                on_step(step)

    @property
    def pending_tool_use(self) -> dict | None:
        """The tool_use block the next stage would run, if it is a run_tool stage (for an approval gate)."""
        if self.next_stage() != "run_tool" or self.frames[-1].state.ended:
            return None
        s = self.frames[-1].state
        return tool_uses(s.response)[len(s.results)]

    def execute(self, given: ToolOutput | None = None, observer: Observer | None = None) -> Step:
        """Execute the next stage, append its step and put the cursor on it.

        On a run_tool stage, `given` answers the tool_use with that output
        instead of running the tool (`DENIED` at the approval gate, an edited
        result in a fork), so the history stays valid either way. On a
        call_model stage, `observer` sees the text stream in and each attempt.
        """
        stage = self.next_stage()
        if stage is None:
            raise RuntimeError("the loop has ended")
        doing = layers.Doing(stage, self.frames[-1], given, observer, by_user=given is not None)
        call = self._calls.get(stage) or self._calls.setdefault(stage, layering.compose(self, stage))
        detail = call(doing)
        frame, s = doing.frame, doing.frame.state
        s.stage = doing.stage
        step = Step(
            index=len(self.trace.steps), stage=doing.stage, turn_count=s.turn_count,
            transition_reason=s.transition_reason, stop_reason=s.stop_reason, n_messages=len(s.messages),
            input_tokens=s.input_tokens, output_tokens=s.output_tokens, ended=s.ended, time=time.time(),
            detail=detail, thread=frame.thread.id,
        )
        self.trace.add(step, doing.rewritten)
        if self.profile.complete:
            profiles.note(s, step)  # the explicit state: retries, recoveries, compactions, transitions
        for recorded in self._hooks["recorded"]:
            recorded(self, doing, step)
        self.trace.last()
        return step

    def wait_left(self) -> float:
        """Seconds before the next call may go, after a `retry` step (0: it may go now)."""
        return max((layer.wait_left(self) for layer in self.layers), default=0.0)

    def skip_wait(self) -> None:
        """Let the next call go now, without waiting the rest of the backoff."""
        for layer in self.layers:
            layer.skip_wait(self)

    def approval_gate(self, on: bool) -> None:
        """The page's approval gate is on (or off): no tool starts ahead of its own step while each waits."""
        self.gate.held = on

    def status(self) -> Status:
        """Where the run is, for a page to show: read-only."""
        frame = self.frames[-1]
        s = frame.state
        return Status(next_stage=self.next_stage(), pending_tool_use=self.pending_tool_use, wait_left=self.wait_left(),
                      running=[tool for layer in self.layers for tool in layer.running()], stage=s.stage,
                      ended=s.ended, attempt=s.attempt, attempts=self.profile.retries + 1, in_child=len(self.frames) > 1)


def start(task: str | None = None, *, scenario: str | None = None, config=None, workspace: Path | str | None = None,
          tool_timeout: float = 30.0, max_turns: int = 20, toolset: str | None = None, lang: str = "en",
          keep_workspace: bool = False, compact_at: int | None = None, profile: str | None = None,
          budget: int | None = None) -> Run:
    """A new run of a built-in scenario or a free task, with a workspace of its own (see `new_workspace`).

    `lang` is the learner's language: a scenario's task is given in it, and the
    system prompt asks the model to write in it (the scripted model does).
    `toolset` picks the tools (loop.engine.toolsets.TOOLSETS; default s01); a scenario made
    for a toolset (a sub-agent's, compaction's) brings its own. With s06,
    `compact_at` is the auto-compact threshold in estimated tokens.
    `profile` is the loop's (profiles.py): "minimal", the chapter's, or
    "complete"; by default a scenario's own, else the minimal one. With the
    complete profile the SDK retries nothing (the loop does, as steps), and
    `budget` is the estimated tokens a request may hold before it compacts.

    Close the run when done with it (`with start(...) as run:`): that removes the
    workspace Loopscope made, unless `keep_workspace`. A `workspace` the user
    gives is never changed or removed; WorkspaceError says when commands could
    not run there, and what they would need.
    """
    from ..text.catalogs import known
    from .model import SYSTEM, Model, ModelConfig  # here, not above: importers use this module without the SDK
    from .language import system_prompt
    from .scenarios import SCENARIOS

    lang = known(lang)
    config = config or ModelConfig()
    if scenario is not None:
        if scenario not in SCENARIOS:
            raise KeyError(f"no scenario named {scenario!r}; try: {', '.join(SCENARIOS)}")
        chosen = SCENARIOS[scenario]
        task = chosen.task_in(lang)
        toolset = chosen.toolset or toolset
        compact_at = compact_at or chosen.compact_at
        profile = profile or chosen.profile
        if config.scripted:  # the scenario's budget, e.g. the one that ends on max_tokens, and its context window
            config = replace(config, max_tokens=chosen.max_tokens, context_window=chosen.context_window)
    if not task:
        raise ValueError("a run needs a task or a scenario")
    chosen_profile = profiles.profile(profile)  # KeyError for an unknown one
    if chosen_profile.retries:  # the loop retries, as steps: the SDK's own retries would hide them
        config = replace(config, max_retries=0)
    toolset = toolset or "s01"
    if toolset == "s04" and config.system == SYSTEM:  # the course's s04 tells the parent it may delegate
        config = replace(config, system=SYSTEM + subagent.PARENT_HINT)
    config = replace(config, system=system_prompt(lang, config.system))
    tools = default_toolbox(new_workspace(workspace, keep=keep_workspace), tool_timeout, toolset)
    problem = tools.problem()
    if problem:
        tools.close()
        raise WorkspaceError(f"commands cannot run in this workspace: {problem}")
    return Run(task, Model(config), tools, settings=Settings(max_turns=max_turns, tool_timeout=tool_timeout,
                                                             toolset=toolset, lang=lang, compact_at=compact_at,
                                                             profile=chosen_profile.name, budget=budget))


def new_workspace(path: Path | str | None = None, *, keep: bool = False) -> Workspace:
    """The workspace of one run: the folder at `path` as the user gave it, or a new one Loopscope makes.

    A made one is removed when the tool box (or Run) that holds it is closed,
    unless `keep`; a given one is left as it is. Either works as a path.
    """
    if path is not None:
        return Workspace.given(path)
    return Workspace.make(keep=keep)
