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
    "s04": N_("s02's tools and task: a sub-agent with a loop and messages of its own"),
    "s06": N_("s02's tools and compact; the history is compacted before calls"),
}


def default_toolbox(workspace, timeout: float = 30.0, toolset: str = "s01") -> ToolBox:
    """The tools of a run in `workspace`: the chapter's `bash`, with s02's file tools, s04's task or s06's compact."""
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
