"""The one small interface every tool sits behind, and the box that holds them.

Like the chapter's `run_bash`, a tool takes the model's `input` and returns text
for the model; here it also says whether the run failed, so the `tool_result`
can carry `is_error`. The next chapter's file tools join by adding a class.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ToolOutput:
    """What a tool run gives back to the model."""

    content: str
    is_error: bool = False
    duration_ms: float = 0.0


class Tool:
    """A tool the model may ask for: a name, a description, a JSON schema and `run`."""

    name: str = ""
    description: str = ""
    input_schema: dict = {}

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:  # pragma: no cover - interface
        raise NotImplementedError

    def warnings(self, workspace: Path) -> list[str]:
        """One-line warnings about running this tool in `workspace` (e.g. commands would run as root); none here."""
        return []

    def spec(self) -> dict:
        """The tool as the Messages API's `tools` list wants it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


class ToolBox:
    """The tools of one run, all working inside the same workspace."""

    def __init__(self, tools: list[Tool], workspace: Path):
        self.tools = {tool.name: tool for tool in tools}
        self.workspace = Path(workspace)

    def specs(self) -> list[dict]:
        return [tool.spec() for tool in self.tools.values()]

    @property
    def warnings(self) -> list[str]:
        """What a learner or teacher should be told about this box's sandbox, one line each; [] when all is well.

        Checked when asked (cheap: a few stat calls), so a page can show it under the run's workspace.
        """
        found: list[str] = []
        for tool in self.tools.values():
            warnings = getattr(tool, "warnings", None)  # a stand-in tool (a test's) may not have it
            for warning in warnings(self.workspace) if callable(warnings) else []:
                if warning not in found:
                    found.append(warning)
        return found

    def run(self, name: str, tool_input: object) -> ToolOutput:
        """Run one `tool_use` block's tool; every failure becomes an error output, never an exception."""
        started = time.perf_counter()
        tool = self.tools.get(name)
        if tool is None:
            output = ToolOutput(f"Error: there is no tool named {name!r}. Available: {', '.join(self.tools)}.", True)
        elif not isinstance(tool_input, dict):
            output = ToolOutput(f"Error: the input of {name} must be a JSON object, got {type(tool_input).__name__}.", True)
        else:
            missing = [k for k in tool.input_schema.get("required", []) if k not in tool_input]
            if missing:
                output = ToolOutput(f"Error: {name} needs {', '.join(missing)} in its input.", True)
            else:
                try:
                    output = tool.run(tool_input, self.workspace)
                except Exception as exc:  # a tool bug must not end the lesson
                    output = ToolOutput(f"Error: {name} failed: {type(exc).__name__}: {exc}", True)
        took = (time.perf_counter() - started) * 1000
        return ToolOutput(output.content, output.is_error, round(took, 3))
