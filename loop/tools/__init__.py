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
}


def default_toolbox(workspace, timeout: float = 30.0, toolset: str = "s01") -> ToolBox:
    """The tools of a run in `workspace` (a path, or a Workspace the box then owns): the chapter's `bash`,
    or with s02's file tools beside it."""
    tools = [Bash(timeout=timeout)]
    if toolset == "s02":
        tools += [ReadFile(), WriteFile(), EditFile()]
    return ToolBox(tools, workspace)
