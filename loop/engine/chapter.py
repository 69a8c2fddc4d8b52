"""The chapter's loop as the runner drives it: which stage comes next, and what each stage's step records.

    user_request -> call_model -> append_assistant -> decide -> run_tool x n -> write_back -> call_model ...

The stages themselves are stages.py's; this module adds only what a step keeps of
each. What grows around the loop (retry, compaction, sub-agents...) is in the
layers (layers.py), never here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import stages
from .details import (AppendAssistantDetail, CallModelDetail, DecideDetail, Detail, RunToolDetail, UserRequestDetail,
                      WriteBackDetail)
from .endings import GO_ON, why_ended
from .rules import tool_uses

if TYPE_CHECKING:
    from .layers import Doing, Run

TO_CALL = frozenset({"user_request", "write_back"})  # after these the loop calls the model


def next_stage(s, to_call=TO_CALL) -> str | None:
    """The chapter's next stage after the state's last one (None once the loop has ended).

    `to_call` adds the stages of layers after which the loop calls the model again."""
    if s.ended:
        return None
    if s.stage is None:
        return "user_request"
    if s.stage in to_call:
        return "call_model"
    if s.stage == "call_model":
        return "append_assistant"
    if s.stage == "append_assistant":
        return "decide"
    return "run_tool" if len(s.results) < len(tool_uses(s.response or {})) else "write_back"


def user_request(run: Run, doing: Doing) -> Detail:
    frame = doing.frame
    stages.user_request(frame.state, frame.task)
    return UserRequestDetail(task=frame.task)


def call_model(run: Run, doing: Doing) -> Detail:
    frame = doing.frame
    reply = stages.call_model(frame.state, doing.model or frame.model, frame.tools, doing.observer)
    return CallModelDetail(request=reply.request, response=reply.response, duration_ms=reply.duration_ms,
                           retries=reply.retries)


def append_assistant(run: Run, doing: Doing) -> Detail:
    stages.append_assistant(doing.frame.state)
    return AppendAssistantDetail()


def decide(run: Run, doing: Doing) -> Detail:
    s = doing.frame.state
    stages.decide(s)
    return DecideDetail(continues=not s.ended, why=GO_ON if not s.ended else why_ended(s.stop_reason))


def run_tool(run: Run, doing: Doing) -> Detail:
    s = doing.frame.state
    block = tool_uses(s.response)[len(s.results)]
    output = stages.run_tool(s, doing.tools or doing.frame.tools, block)
    return RunToolDetail(tool_use_id=block.get("id"), name=block.get("name"), input=block.get("input"),
                         output=output.content, is_error=output.is_error, duration_ms=output.duration_ms,
                         tool_result=s.results[-1], given_by_user=doing.by_user)


def write_back(run: Run, doing: Doing) -> Detail:
    s = doing.frame.state
    stages.write_back(s)
    return WriteBackDetail(results=len(s.messages[-1]["content"]))


STAGES = {"user_request": user_request, "call_model": call_model, "append_assistant": append_assistant,
          "decide": decide, "run_tool": run_tool, "write_back": write_back}
