"""Tools the loop can run, behind one interface (see `base.py`), in a sandbox (see `sandbox.py`).

The toolsets a run picks from, which add the layers' own tools (`task`, `compact`), are in loop/engine/toolsets.py.
"""

from .base import Tool, ToolBox, ToolOutput
from .bash import Bash
from .cgroups import Limits
from .files import EditFile, ReadFile, WriteFile
from .sandbox import Sandbox
from .workspace import Workspace, WorkspaceError

__all__ = ["Bash", "EditFile", "Limits", "ReadFile", "Sandbox", "Tool", "ToolBox", "ToolOutput", "Workspace",
           "WorkspaceError", "WriteFile"]
