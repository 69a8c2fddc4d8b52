"""The one small interface every tool sits behind, and the box that holds them.

Like the chapter's `run_bash`, a tool takes the model's `input` and returns text
for the model; here it also says whether the run failed, so the `tool_result`
can carry `is_error`. The next chapter's file tools join by adding a class.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .cgroups import Limits
from .sandbox import Sandbox
from .workspace import Workspace


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

    def parallel_safe(self, tool_input: dict) -> bool:
        """May this call run at the same time as others (the complete loop's parallel tools)? Not unless said."""
        return False

    def spec(self) -> dict:
        """The tool as the Messages API's `tools` list wants it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


class ToolBox:
    """The tools of one run, all working inside the same workspace, and the sandbox its commands run in.

    The box owns what the run made: its sandbox's cgroups, and its workspace if
    Loopscope made it (`Workspace.make`). close() removes them; a `Run` closes its box.
    """

    def __init__(self, tools: list[Tool], workspace: Path | Workspace, limits: Limits | None = None):
        self.tools = {tool.name: tool for tool in tools}
        self.space = workspace if isinstance(workspace, Workspace) else Workspace.given(workspace)
        self.workspace = self.space.path
        bash = next((t for t in tools if getattr(t, "sandboxed", False) and hasattr(t, "limits")), None)
        self.sandbox = Sandbox(self.space, limits or (bash.limits if bash else Limits()),
                               getattr(bash, "network", None))

    def specs(self) -> list[dict]:
        return [tool.spec() for tool in self.tools.values()]

    @property
    def warnings(self) -> list[str]:
        """What a learner or teacher should be told about this box's sandbox, one line each; [] when all is well.

        Checked when asked (cheap: a few stat calls), so a page can show it under the run's workspace.
        """
        found: list[str] = list(self.sandbox.warnings()) if any(
            getattr(t, "sandboxed", False) for t in self.tools.values()) else []
        for tool in self.tools.values():
            if getattr(tool, "sandboxed", False):
                continue
            warnings = getattr(tool, "warnings", None)  # a stand-in tool (a test's) may not have it
            for warning in warnings(self.workspace) if callable(warnings) else []:
                if warning not in found:
                    found.append(warning)
        return found

    def problem(self) -> str | None:
        """Why no command of this box can run (e.g. `nobody` cannot enter a given folder); None when they can."""
        return self.sandbox.problem() if any(getattr(t, "sandboxed", False) for t in self.tools.values()) else None

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
                    if getattr(tool, "sandboxed", False):
                        output = tool.run_in(self.sandbox, tool_input)
                    else:
                        output = tool.run(tool_input, self.workspace)
                except Exception as exc:  # a tool bug must not end the lesson
                    output = ToolOutput(f"Error: {name} failed: {type(exc).__name__}: {exc}", True)
        took = (time.perf_counter() - started) * 1000
        return ToolOutput(output.content, output.is_error, round(took, 3))

    def close(self) -> None:
        """Remove the run's cgroups, and its workspace if Loopscope made it (and it is not kept)."""
        self.sandbox.close()
        self.space.close()

    def __enter__(self) -> ToolBox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
