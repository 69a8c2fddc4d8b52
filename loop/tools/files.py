"""The next chapter's (s02) file tools, each confined to the workspace.

As in the course, a path is resolved against the workspace and must stay
inside it: `..` and links are followed to see where they lead, and a path that
leads out (an absolute path elsewhere, `../…`, a link to /etc) is refused. Then
the file is opened from the workspace's own descriptor one name at a time,
never following a link (O_NOFOLLOW at each step, the effect of openat2's
RESOLVE_BENEATH with RESOLVE_NO_SYMLINKS): a link a command plants between the
check and the open makes the open fail, it cannot make the server, which runs
these tools, read or write outside the workspace. And all of it runs with the
sandbox's user's file rights (`rights.as_sandbox_user`), not the server's: even
a mistake in that walk, or a hard link to a file of root's, reaches only what
the run's own commands may, and what the tools create is that user's.

A path may be given as commands see it under bubblewrap (/workspace/…), or as
the server sees it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .base import Tool, ToolOutput
from .sandbox import INSIDE, Sandbox
from .rights import as_sandbox_user
from .workspace import Workspace

READ_LIMIT = 50_000
WRITE_LIMIT = 5 * 2**20
PATH_MAX = 4096


class OutsideWorkspace(ValueError):
    pass


class Changed(OSError):
    """A link appeared on the path between the check and the open."""


class NotRegular(ValueError):
    pass


def beneath(workspace: Path, path: str) -> list[str]:
    """The names from the workspace down to `path`, links resolved; OutsideWorkspace when it leads out."""
    root = Path(workspace).resolve()
    if path == INSIDE or path.startswith(INSIDE + "/") and not path.startswith(str(root) + "/"):
        path = path[len(INSIDE):].lstrip("/") or "."
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise OutsideWorkspace(f"Error: {path!r} is outside the workspace; file tools stay inside it.")
    if len(os.fsencode(target)) >= PATH_MAX:  # a file no other program could then open by its path
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
    return list(target.relative_to(root).parts)


def open_beneath(root_fd: int, names: list[str], flags: int, make_folders: bool = False) -> tuple[int, bool]:
    """(an fd of the regular file at `names` under `root_fd`, whether it was created), following no link.

    A FIFO a command made would block the open (or the read) for ever, and a
    device never ends: either would hang the server. O_NONBLOCK keeps the open
    itself from waiting; fstat then says what it is (NotRegular).
    """
    if not names:
        raise IsADirectoryError
    folder = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=root_fd)
    try:
        for name in names[:-1]:
            try:
                inner = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            except FileNotFoundError:
                if not make_folders:
                    raise
                os.mkdir(name, 0o755, dir_fd=folder)
                inner = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            except NotADirectoryError:
                if stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                    raise Changed(errno.ELOOP, "a link appeared on the path") from None
                raise
            os.close(folder)
            folder = inner
        created = False
        if flags & os.O_CREAT:  # made here, or found: told apart by O_EXCL, so the new file is given away
            try:
                fd = os.open(names[-1], (flags | os.O_EXCL) | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644,
                             dir_fd=folder)
                created = True
            except FileExistsError:
                flags &= ~os.O_CREAT
        if not created:
            try:
                fd = os.open(names[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Changed(errno.ELOOP, "a link appeared on the path") from None
                try:
                    kind = os.stat(names[-1], dir_fd=folder, follow_symlinks=False).st_mode
                except OSError:
                    raise exc from None
                if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
                    raise NotRegular from exc  # e.g. ENXIO: a FIFO nobody reads, opened for writing
                raise
    finally:
        os.close(folder)
    try:
        kind = os.fstat(fd).st_mode
        if stat.S_ISDIR(kind):
            raise IsADirectoryError
        if not stat.S_ISREG(kind):
            raise NotRegular
        os.set_blocking(fd, True)
        return fd, created
    except BaseException:
        os.close(fd)
        raise


class _FileTool(Tool):
    sandboxed = True  # ToolBox.run gives it the run's Sandbox, whose workspace it holds open

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        space = workspace if isinstance(workspace, Workspace) else Workspace.given(workspace)
        try:
            return self.run_in(Sandbox(space), tool_input)
        finally:
            space.close()

    def run_in(self, sandbox: Sandbox, tool_input: dict) -> ToolOutput:
        path = tool_input.get("path")
        if not isinstance(path, str) or not path:
            return ToolOutput(f"Error: {self.name} needs a non-empty string in `path`.", True)
        space = sandbox.workspace
        try:
            root = space.fd()  # held open by the server; what is beneath it is the run's, touched as its user
            with as_sandbox_user():
                return self.act(root, beneath(space.path, path), tool_input)
        except OutsideWorkspace as exc:
            return ToolOutput(str(exc), True)
        except Changed:
            return ToolOutput(f"Error: {path!r} changed while it was being opened (a link appeared on it); "
                              "file tools follow no link there. Nothing was read or written.", True)
        except NotRegular:
            return ToolOutput(f"Error: {path} is not a regular file (a FIFO, socket or device); "
                              "file tools read and write regular files only.", True)
        except IsADirectoryError:
            return ToolOutput(f"Error: {path} is a directory.", True)
        except FileNotFoundError:
            return ToolOutput(f"Error: {path} does not exist.", True)
        except OSError as exc:
            return ToolOutput(f"Error: {path}: {exc.strerror}", True)

    def act(self, root: int, names: list[str], tool_input: dict) -> ToolOutput:  # pragma: no cover - interface
        raise NotImplementedError


class ReadFile(_FileTool):
    name = "read_file"
    description = "Read a file of the workspace. `limit` keeps only the first lines."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]}

    def parallel_safe(self, tool_input: dict) -> bool:
        return True  # reading changes nothing

    def act(self, root: int, names: list[str], tool_input: dict) -> ToolOutput:
        fd, _ = open_beneath(root, names, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
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

    def act(self, root: int, names: list[str], tool_input: dict) -> ToolOutput:
        content = tool_input.get("content")
        if not isinstance(content, str):
            return ToolOutput("Error: write_file needs a string in `content`.", True)
        if len(content.encode()) > WRITE_LIMIT:
            return ToolOutput(f"Error: content over {WRITE_LIMIT // 2**20} MiB is refused.", True)
        fd, _ = open_beneath(root, names, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, make_folders=True)
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode("utf-8"))
        return ToolOutput(f"Wrote {len(content.encode())} bytes to {tool_input['path']}")


class EditFile(_FileTool):
    name = "edit_file"
    description = "Replace the first occurrence of old_text with new_text in a file of the workspace."
    input_schema = {"type": "object",
                    "properties": {"path": {"type": "string"}, "old_text": {"type": "string"},
                                   "new_text": {"type": "string"}},
                    "required": ["path", "old_text", "new_text"]}

    def act(self, root: int, names: list[str], tool_input: dict) -> ToolOutput:
        old, new = tool_input.get("old_text"), tool_input.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            return ToolOutput("Error: edit_file needs non-empty old_text and a new_text string.", True)
        fd, _ = open_beneath(root, names, os.O_RDWR)
        with os.fdopen(fd, "r+b") as f:
            text = f.read().decode("utf-8", errors="replace")
            if old not in text:
                return ToolOutput(f"Error: old_text was not found in {tool_input['path']}.", True)
            f.seek(0)
            f.truncate()
            f.write(text.replace(old, new, 1).encode("utf-8"))
        return ToolOutput(f"Edited {tool_input['path']}")
