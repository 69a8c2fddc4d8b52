"""Parallel and early-start tools: the tools of one response run at once, started while it streams.

The chapter's table, "tool execution": the minimal loop runs each tool_use
after the whole response is read, in order; a high-completion system runs them
at once, started early while the response streams. This layer wraps call_model
(with streaming on, a safe tool starts as soon as its block is complete),
run_tool (each step takes its own tool's result, in tool_use order) and
write_back (the batch's timing). parallel.py says what is safe and runs them.
"""

from __future__ import annotations

import time
from dataclasses import replace

from . import parallel
from .details import Detail
from .layer_gate import Given
from .layers import Layer
from .rules import tool_uses


class Parallel(Layer):
    wraps = ("call_model", "run_tool", "write_back")

    def __init__(self):
        self.pool = parallel.ToolPool()  # tools started ahead of their step
        self._timings: dict[str, list[dict]] = {}  # each thread's tools of the response at hand: when they ran

    def around(self, run, doing, call) -> Detail:
        if doing.stage == "call_model":
            return self._call(run, doing, call)
        if doing.stage == "run_tool":
            timing = None
            if doing.given is None:
                doing.tools, timing = self._tool_for(run, doing.frame, tool_uses(doing.frame.state.response)[
                    len(doing.frame.state.results)])
            detail = call(doing)
            return replace(detail, **timing) if timing else detail
        detail = call(doing)  # write_back
        timings = self._timings.pop(doing.frame.thread.id, [])
        return replace(detail, parallel=parallel.batch_timing(timings)) if len(timings) > 1 else detail

    def _call(self, run, doing, call) -> Detail:
        doing.observer, started = self._early(run, doing.frame, doing.observer)
        try:
            detail = call(doing)
        except Exception:
            self.pool.forget_early()  # a response that never came: its early tools are not part of it
            raise
        self.pool.message_ended(time.perf_counter())
        return replace(detail, early_start=list(started)) if started else detail

    def _early(self, run, frame, observer):
        """(the observer of a streamed call, the ids of the tools it started early): with streaming on, a tool
        starts as soon as its block is complete, while every block before it was safe to run at once too."""
        started: list = []
        if run.gate.held or not getattr(frame.model.config, "stream", False):
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

    def _tool_for(self, run, frame, block: dict) -> tuple[object, dict | None]:
        """(what runs this tool_use, its timing facts): the tools, or a tool started ahead of its step.

        At the first run_tool of a response, when every tool_use of it is safe to run at once, all start now;
        each run_tool step then takes its own result, in tool_use order.
        """
        s = frame.state
        uses = tool_uses(s.response)
        timings = self._timings.setdefault(frame.thread.id, [])
        if not s.results:
            timings.clear()
            if not run.gate.held and len(uses) > 1 and all(parallel.safe(frame.tools, b) for b in uses):
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

    def running(self) -> list:
        return self.pool.running()

    def close(self) -> None:
        self.pool.close()
