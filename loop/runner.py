"""Drives the stages one at a time and records each as a step of the trace.

`Run.step()` moves the cursor forward; only at the end of the trace does it
execute the next stage. A stage that raises (an API error, say) leaves the
state and the trace exactly as they were, so the same step can be retried.

Beyond the chapter's five stages, two additions hang on the same loop, each in
a module of its own: a `task` tool_use runs a sub-agent's loop (subagent.py),
stepped like the main one, and compaction (compact.py) may rewrite the
history before a call, as a step of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from . import compact, stages, subagent
from .catalogs import N_, say
from .compact import Compaction
from .rules import tool_uses
from .state import LoopState
from .tools import ToolBox, ToolOutput, Workspace, WorkspaceError, default_toolbox
from .trace import MAIN, Step, Thread, Trace

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
    `compact_at` is s06's threshold.
    """

    max_turns: int = 20
    tool_timeout: float = 30.0
    toolset: str | None = None
    lang: str = "en"
    compact_at: int | None = None  # with toolset s06: the auto-compact threshold (estimated tokens)

    def compaction(self) -> Compaction | None:
        """The compaction these settings ask for: s06's, or none (the chapter's loop, whose history only grows)."""
        return Compaction(self.compact_at or compact.THRESHOLD) if self.toolset == "s06" else None


@dataclass(eq=False)
class Frame:
    """One loop in progress: the main one, or a sub-agent's that a `task` tool_use started."""

    thread: Thread
    state: LoopState
    model: object  # a Model, or a subagent.ThreadModel with the child's system prompt
    tools: ToolBox
    task: str
    max_turns: int


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
        state = LoopState()
        main = Thread(MAIN, system=model.config.system, tools=tools.specs(), messages=state.messages)
        meta = {
            "model": model.name,
            "scripted": model.config.scripted,
            "system": model.config.system,
            "tools": tools.specs(),
            "max_tokens": model.config.max_tokens,
            "task": task,
            "max_turns": self.max_turns,
            "lang": self.lang,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        if self.settings.toolset:
            meta["toolset"] = self.settings.toolset
        if self.compaction is not None:
            meta["compact_at"] = self.compaction.threshold
        self.trace = Trace(meta=meta, threads={MAIN: main})
        self.frames = [Frame(main, state, model, tools, task, self.max_turns)]
        self._due_cache: tuple | None = None

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
        frame = self.frames[-1]
        s = frame.state
        if s.ended:  # a sub-agent that has finished hands its answer to its parent's run_tool
            return "run_tool" if len(self.frames) > 1 else None
        if s.stage is None:
            return "user_request"
        if s.stage in ("user_request", "write_back", "compact"):
            if s.turn_count > frame.max_turns:
                return "stop"
            due = self._due(frame)
            return "summarize" if due in ("auto", "manual") else "compact" if due == "micro" else "call_model"
        if s.stage == "summarize":
            return "compact"
        if s.stage == "call_model":
            return "append_assistant"
        if s.stage == "append_assistant":
            return "decide"
        uses = tool_uses(s.response)
        if len(s.results) < len(uses):
            return "user_request" if subagent.starts_child(frame.tools, uses[len(s.results)]) else "run_tool"
        return "write_back"

    def _compacted(self, frame: Frame) -> list[Step]:
        """The thread's compaction steps since its last call (the newest last)."""
        own = self.trace.steps_of(frame.thread.id)
        made = []
        for i in reversed(own):
            if self.trace.steps[i].stage not in ("compact", "summarize"):
                break
            made.append(self.trace.steps[i])
        return made[::-1]

    def _due(self, frame: Frame) -> str | None:
        """The compaction the top loop makes before its next call, if any (loop/compact.py says which)."""
        if self.compaction is None:
            return None
        return self._plan(frame)[0]

    def _plan(self, frame: Frame) -> tuple[str | None, list]:
        """(the compaction due, micro-compact's changes), worked out once a step: next_stage() is asked often."""
        key = (len(self.trace.steps), frame.thread.id)
        if self._due_cache is None or self._due_cache[0] != key:
            done = [s.detail.get("kind") for s in self._compacted(frame) if s.stage == "compact"]
            kind = "auto" if {"auto", "manual"} & set(done) else "micro" if done else None
            self._due_cache = (key, self.compaction.due(frame.state.messages, kind))
        return self._due_cache[1]

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
        frame = self.frames[-1]
        child = None
        by_user = given is not None
        if frame.state.ended:  # the sub-agent is done: its final text is the parent's tool_result
            child, frame = frame, self.frames[-2]
            given = given or subagent.answer(child.state)
        elif stage == "user_request" and frame.state.stage is not None:  # a task: the sub-agent's loop begins
            frame = self._open_child(frame)
        s = frame.state
        detail: dict = {}
        rewritten: list[int] = []
        if stage == "user_request":
            stages.user_request(s, frame.task)
            detail = {"task": frame.task}
            if frame.thread.parent is not None:
                detail["started_by"] = frame.thread.parent_tool_use_id
        elif stage == "call_model":
            reply = stages.call_model(s, frame.model, frame.tools, observer)
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
            output = stages.run_tool(s, Given(given) if given else frame.tools, block)
            detail = {"tool_use_id": block.get("id"), "name": block.get("name"), "input": block.get("input"),
                      "output": output.content, "is_error": output.is_error, "duration_ms": output.duration_ms,
                      "tool_result": s.results[-1], "given_by_user": by_user}
            if child is not None:
                detail["thread"] = child.thread.id
        elif stage == "write_back":
            stages.write_back(s)
            detail = {"results": len(s.messages[-1]["content"])}
        elif stage == "summarize":
            detail = self._summarize(frame, observer)
        elif stage == "compact":
            detail, rewritten = self._compact(frame)
        elif stage == "stop":
            s.ended = "max_turns"
            detail = {"why": MAX_TURNS.format(n=frame.max_turns)}
        s.stage = stage
        step = Step(
            index=len(self.trace.steps), stage=stage, turn_count=s.turn_count,
            transition_reason=s.transition_reason, stop_reason=s.stop_reason, n_messages=len(s.messages),
            input_tokens=s.input_tokens, output_tokens=s.output_tokens, ended=s.ended, time=time.time(),
            detail=detail, thread=frame.thread.id,
        )
        self.trace.add(step, rewritten)
        if child is not None:
            self.frames.pop()
        self.trace.last()
        return step

    def _open_child(self, parent: Frame) -> Frame:
        """A sub-agent's loop for the task tool_use the parent is at: fresh messages, its own system prompt and tools."""
        block = tool_uses(parent.state.response)[len(parent.state.results)]
        state = LoopState()
        tools = subagent.child_tools(parent.tools)
        thread = self.trace.add_thread(Thread(
            subagent.thread_id(block), parent=parent.thread.id, parent_tool_use_id=block.get("id"),
            system=subagent.system(self.lang), tools=tools.specs(), label=subagent.label(block),
            messages=state.messages))
        frame = Frame(thread, state, subagent.ThreadModel(self.model, thread.system), tools,
                      block["input"]["prompt"], subagent.MAX_TURNS)
        self.frames.append(frame)
        return frame

    def _summarize(self, frame: Frame, observer: Observer | None = None) -> dict:
        """Auto or manual compaction, part 1: a model call summarises the history (the history is not changed yet)."""
        s = frame.state
        kind = self._due(frame)
        sent = compact.summary_messages(s.messages)
        reply = frame.model.create(sent, None, observer, system=None, max_tokens=compact.SUMMARY_MAX_TOKENS)
        usage = reply.response.get("usage") or {}
        s.input_tokens += usage.get("input_tokens") or 0
        s.output_tokens += usage.get("output_tokens") or 0
        tokens = self.compaction.estimate(s.messages)
        why = (compact.AUTO_WHY.format(tokens=tokens, threshold=self.compaction.threshold) if kind == "auto"
               else compact.MANUAL_WHY)
        return {"kind": kind, "why": why, "request": dict(reply.request, messages=sent), "response": reply.response,
                "duration_ms": reply.duration_ms, "retries": reply.retries,
                "summary": compact.summary_text(reply.response)}

    def _compact(self, frame: Frame) -> tuple[dict, list[int]]:
        """Rewrite the history: old tool_results by placeholders (micro), or everything by the summary just made."""
        s = frame.state
        made = self._compacted(frame)
        summary = made[-1].detail if made and made[-1].stage == "summarize" else None
        tokens_before, n_before = self.compaction.estimate(s.messages), len(s.messages)
        if summary is None:
            changes = self._plan(frame)[1]
            blocks = sum(a is not b for i, m in changes for a, b in zip(s.messages[i]["content"], m["content"]))
            detail = {"kind": "micro", "replaced": [{"index": i, "message": s.messages[i]} for i, _ in changes],
                      "why": compact.MICRO_WHY.format(n=blocks, keep=compact.KEEP_RECENT)}
            for i, message in changes:
                s.messages[i] = message
            rewritten = [i for i, _ in changes]
        else:
            detail = {"kind": summary["kind"], "history_before": list(s.messages), "summary": summary["summary"],
                      "why": compact.SUMMARY_WHY}
            s.messages[:] = compact.summarized(summary["summary"])
            rewritten = list(range(len(s.messages)))
        detail.update(messages_before=n_before, messages_after=len(s.messages), tokens_before=tokens_before,
                      tokens_after=self.compaction.estimate(s.messages))
        return detail, rewritten


def start(task: str | None = None, *, scenario: str | None = None, config=None, workspace: Path | str | None = None,
          tool_timeout: float = 30.0, max_turns: int = 20, toolset: str | None = None, lang: str = "en",
          keep_workspace: bool = False, compact_at: int | None = None) -> Run:
    """A new run of a built-in scenario or a free task, with a workspace of its own (see `new_workspace`).

    `lang` is the learner's language: a scenario's task is given in it, and the
    system prompt asks the model to write in it (the scripted model does).
    `toolset` picks the tools (loop.tools.TOOLSETS; default s01); a scenario made
    for a toolset (a sub-agent's, compaction's) brings its own. With s06,
    `compact_at` is the auto-compact threshold in estimated tokens.

    Close the run when done with it (`with start(...) as run:`): that removes the
    workspace Loopscope made, unless `keep_workspace`. A `workspace` the user
    gives is never changed or removed; WorkspaceError says when commands could
    not run there, and what they would need.
    """
    from dataclasses import replace

    from .catalogs import known
    from .model import SYSTEM, Model, ModelConfig  # here, not above: importers use this module without the SDK
    from .scripted import SCENARIOS, system_prompt

    lang = known(lang)
    config = config or ModelConfig()
    if scenario is not None:
        if scenario not in SCENARIOS:
            raise KeyError(f"no scenario named {scenario!r}; try: {', '.join(SCENARIOS)}")
        chosen = SCENARIOS[scenario]
        task = chosen.task_in(lang)
        toolset = chosen.toolset or toolset
        compact_at = compact_at or chosen.compact_at
        if config.scripted:  # the scenario's budget, e.g. the one that ends on max_tokens
            config = replace(config, max_tokens=chosen.max_tokens)
    if not task:
        raise ValueError("a run needs a task or a scenario")
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
                                                             toolset=toolset, lang=lang, compact_at=compact_at))


def new_workspace(path: Path | str | None = None, *, keep: bool = False) -> Workspace:
    """The workspace of one run: the folder at `path` as the user gave it, or a new one Loopscope makes.

    A made one is removed when the tool box (or Run) that holds it is closed,
    unless `keep`; a given one is left as it is. Either works as a path.
    """
    if path is not None:
        return Workspace.given(path)
    return Workspace.make(keep=keep)
