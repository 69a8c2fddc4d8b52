"""Drives the stages one at a time and records each as a step of the trace.

`Run.step()` moves the cursor forward; only at the end of the trace does it
execute the next stage. A stage that raises (an API error, say) leaves the
state and the trace exactly as they were, so the same step can be retried.

Beyond the chapter's five stages, additions hang on the same loop, each in a
module of its own: a `task` tool_use runs a sub-agent's loop (subagent.py),
stepped like the main one, and compaction (compact.py) may rewrite the
history before a call, as a step of its own. The complete profile
(profiles.py) adds more reasons to go on, each a step: `retry` after a call
failed on the way (retry.py), `recover` after an answer cut at max_tokens
(recovery.py), `refused` when the prompt is too long (then compaction), and
runs the tools of one response at once when they are safe (parallel.py).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from . import compact, parallel, profiles, recovery, retry, stages, subagent
from .compact import Compaction
from .endings import GO_ON, MAX_TURNS, why_ended  # noqa: F401 (the runner's names too)
from .rules import tool_uses
from .state import LoopState
from .tools import ToolBox, ToolOutput, Workspace, WorkspaceError
from .toolsets import default_toolbox
from .trace import MAIN, Step, Thread, Trace

if TYPE_CHECKING:
    from .model import Model, Observer


DENIED = ToolOutput("Error: denied by the user. The command was not run.", is_error=True)


class Given:
    """Stands in for the tools with an output the user gave: a denial at the approval gate, an edited result."""

    def __init__(self, output: ToolOutput):
        self.output = output

    def run(self, name, tool_input) -> ToolOutput:
        return self.output


class Attempt:
    """The model, called for attempt k of one call: the complete loop's own retry (the SDK's retry header says so)."""

    def __init__(self, model, attempt: int):
        self.model, self.attempt = model, attempt

    @property
    def config(self):
        return self.model.config

    def create(self, messages: list, tools: list | None = None, observer=None, **settings):
        return self.model.create(messages, tools, observer, attempt=self.attempt, **settings)


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
        self.profile = profiles.PROFILES.get(self.settings.profile) or profiles.PROFILES[profiles.MINIMAL]
        self.sizer = self.compaction or Compaction()  # estimates a request's tokens, for the budget
        self.pool = parallel.ToolPool() if self.profile.parallel else None  # tools started ahead of their step
        self.hold_tools = False  # set by a page whose approval gate is on: no tool starts before its own step
        self.rng = random.Random()  # the retry waits' jitter
        self.sleep = time.sleep  # waits before a retry (a permalink rebuilding a run skips them)
        self.wait_until: float | None = None  # time.time() the next call may go, after a retry step
        self.wait_from, self.skipped = 0.0, False
        self._timings: dict[str, list[dict]] = {}  # each thread's tools of the response at hand: when they ran
        state = LoopState()
        if self.profile.resume:
            state.budget = self.settings.budget or self.profile.budget
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
        if self.profile.complete:  # the chapter's loop writes no profile: its transcripts are as they were
            meta["profile"] = self.profile.name
            meta["budget"] = state.budget
        if model.config.context_window:
            meta["context_window"] = model.config.context_window
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
        if self.pool is not None:
            self.pool.close()
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
        if s.stage == "retry":  # the call that failed, again
            return self._last(frame).detail.get("stage", "call_model")
        if s.stage in ("user_request", "write_back", "compact", "recover", "refused"):
            if s.turn_count > frame.max_turns:
                return "stop"
            due = self._due(frame)
            return "summarize" if due in ("auto", "manual", "resume") else "compact" if due == "micro" else "call_model"
        if s.stage == "summarize":
            return "compact"
        if s.stage == "call_model":
            return "append_assistant"
        if s.stage == "append_assistant":
            return "decide"
        if s.stage == "decide" and s.stop_reason == "max_tokens":  # the complete loop caught the end: continue
            return "recover"
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

    def _last(self, frame: Frame) -> Step:
        return self.trace.steps[self.trace.steps_of(frame.thread.id)[-1]]

    def _due(self, frame: Frame) -> str | None:
        """The compaction the top loop makes before its next call, if any (loop/compact.py says which)."""
        if self.profile.resume:
            resume = self._resume_due(frame)
            if resume:
                return resume
        if self.compaction is None:
            return None
        return self._plan(frame)[0]

    def _resume_due(self, frame: Frame) -> str | None:
        """"resume" when the complete loop compacts before calling again: the API refused the prompt as too long,
        or the history's estimate passes the budget (once between two calls)."""
        own = self.trace.steps_of(frame.thread.id)
        if own and self.trace.steps[own[-1]].stage == "refused":
            return "resume"
        if any(step.detail.get("kind") == "resume" for step in self._compacted(frame)):
            return None
        budget = frame.state.budget
        if budget is not None and len(frame.state.messages) > 1 and self.sizer.estimate(frame.state.messages) > budget:
            return "resume"
        return None

    def _plan(self, frame: Frame) -> tuple[str | None, list]:
        """(the compaction due, micro-compact's changes), worked out once a step: next_stage() is asked often."""
        key = (len(self.trace.steps), frame.thread.id)
        if self._due_cache is None or self._due_cache[0] != key:
            done = [s.detail.get("kind") for s in self._compacted(frame) if s.stage == "compact"]
            kind = "auto" if {"auto", "manual", "resume"} & set(done) else "micro" if done else None
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
        elif stage in ("call_model", "summarize") and self.profile.retries:  # a failure may become a step
            stage, detail = self._call(frame, stage, observer)
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
            if self.profile.recoveries:
                detail.update(self._recovering(s))
        elif stage == "recover":
            recovery.continue_after_cut(s)
            detail = {"k": s.recoveries_in_a_row + 1, "limit": self.profile.recoveries,
                      "not_run": [b.get("id") for b in tool_uses(s.response)]}
        elif stage == "run_tool":
            block = tool_uses(s.response)[len(s.results)]
            tools, timing = (Given(given) if given else frame.tools), None
            if given is None and self.profile.parallel:
                tools, timing = self._tool_for(frame, block)
            output = stages.run_tool(s, tools, block)
            detail = {"tool_use_id": block.get("id"), "name": block.get("name"), "input": block.get("input"),
                      "output": output.content, "is_error": output.is_error, "duration_ms": output.duration_ms,
                      "tool_result": s.results[-1], "given_by_user": by_user}
            if child is not None:
                detail["thread"] = child.thread.id
            if timing:
                detail.update(timing)
        elif stage == "write_back":
            stages.write_back(s)
            detail = {"results": len(s.messages[-1]["content"])}
            timings = self._timings.pop(frame.thread.id, [])
            if len(timings) > 1:
                detail["parallel"] = parallel.batch_timing(timings)
        elif stage == "summarize":
            detail = self._summarize(frame, observer)
        elif stage == "compact":
            detail, rewritten = self._compact(frame)
            if detail["kind"] == "resume":
                s.transition_reason = "compact_resume"
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
        if self.profile.complete:
            profiles.note(s, step)  # the explicit state: retries, recoveries, compactions, transitions
            if stage == "retry" and not detail.get("gave_up"):
                self.wait_from, self.wait_until, self.skipped = step.time, step.time + detail["wait_s"], False
        if child is not None:
            self.frames.pop()
        self.trace.last()
        return step

    # -- the complete loop (profiles.py): retries, recovery, compact-resume, parallel tools --
    def wait_left(self) -> float:
        """Seconds before the next call may go, after a `retry` step (0: it may go now)."""
        if self.wait_until is None or self.done:
            return 0.0
        return max(0.0, self.wait_until - time.time())

    def skip_wait(self) -> None:
        """Let the next call go now, without waiting the rest of the backoff."""
        if self.wait_until is not None and self.wait_left() > 0:
            self.wait_until, self.skipped = time.time(), True

    def _wait(self) -> dict:
        """Wait what is left of the backoff before a call; what was waited, for the call's step."""
        if self.wait_until is None:
            return {}
        left = self.wait_left()
        if left > 0:
            self.sleep(left)
        waited = {"waited_s": round(max(0.0, time.time() - self.wait_from), 3), "skipped": self.skipped}
        self.wait_until = None
        return waited

    def _call(self, frame: Frame, stage: str, observer: Observer | None) -> tuple[str, dict]:
        """A model call of the complete loop (call_model or summarize): the SDK does not retry it, the loop does.

        A failure on the way becomes a `retry` step, a prompt the API refuses as too long a `refused` one; any
        other error ends the stage as it does in the chapter's loop (the page shows it, nothing is recorded).
        """
        s = frame.state
        waited = self._wait()
        model = Attempt(frame.model, s.attempt)
        try:
            if stage == "call_model":
                started = self._early(frame, observer)
                reply = stages.call_model(s, model, frame.tools, started[0])
                if self.pool is not None:
                    self.pool.message_ended(time.perf_counter())
                detail = {"request": reply.request, "response": reply.response, "duration_ms": reply.duration_ms,
                          "retries": reply.retries}
                if started[1]:
                    detail["early_start"] = list(started[1])
            else:
                kind = self._summary_kind(frame)
                detail = self._summarize(frame, observer, model, kind)
        except Exception as exc:
            if self.pool is not None:
                self.pool.forget_early()  # a response that never came: its early tools are not part of it
            stage, detail = self._failed(frame, stage, exc)
            if detail["stage"] == "summarize":
                detail["kind"] = kind
            return stage, detail
        detail["attempt"] = s.attempt
        detail.update(waited)
        return stage, detail

    def _failed(self, frame: Frame, stage: str, exc: Exception) -> tuple[str, dict]:
        s = frame.state
        request = retry.request_of(exc)
        found = retry.too_long(exc) if self.profile.resume else None
        if found:
            tokens, maximum = found
            estimate = self.sizer.estimate(s.messages)
            # The window as the loop's estimate of `messages` counts it: the API also counted what the estimate
            # leaves out (the system prompt, the tools). 10% kept spare. Numbers that leave no room teach nothing.
            room = maximum - max(0, tokens - estimate)
            if room > 0:
                s.budget = min(int(room * 0.9), s.budget or int(room * 0.9))
            detail = {"error": retry.error_facts(exc), "tokens": tokens, "maximum": maximum, "estimate": estimate,
                      "budget": s.budget, "stage": stage, "request": request}
            again = stage == "summarize" or any(step.detail.get("kind") == "resume" for step in self._compacted(frame))
            if again:  # compacted already, and still too long: no compaction can help
                s.ended, s.transition_reason = "prompt_too_long", None
                detail["why"] = compact.STILL_TOO_LONG.format(tokens=tokens, maximum=maximum)
            else:
                s.transition_reason = "compact_resume"
                detail["why"] = compact.REFUSED_WHY.format(tokens=tokens, maximum=maximum)
            return "refused", detail
        if not retry.transient(exc):
            raise exc
        planned = retry.plan(exc, s.attempt - 1, self.rng)
        planned.update(stage=stage, request=request, why=retry.why(planned))
        if planned["gave_up"]:
            s.ended, s.transition_reason = "retries_exhausted", None
        else:
            s.transition_reason = "retry"
        return "retry", planned

    def _recovering(self, s: LoopState) -> dict:
        """After decide: the recovery branch (first match wins), when the answer was cut at max_tokens."""
        if recovery.catch(s, self.profile.recoveries):
            return {"continues": True, "recover": True,
                    "why": recovery.WHY_RECOVER.format(k=s.recoveries_in_a_row + 1, limit=self.profile.recoveries)}
        if s.ended == "max_tokens" and s.recoveries_in_a_row:
            return {"why": recovery.WHY_EXHAUSTED.format(limit=self.profile.recoveries)}
        return {}

    def _early(self, frame: Frame, observer: Observer | None):
        """(the observer of a streamed call, the ids of the tools it started early): with streaming on, a tool
        starts as soon as its block is complete, while every block before it was safe to run at once too."""
        started: list = []
        if self.pool is None or self.hold_tools or not getattr(frame.model.config, "stream", False):
            return observer, started
        from .model import NOBODY

        seen: list[dict] = []

        def on_block(block: dict) -> None:
            if block.get("type") != "tool_use":
                return
            seen.append(block)
            if all(parallel.safe(frame.tools, b) for b in seen):
                self.pool.start(frame.tools, block, early=True)
                started.append(block.get("id"))

        return replace(observer or NOBODY, on_block=on_block), started

    def _tool_for(self, frame: Frame, block: dict) -> tuple[object, dict | None]:
        """(what runs this tool_use, its timing facts): the tools, or a tool started ahead of its step.

        At the first run_tool of a response, when every tool_use of it is safe to run at once, all start now;
        each run_tool step then takes its own result, in tool_use order.
        """
        s = frame.state
        uses = tool_uses(s.response)
        timings = self._timings.setdefault(frame.thread.id, [])
        if not s.results:
            timings.clear()
            if not self.hold_tools and len(uses) > 1 and all(parallel.safe(frame.tools, b) for b in uses):
                for b in uses:
                    self.pool.start(frame.tools, b)
        if not self.pool.has(block.get("id")):
            started = time.perf_counter()
            output = frame.tools.run(block.get("name"), block.get("input"))
            timings.append({"started": started, "finished": time.perf_counter(), "duration_ms": output.duration_ms})
            return Given(output), None
        waiting = time.perf_counter()
        output, timing = self.pool.take(block.get("id"))
        timings.append(timing)
        facts = {"parallel": {"waited_ms": round((time.perf_counter() - waiting) * 1000, 3),
                              "with": sum(1 for b in uses if b is not block)}}
        if "early" in timing:
            facts["early"] = timing["early"]
        return Given(output), facts

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

    def _summary_room(self, frame: Frame) -> int | None:
        """Estimated tokens a resume's summary call may send: 90% of the window the API stated when it refused a
        prompt (the call has no system prompt and no tools), else the budget."""
        for i in reversed(self.trace.steps_of(frame.thread.id)):
            step = self.trace.steps[i]
            if step.stage == "refused" and isinstance(step.detail.get("maximum"), int):
                return int(step.detail["maximum"] * 0.9)
        return frame.state.budget

    def _summary_kind(self, frame: Frame) -> str | None:
        """Which compaction the summary call is for: the one due, or, when it is retried, the one that failed."""
        last = self._last(frame)
        if last.stage == "retry" and last.detail.get("stage") == "summarize":
            return last.detail.get("kind")
        return self._due(frame)

    def _summarize(self, frame: Frame, observer: Observer | None = None, model=None, kind: str | None = ...) -> dict:
        """Auto, manual or resume compaction, part 1: a model call summarises the history (not changed yet)."""
        s = frame.state
        kind = self._summary_kind(frame) if kind is ... else kind
        tokens = self.sizer.estimate(s.messages)
        refused = self._last(frame) if self._last(frame).stage == "refused" else None
        within = self._summary_room(frame) if kind == "resume" else None  # the call must fit the window too
        sent = compact.summary_messages(s.messages, within)
        reply = (model or frame.model).create(sent, None, observer, system=None, max_tokens=compact.SUMMARY_MAX_TOKENS)
        usage = reply.response.get("usage") or {}
        s.input_tokens += usage.get("input_tokens") or 0
        s.output_tokens += usage.get("output_tokens") or 0
        if kind == "resume":
            why = (compact.REFUSED_WHY.format(tokens=refused.detail["tokens"], maximum=refused.detail["maximum"])
                   if refused is not None else compact.BUDGET_WHY.format(tokens=tokens, budget=s.budget))
        elif kind == "auto":
            why = compact.AUTO_WHY.format(tokens=tokens, threshold=self.compaction.threshold)
        else:
            why = compact.MANUAL_WHY
        return {"kind": kind, "why": why, "request": dict(reply.request, messages=sent), "response": reply.response,
                "duration_ms": reply.duration_ms, "retries": reply.retries,
                "summary": compact.summary_text(reply.response)}

    def _compact(self, frame: Frame) -> tuple[dict, list[int]]:
        """Rewrite the history: old tool_results by placeholders (micro), or everything by the summary just made."""
        s = frame.state
        made = self._compacted(frame)
        summary = made[-1].detail if made and made[-1].stage == "summarize" else None
        tokens_before, n_before = self.sizer.estimate(s.messages), len(s.messages)
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
                      tokens_after=self.sizer.estimate(s.messages))
        return detail, rewritten


def start(task: str | None = None, *, scenario: str | None = None, config=None, workspace: Path | str | None = None,
          tool_timeout: float = 30.0, max_turns: int = 20, toolset: str | None = None, lang: str = "en",
          keep_workspace: bool = False, compact_at: int | None = None, profile: str | None = None,
          budget: int | None = None) -> Run:
    """A new run of a built-in scenario or a free task, with a workspace of its own (see `new_workspace`).

    `lang` is the learner's language: a scenario's task is given in it, and the
    system prompt asks the model to write in it (the scripted model does).
    `toolset` picks the tools (loop.toolsets.TOOLSETS; default s01); a scenario made
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
    from .catalogs import known
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
