"""Tools the loop can run, behind one interface (see `base.py`)."""

from .base import Tool, ToolBox, ToolOutput
from .bash import Bash

__all__ = ["Bash", "Tool", "ToolBox", "ToolOutput", "default_toolbox"]


def default_toolbox(workspace, timeout: float = 30.0) -> ToolBox:
    """The chapter's tool set: `bash` alone, in `workspace`."""
    return ToolBox([Bash(timeout=timeout)], workspace)
