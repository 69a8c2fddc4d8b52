"""Tools the loop can run, behind one interface (see `base.py`)."""

from ..catalogs import N_
from .base import Tool, ToolBox, ToolOutput
from .bash import Bash
from .files import EditFile, ReadFile, WriteFile

__all__ = ["Bash", "EditFile", "ReadFile", "Tool", "ToolBox", "ToolOutput", "WriteFile", "default_toolbox",
           "TOOLSETS"]

TOOLSETS = {
    "s01": N_("bash (the chapter's one tool)"),
    "s02": N_("bash, read_file, write_file, edit_file (the next chapter's file tools)"),
}


def default_toolbox(workspace, timeout: float = 30.0, toolset: str = "s01") -> ToolBox:
    """The tools of a run in `workspace`: the chapter's `bash`, or with s02's file tools beside it."""
    tools = [Bash(timeout=timeout)]
    if toolset == "s02":
        tools += [ReadFile(), WriteFile(), EditFile()]
    return ToolBox(tools, workspace)
