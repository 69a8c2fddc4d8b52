"""The built-in toolsets a run picks from: the chapter's `bash`, and the later chapters' tools beside it.

Above both tools/ (the tools themselves) and the layers that add a tool of their own (subagent's `task`,
compact's `compact`), so neither has to import the other's home.
"""

from ..text.catalogs import N_
from .compact import Compact
from .subagent import Task
from ..tools import Bash, EditFile, ReadFile, ToolBox, WriteFile

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
        tools.append(Task())  # a sub-agent's loop is the runner's to step; the tool only names it
    if toolset == "s06":
        tools.append(Compact())
    return ToolBox(tools, workspace)
