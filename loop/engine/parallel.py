"""Tool execution in the complete loop: several tool_use blocks at once, and a tool started while the answer streams.

The chapter runs each `tool_use` of a response in order, after the whole
response is read. A production harness runs them at once when every one of
them is safe to run together, and with streaming on starts a tool as soon as
its block is complete, before the message ends. Either way the results are
written back in `tool_use` order: one `run_tool` step a block, as in the
chapter, each taking its own tool's result when it is done.

Tools declare what is safe (`Tool.parallel_safe`): reading a file is, writing
or editing one is not, and `bash` only for a short list of read-only commands
(`read_only` in tools/read_only.py). A tool that is not safe, and every block
after it, runs in order as the chapter's loop runs it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..tools import ToolBox, ToolOutput


def safe(tools: ToolBox, block: dict) -> bool:
    """May this tool_use run at the same time as others? (the tool declares it)"""
    tool = tools.tools.get(block.get("name"))
    check = getattr(tool, "parallel_safe", None)
    tool_input = block.get("input")
    return callable(check) and isinstance(tool_input, dict) and bool(check(tool_input))


@dataclass
class Running:
    """One tool started ahead of its run_tool step."""

    future: Future
    started: float  # time.perf_counter() when it started
    early: bool  # started while the response was still streaming
    began: float | None = None  # when a worker began running it (later than `started` when the workers are busy)
    finished: float | None = None
    message_end: float | None = None  # when the response it belongs to was complete (early starts only)


class ToolPool:
    """The tools a run has started ahead of their steps, by tool_use id (threads; a run's tools only)."""

    def __init__(self, workers: int = 8):
        self._executor: ThreadPoolExecutor | None = None
        self._workers = workers
        self._lock = threading.Lock()
        self.started: dict[str, Running] = {}
        self.names: dict[str, str] = {}

    def start(self, tools: ToolBox, block: dict, early: bool = False) -> None:
        """Run `block`'s tool now, in the background (once: a block already started is left as it is)."""
        tool_use_id = str(block.get("id"))
        with self._lock:
            if tool_use_id in self.started:
                return
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="loopscope-tool")
            running = Running(None, time.perf_counter(), early)  # type: ignore[arg-type]

            def work() -> ToolOutput:
                running.began = time.perf_counter()
                try:
                    return tools.run(block.get("name"), block.get("input"))
                finally:
                    running.finished = time.perf_counter()

            running.future = self._executor.submit(work)
            self.started[tool_use_id] = running
            self.names[tool_use_id] = str(block.get("name"))

    def has(self, tool_use_id: object) -> bool:
        return str(tool_use_id) in self.started

    def message_ended(self, at: float) -> None:
        """The response being streamed is complete: what was started early learns how early."""
        for running in self.started.values():
            if running.early and running.message_end is None:
                running.message_end = at

    def forget_early(self) -> None:
        """The stream broke before its message was complete: the tools it started are of no response (they were
        read-only; they finish on their own)."""
        with self._lock:
            for tool_use_id in [k for k, r in self.started.items() if r.early and r.message_end is None]:
                del self.started[tool_use_id]
                self.names.pop(tool_use_id, None)

    def take(self, tool_use_id: object) -> tuple[ToolOutput, dict]:
        """Wait for the tool's output; (output, its timing: started/finished relative to now, early savings)."""
        running = self.started.pop(str(tool_use_id))
        self.names.pop(str(tool_use_id), None)
        output = running.future.result()
        finished = running.finished or time.perf_counter()
        timing = {"started": running.started, "began": running.began or running.started, "finished": finished,
                  "duration_ms": round(output.duration_ms, 3)}
        if running.early and running.message_end is not None:
            ahead = max(0.0, running.message_end - running.started)
            timing["early"] = {"started_before_end_ms": round(ahead * 1000, 3),
                               "saved_ms": round(min(ahead * 1000, output.duration_ms), 3)}
        return output, timing

    def running(self) -> list[tuple[str, str, float]]:
        """(tool_use id, tool name, seconds so far) of each tool started and not yet finished."""
        now = time.perf_counter()
        return [(tid, self.names.get(tid, ""), now - r.started) for tid, r in list(self.started.items())
                if r.finished is None]

    def close(self) -> None:
        """Let running tools finish, then drop the threads (a run's close)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        self.started.clear()


def batch_timing(timings: list[dict]) -> dict:
    """Wall time beside the sum, for the tools of one response that ran at once; and when each ran (`ran_ms`: when
    it began and ended, in ms from the first start, in tool_use order), which shows them overlap."""
    first = min(t["started"] for t in timings)
    wall = max(t["finished"] for t in timings) - first
    out = {"tools": len(timings), "wall_ms": round(wall * 1000, 3),
           "sum_ms": round(sum(t["duration_ms"] for t in timings), 3),
           "ran_ms": [[round((t.get("began", t["started"]) - first) * 1000, 3),
                       round((t["finished"] - first) * 1000, 3)] for t in timings]}
    saved = sum(t["early"]["saved_ms"] for t in timings if "early" in t)
    if any("early" in t for t in timings):
        out["early_saved_ms"] = round(saved, 3)
    return out
