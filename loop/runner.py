"""Drives the stages one at a time and records each as a step of the trace.

`Run.step()` moves the cursor forward; only at the end of the trace does it
execute the next stage. A stage that raises (an API error, say) leaves the
state and the trace exactly as they were, so the same step can be retried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from . import stages
from .catalogs import N_, say
from .rules import tool_uses
from .state import LoopState
from .tools import ToolBox, ToolOutput, Workspace, WorkspaceError, default_toolbox
from .trace import Step, Trace

if TYPE_CHECKING:
    from .model import Model, Observer

END_WORDS = {
    "end_turn": N_("the model finished its answer (end_turn)"),
    "max_tokens": N_("the answer was cut at max_tokens; the loop ends, it does not go on"),
    "stop_sequence": N_("the model hit a stop sequence"),
    "refusal": N_("the model refused"),
    "pause_turn": N_("the server paused a long turn; the s01 loop ends here"),
    "model_context_window_exceeded": N_("the context window is full"),
}
OTHER_END = N_("stop_reason {stop_reason} is not tool_use, so the loop ends")
GO_ON = N_("stop_reason is tool_use: run the tools")
MAX_TURNS = N_("max turns ({n}) reached: the loop was stopped before calling the model again")


DENIED = ToolOutput("Error: denied by the user. The command was not run.", is_error=True)


class Given:
    """Stands in for the tools with an output the user gave: a denial at the approval gate, an edited result."""

    def __init__(self, output: ToolOutput):
        self.output = output

    def run(self, name, tool_input) -> ToolOutput:
        return self.output


def why_ended(stop_reason: str | None, lang: str = "en") -> str:
    """Why the loop ended, in `lang` (the trace keeps the English)."""
    words = END_WORDS.get(stop_reason or "")
    return say(lang, words) if words else say(lang, OTHER_END, stop_reason=repr(stop_reason))


@dataclass(frozen=True)
class Settings:
    """How a run was set up, besides its task and model: what a fork or a resumed run takes over.

    `toolset` names the built-in toolset (tools/TOOLSETS) the run's tools are; None for tools of one's own.
    `lang` is the language the run was started in: its task, the model's words, its notes.
    """

    max_turns: int = 20
    tool_timeout: float = 30.0
    toolset: str | None = None
    lang: str = "en"


class Run:
    """One live run of the loop: its state, its model, its tools, its settings and its trace.

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
        self.state = LoopState()
        self.trace = Trace(meta={
            "model": model.name,
            "scripted": model.config.scripted,
            "system": model.config.system,
            "tools": tools.specs(),
            "max_tokens": model.config.max_tokens,
            "task": task,
            "max_turns": self.max_turns,
            "lang": self.lang,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }, messages=self.state.messages)

    @property
    def workspace(self) -> Path:
        return self.tools.workspace

    def close(self) -> None:
        """Remove what the run made: its cgroups, and its workspace unless it was given or kept."""
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
        """The stage `step()` would execute next, or None when the loop has ended."""
        s = self.state
        if s.ended:
            return None
        if s.stage is None:
            return "user_request"
        if s.stage in ("user_request", "write_back"):
            return "stop" if s.turn_count > self.max_turns else "call_model"
        if s.stage == "call_model":
            return "append_assistant"
        if s.stage == "append_assistant":
            return "decide"
        return "run_tool" if len(s.results) < len(tool_uses(s.response)) else "write_back"

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
        if self.next_stage() != "run_tool":
            return None
        return tool_uses(self.state.response)[len(self.state.results)]

    def execute(self, given: ToolOutput | None = None, observer: Observer | None = None) -> Step:
        """Execute the next stage, append its step and put the cursor on it.

        On a run_tool stage, `given` answers the tool_use with that output
        instead of running the tool (`DENIED` at the approval gate, an edited
        result in a fork), so the history stays valid either way. On a
        call_model stage, `observer` sees the text stream in and each attempt.
        """
        s = self.state
        stage = self.next_stage()
        detail: dict = {}
        if stage == "user_request":
            stages.user_request(s, self.task)
            detail = {"task": self.task}
        elif stage == "call_model":
            reply = stages.call_model(s, self.model, self.tools, observer)
            detail = {"request": reply.request, "response": reply.response,
                      "duration_ms": reply.duration_ms, "retries": reply.retries}
        elif stage == "append_assistant":
            stages.append_assistant(s)
        elif stage == "decide":
            stages.decide(s)
            detail = {"continues": not s.ended,
                      "why": GO_ON if not s.ended else why_ended(s.stop_reason)}
        elif stage == "run_tool":
            block = tool_uses(s.response)[len(s.results)]
            output = stages.run_tool(s, Given(given) if given else self.tools, block)
            detail = {"tool_use_id": block.get("id"), "name": block.get("name"), "input": block.get("input"),
                      "output": output.content, "is_error": output.is_error, "duration_ms": output.duration_ms,
                      "tool_result": s.results[-1], "given_by_user": given is not None}
        elif stage == "write_back":
            stages.write_back(s)
            detail = {"results": len(s.messages[-1]["content"])}
        elif stage == "stop":
            s.ended = "max_turns"
            detail = {"why": MAX_TURNS.format(n=self.max_turns)}
        else:  # pragma: no cover - next_stage returns only the above
            raise RuntimeError("the loop has ended")
        s.stage = stage
        step = Step(
            index=len(self.trace.steps), stage=stage, turn_count=s.turn_count,
            transition_reason=s.transition_reason, stop_reason=s.stop_reason, n_messages=len(s.messages),
            input_tokens=s.input_tokens, output_tokens=s.output_tokens, ended=s.ended, time=time.time(),
            detail=detail,
        )
        self.trace.steps.append(step)
        self.trace.last()
        return step


def start(task: str | None = None, *, scenario: str | None = None, config=None, workspace: Path | str | None = None,
          tool_timeout: float = 30.0, max_turns: int = 20, toolset: str = "s01", lang: str = "en",
          keep_workspace: bool = False) -> Run:
    """A new run of a built-in scenario or a free task, with a workspace of its own (see `new_workspace`).

    `lang` is the learner's language: a scenario's task is given in it, and the
    system prompt asks the model to write in it (the scripted model does).

    Close the run when done with it (`with start(...) as run:`): that removes the
    workspace Loopscope made, unless `keep_workspace`. A `workspace` the user
    gives is never changed or removed; WorkspaceError says when commands could
    not run there, and what they would need.
    """
    from dataclasses import replace

    from .catalogs import known
    from .model import Model, ModelConfig  # here, not above: importers use this module without the SDK
    from .scripted import SCENARIOS, system_prompt

    lang = known(lang)
    config = config or ModelConfig()
    config = replace(config, system=system_prompt(lang, config.system))
    if scenario is not None:
        if scenario not in SCENARIOS:
            raise KeyError(f"no scenario named {scenario!r}; try: {', '.join(SCENARIOS)}")
        task = SCENARIOS[scenario].task_in(lang)
        if config.scripted:  # the scenario's budget, e.g. the one that ends on max_tokens
            config = replace(config, max_tokens=SCENARIOS[scenario].max_tokens)
    if not task:
        raise ValueError("a run needs a task or a scenario")
    tools = default_toolbox(new_workspace(workspace, keep=keep_workspace), tool_timeout, toolset)
    problem = tools.problem()
    if problem:
        tools.close()
        raise WorkspaceError(f"commands cannot run in this workspace: {problem}")
    return Run(task, Model(config), tools,
               settings=Settings(max_turns=max_turns, tool_timeout=tool_timeout, toolset=toolset, lang=lang))


def new_workspace(path: Path | str | None = None, *, keep: bool = False) -> Workspace:
    """The workspace of one run: the folder at `path` as the user gave it, or a new one Loopscope makes.

    A made one is removed when the tool box (or Run) that holds it is closed,
    unless `keep`; a given one is left as it is. Either works as a path.
    """
    if path is not None:
        return Workspace.given(path)
    return Workspace.make(keep=keep)
