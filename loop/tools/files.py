"""The next chapter's (s02) file tools, each confined to the workspace.

As in the course, a path is resolved against the workspace and must stay
inside it: `(workspace / path).resolve()` follows `..` and symlinks, so a link
that points out of the workspace is refused like an absolute path is.
"""

from __future__ import annotations

from pathlib import Path

from .base import Tool, ToolOutput

READ_LIMIT = 50_000
WRITE_LIMIT = 5 * 2**20


class OutsideWorkspace(ValueError):
    pass


def safe_path(workspace: Path, path: str) -> Path:
    """`path` inside `workspace`, or OutsideWorkspace."""
    root = Path(workspace).resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise OutsideWorkspace(f"Error: {path!r} is outside the workspace; file tools stay inside it.")
    return target


class _FileTool(Tool):
    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        path = tool_input.get("path")
        if not isinstance(path, str) or not path:
            return ToolOutput(f"Error: {self.name} needs a non-empty string in `path`.", True)
        try:
            return self.act(safe_path(workspace, path), tool_input)
        except OutsideWorkspace as exc:
            return ToolOutput(str(exc), True)
        except IsADirectoryError:
            return ToolOutput(f"Error: {path} is a directory.", True)
        except FileNotFoundError:
            return ToolOutput(f"Error: {path} does not exist.", True)
        except OSError as exc:
            return ToolOutput(f"Error: {path}: {exc.strerror}", True)

    def act(self, target: Path, tool_input: dict) -> ToolOutput:  # pragma: no cover - interface
        raise NotImplementedError


class ReadFile(_FileTool):
    name = "read_file"
    description = "Read a file of the workspace. `limit` keeps only the first lines."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]}

    def act(self, target: Path, tool_input: dict) -> ToolOutput:
        text = target.read_bytes()[: READ_LIMIT * 4].decode("utf-8", errors="replace")
        limit = tool_input.get("limit")
        lines = text.splitlines()
        if isinstance(limit, int) and 0 < limit < len(lines):
            text = "\n".join(lines[:limit]) + f"\n… ({len(lines) - limit} more lines)"
        return ToolOutput(text[:READ_LIMIT] or "(empty file)")


class WriteFile(_FileTool):
    name = "write_file"
    description = "Write content to a file of the workspace, creating folders as needed."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                    "required": ["path", "content"]}

    def act(self, target: Path, tool_input: dict) -> ToolOutput:
        content = tool_input.get("content")
        if not isinstance(content, str):
            return ToolOutput("Error: write_file needs a string in `content`.", True)
        if len(content.encode()) > WRITE_LIMIT:
            return ToolOutput(f"Error: content over {WRITE_LIMIT // 2**20} MiB is refused.", True)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return ToolOutput(f"Wrote {len(content.encode())} bytes to {tool_input['path']}")


class EditFile(_FileTool):
    name = "edit_file"
    description = "Replace the first occurrence of old_text with new_text in a file of the workspace."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "old_text": {"type": "string"},
                                   "new_text": {"type": "string"}},
                    "required": ["path", "old_text", "new_text"]}

    def act(self, target: Path, tool_input: dict) -> ToolOutput:
        old, new = tool_input.get("old_text"), tool_input.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            return ToolOutput("Error: edit_file needs non-empty old_text and a new_text string.", True)
        text = target.read_text(encoding="utf-8", errors="replace")
        if old not in text:
            return ToolOutput(f"Error: old_text was not found in {tool_input['path']}.", True)
        target.write_text(text.replace(old, new, 1), encoding="utf-8")
        return ToolOutput(f"Edited {tool_input['path']}")
