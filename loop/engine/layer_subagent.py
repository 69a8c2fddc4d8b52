"""Sub-agents (the course's s04): a `task` tool_use runs a child loop, stepped like the parent's.

Not a row of the chapter's table but its next chapters' first addition: the
parent's `run_tool` of a `task` becomes the child's `user_request`, the child's
stages run on a frame of its own (its thread, messages, system prompt, tools),
and when the child's loop ends the parent's `run_tool` takes its final text as
the tool_result. subagent.py says what a child is made of.
"""

from __future__ import annotations

from dataclasses import replace

from . import subagent
from .details import Detail
from .layers import Layer
from .rules import tool_uses
from .state import Frame, LoopState
from .trace import Thread


class SubAgent(Layer):
    wraps = ("user_request", "run_tool")

    def continues(self, run, frame, nxt):
        if frame.state.ended:  # the child is done: its parent's run_tool takes its answer
            return "run_tool" if len(run.frames) > 1 else None
        return None

    def before(self, run, frame, nxt):
        if nxt == "run_tool":
            s = frame.state
            if subagent.starts_child(frame.tools, tool_uses(s.response)[len(s.results)]):
                return "user_request"
        return None

    def around(self, run, doing, call) -> Detail:
        if doing.stage == "run_tool" and doing.frame.state.ended:
            doing.child, doing.frame = doing.frame, run.frames[-2]
            if doing.given is None:
                doing.given = subagent.answer(doing.child.state)
            return replace(call(doing), thread=doing.child.thread.id)
        if doing.stage != "user_request":
            return call(doing)
        if doing.frame.state.stage is not None:  # the parent is at a task: the child's loop begins
            doing.frame = self.open_child(run, doing.frame)
        detail = call(doing)
        if doing.frame.thread.parent is not None:
            return replace(detail, started_by=doing.frame.thread.parent_tool_use_id)
        return detail

    def recorded(self, run, doing, step) -> None:
        if doing.child is not None:
            run.frames.pop()

    def open_child(self, run, parent):
        """A sub-agent's loop for the task tool_use the parent is at: fresh messages, its own system prompt and
        tools."""
        block = tool_uses(parent.state.response)[len(parent.state.results)]
        state = LoopState()
        tools = subagent.child_tools(parent.tools)
        thread = run.trace.add_thread(Thread(
            subagent.thread_id(block), parent=parent.thread.id, parent_tool_use_id=block.get("id"),
            system=subagent.system(run.lang), tools=tools.specs(), label=subagent.label(block),
            messages=state.messages))
        frame = Frame(thread, state, subagent.ThreadModel(run.model, thread.system), tools,
                      block["input"]["prompt"], subagent.MAX_TURNS)
        run.frames.append(frame)
        return frame
