"""Tools the loop can run, behind one interface (see `base.py`), in a sandbox (see `sandbox.py`)."""

from ..catalogs import N_
from .base import Tool, ToolBox, ToolOutput
from .bash import Bash
from .cgroups import Limits
from .files import EditFile, ReadFile, WriteFile
from .sandbox import Sandbox
from .workspace import Workspace, WorkspaceError

__all__ = ["Bash", "EditFile", "Limits", "ReadFile", "Sandbox", "Tool", "ToolBox", "ToolOutput", "Workspace",
           "WorkspaceError", "WriteFile", "default_toolbox", "TOOLSETS"]

TOOLSETS = {
    "s01": N_("bash (the chapter's one tool)"),
    "s02": N_("bash, read_file, write_file, edit_file (the next chapter's file tools)"),
    "s04": N_("s02's tools and task: a sub-agent with a loop and messages of its own"),
    "s06": N_("s02's tools and compact; the history is compacted before calls"),
}


def default_toolbox(workspace, timeout: float = 30.0, toolset: str = "s01") -> ToolBox:
    """The tools of a run in `workspace` (a path, or a Workspace the box then owns): the chapter's `bash`, with
    s02's file tools, s04's task or s06's compact."""
    tools = [Bash(timeout=timeout)]
    if toolset in ("s02", "s04", "s06"):
        tools += [ReadFile(), WriteFile(), EditFile()]
    if toolset == "s04":
        from ..subagent import Task  # a sub-agent's loop is the runner's to step; the tool only names it

        tools.append(Task())
    if toolset == "s06":
        from ..compact import Compact

        tools.append(Compact())
    return ToolBox(tools, workspace)
