"""The approval gate: a tool_use answered by an output the user gave instead of by the tool.

The chapter's list of what it leaves out starts with a permission gate. Here a
`run_tool` may be answered by `DENIED` (the user said no at the gate) or by an
edited result (a fork): the tool does not run, and the history stays valid
either way, a `tool_result` for every `tool_use`. While the gate is on, no tool
starts ahead of its own step (layer_parallel.py asks `held`).
"""

from __future__ import annotations

from .layers import Layer
from ..tools import ToolOutput

DENIED = ToolOutput("Error: denied by the user. The command was not run.", is_error=True)


class Given:
    """Stands in for the tools with an output the user gave: a denial at the approval gate, an edited result."""

    def __init__(self, output: ToolOutput):
        self.output = output

    def run(self, name, tool_input) -> ToolOutput:
        return self.output


class Gate(Layer):
    wraps = ("run_tool",)

    def __init__(self):
        self.held = False  # on: each tool waits for its own step (and the user's approval)

    def around(self, run, doing, call) -> dict:
        if doing.given is not None:
            doing.tools = Given(doing.given)
        return call(doing)
