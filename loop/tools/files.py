"""The next chapter's (s02) file tools, each confined to the workspace.

As in the course, a path is resolved against the workspace and must stay
inside it: `(workspace / path).resolve()` follows `..` and symlinks, so a link
that points out of the workspace is refused like an absolute path is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .base import Tool, ToolOutput
from .bash import unprivileged_user

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


class NotRegular(ValueError):
    pass


def _open(target: Path, flags: int, mode: str):
    """`target` opened as a regular file, or NotRegular.

    A FIFO a command made would block the open (or the read) for ever, and a
    device never ends: either would hang the server, which runs these tools.
    O_NONBLOCK keeps the open itself from waiting; fstat then says what it is.
    """
    try:
        fd = os.open(target, flags | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        try:
            kind = os.stat(target).st_mode
        except OSError:
            raise exc from None
        if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
            raise NotRegular from exc  # e.g. ENXIO: a FIFO nobody reads, opened for writing
        raise
    try:
        kind = os.fstat(fd).st_mode
        if stat.S_ISDIR(kind):
            raise IsADirectoryError
        if not stat.S_ISREG(kind):
            raise NotRegular
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def _hand_over(paths: list[Path], workspace: Path) -> None:
    """As root, give what a file tool created to the user commands run as (see bash.unprivileged_user).

    Otherwise a file the model wrote with write_file is root's, and its own
    `bash` commands, running as nobody, may not change it.
    """
    user = unprivileged_user(workspace)
    for path in paths if user else []:
        os.chown(path, *user, follow_symlinks=False)


class _FileTool(Tool):
    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        path = tool_input.get("path")
        if not isinstance(path, str) or not path:
            return ToolOutput(f"Error: {self.name} needs a non-empty string in `path`.", True)
        try:
            return self.act(safe_path(workspace, path), tool_input, Path(workspace))
        except OutsideWorkspace as exc:
            return ToolOutput(str(exc), True)
        except NotRegular:
            return ToolOutput(f"Error: {path} is not a regular file (a FIFO, socket or device); "
                              "file tools read and write regular files only.", True)
        except IsADirectoryError:
            return ToolOutput(f"Error: {path} is a directory.", True)
        except FileNotFoundError:
            return ToolOutput(f"Error: {path} does not exist.", True)
        except OSError as exc:
            return ToolOutput(f"Error: {path}: {exc.strerror}", True)

    def act(self, target: Path, tool_input: dict, workspace: Path) -> ToolOutput:  # pragma: no cover - interface
        raise NotImplementedError


class ReadFile(_FileTool):
    name = "read_file"
    description = "Read a file of the workspace. `limit` keeps only the first lines."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]}

    def act(self, target: Path, tool_input: dict, workspace: Path) -> ToolOutput:
        with _open(target, os.O_RDONLY, "rb") as f:
            text = f.read(READ_LIMIT * 4).decode("utf-8", errors="replace")
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

    def act(self, target: Path, tool_input: dict, workspace: Path) -> ToolOutput:
        content = tool_input.get("content")
        if not isinstance(content, str):
            return ToolOutput("Error: write_file needs a string in `content`.", True)
        if len(content.encode()) > WRITE_LIMIT:
            return ToolOutput(f"Error: content over {WRITE_LIMIT // 2**20} MiB is refused.", True)
        created = [p for p in target.parents if not p.exists()][::-1]
        target.parent.mkdir(parents=True, exist_ok=True)
        new = not target.exists()
        with _open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "wb") as f:
            f.write(content.encode("utf-8"))
        _hand_over(created + ([target] if new else []), workspace)
        return ToolOutput(f"Wrote {len(content.encode())} bytes to {tool_input['path']}")


class EditFile(_FileTool):
    name = "edit_file"
    description = "Replace the first occurrence of old_text with new_text in a file of the workspace."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "old_text": {"type": "string"},
                                   "new_text": {"type": "string"}},
                    "required": ["path", "old_text", "new_text"]}

    def act(self, target: Path, tool_input: dict, workspace: Path) -> ToolOutput:
        old, new = tool_input.get("old_text"), tool_input.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            return ToolOutput("Error: edit_file needs non-empty old_text and a new_text string.", True)
        with _open(target, os.O_RDONLY, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        if old not in text:
            return ToolOutput(f"Error: old_text was not found in {tool_input['path']}.", True)
        with _open(target, os.O_WRONLY | os.O_TRUNC, "wb") as f:
            f.write(text.replace(old, new, 1).encode("utf-8"))
        return ToolOutput(f"Edited {tool_input['path']}")
