"""The chapter's loop, one function a stage, in the chapter's order.

    user request -> call model -> append assistant -> stop_reason == "tool_use"?
                        ^                                   | no: the loop ends
                        |                                   v yes
                    write back  <------------------  run each tool_use

The runner (`runner.py`) calls them one at a time, so a learner can stop
between any two; everything else (the trace, replay, safety) stays out of here.
"""

from __future__ import annotations

from .blocks import tool_result
from .rules import tool_uses
from .state import LoopState


def user_request(state: LoopState, query: str) -> None:
    """Stage 1: put the user's request into history."""
    state.messages.append({"role": "user", "content": query})


def call_model(state: LoopState, model, tools, observer=None) -> object:
    """Stage 2: call the model with system, messages, tools and max_tokens (`observer` may watch the call)."""
    reply = model.create(messages=state.messages, tools=tools.specs(), observer=observer)
    state.response = reply.response
    state.stop_reason = reply.response.get("stop_reason")
    state.count_usage(reply.response)
    return reply


def append_assistant(state: LoopState) -> None:
    """Stage 3: append the assistant response itself, so the next turn keeps its context."""
    state.messages.append({"role": "assistant", "content": state.response["content"]})


def decide(state: LoopState) -> None:
    """Stage 4a: anything but stop_reason "tool_use" ends the loop."""
    state.results = []  # a new list: the previous one now lives in `messages`
    if state.stop_reason != "tool_use":
        state.transition_reason = None
        state.ended = state.stop_reason or "no stop_reason"
    elif not tool_uses({"content": state.response["content"]}):
        state.transition_reason = None
        state.ended = "tool_use without a tool_use block"


def run_tool(state: LoopState, tools, block: dict):
    """Stage 4b: really run one tool_use block and collect its tool_result."""
    output = tools.run(block.get("name"), block.get("input"))
    state.results.append(tool_result(block.get("id"), output))
    return output


def write_back(state: LoopState) -> None:
    """Stage 5: write every result back as ONE user message, then go round again."""
    state.messages.append({"role": "user", "content": state.results})
    state.turn_count += 1
    state.transition_reason = "tool_result"
