"""The one place that builds a `tool_result` block."""

from __future__ import annotations

from ..tools import ToolOutput


def tool_result(tool_use_id: str, output: ToolOutput) -> dict:
    """The block that answers `tool_use_id`, as the chapter writes it (plus `is_error` on failure)."""
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": output.content}
    if output.is_error:
        block["is_error"] = True
    return block
