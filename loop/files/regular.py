"""Files the server reads for a user: regular files in a folder the operator named, no link followed, read within a cap.

The server may run as root, and a folder such as ~/.claude/projects is written by the user and by whatever the
user's agent ran. What it holds is taken as data, never as a way elsewhere:
- the folder the operator named is opened as named (it may itself be a link: that is the operator's choice);
- below it every name is opened from its folder's descriptor with O_NOFOLLOW, so a link planted there, or swapped in
  for a file between a listing and an open, is refused, never followed (to /dev/zero, to a root-only file);
- a name is looked at (lstat) before it is opened, and only a regular file or a folder is opened: a FIFO would block
  the open (or the read) for ever, a device never ends, and opening some devices does something by itself;
  what was opened is checked again (fstat), so a swap between the look and the open changes nothing;
- what is read is bounded by the caller (`read_at`): the head of a log, what was appended, or a whole file under
  the import's limit.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..text.catalogs import N_, Note, size_words

CHUNK = 2**20  # what one read takes: a scan over a long log holds this much, not the log


class NotRegular(OSError):
    """A name that is not a regular file (or not a folder, where one is walked through): `kind` says what it is,
    `name` where it is (from the folder it was opened from), `note` why it was not read."""

    def __init__(self, name: str, kind: str):
        super().__init__(errno.EPERM, f"{name}: {kind}, not a regular file")
        self.name, self.kind = name, kind

    @property
    def note(self) -> Note:
        return not_read(self.name, self.kind)


OVER_LIMIT = N_("{name}: {size}, over the limit of {limit} read here: nothing more of it is read")


class TooBig(OSError):
    """What would be read is over the limit: `note` says so (nothing of it was read)."""

    def __init__(self, name: str, size: int, limit: int):
        super().__init__(errno.EFBIG, f"{name}: {size} bytes, over the limit of {limit}")
        self.name, self.size, self.limit = name, size, limit

    @property
    def note(self) -> Note:
        return Note(OVER_LIMIT, name=self.name, size=size_words(self.size), limit=size_words(self.limit))


def kind(mode: int) -> str:
    """What a file's mode says it is: "file", "folder", "link", "fifo", "device", "socket"."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "socket" if stat.S_ISSOCK(mode) else "other"


# Why a name was not read: said for each (a sessions folder's list, Follow), in the reader's language.
NOT_READ = {
    "link": N_("{name}: not read: it is a link, and Loopscope follows no link there."),
    "fifo": N_("{name}: not read: it is a FIFO (a named pipe), not a regular file."),
    "device": N_("{name}: not read: it is a device, not a regular file."),
    "socket": N_("{name}: not read: it is a socket, not a regular file."),
    "folder": N_("{name}: not read: it is a folder, not a regular file."),
    "file": N_("{name}: not read: it is a file where a folder was expected."),
    "other": N_("{name}: not read: it is not a regular file."),
}


def not_read(name: str, what: str) -> Note:
    """Why `name` was not read: it is a `what` (`kind()`), not what was expected."""
    return Note(NOT_READ.get(what, NOT_READ["other"]), name=name)


def open_folder(path: str | Path) -> int:
    """The folder the operator named, opened as named (a link to a folder is followed: it is theirs to name)."""
    return os.open(Path(path).expanduser(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _open_one(folder: int, name: str, want: str) -> int:
    """`name` in `folder`, which must be a `want` ("file" or "folder"); NotRegular when it is anything else."""
    if name in ("", ".", "..") or "/" in name:
        raise NotRegular(name, "other")
    found = kind(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)  # looked at before it is opened
    if found != want:
        raise NotRegular(name, found)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_DIRECTORY if want == "folder" else 0)
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link (or a file) since it was looked at
            raise NotRegular(name, "link" if exc.errno == errno.ELOOP else "file") from None
        raise
    try:
        opened = kind(os.fstat(fd).st_mode)
        if opened != want:
            raise NotRegular(name, opened)
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_in(folder: int, names: Sequence[str], want: str = "file") -> int:
    """The file (or folder, `want="folder"`) at `names` below the descriptor `folder`, one name at a time, following
    no link; NotRegular names the first part that is not what it must be (its path from `folder`)."""
    if not names:
        raise NotRegular("", "folder")
    here, i = folder, 0
    try:
        for i, name in enumerate(names[:-1]):
            inner = _open_one(here, name, "folder")
            if here != folder:
                os.close(here)
            here = inner
        i = len(names) - 1
        return _open_one(here, names[-1], want)
    except NotRegular as exc:
        raise NotRegular("/".join(names[:i + 1]), exc.kind) from None
    finally:
        if here != folder:
            os.close(here)


def entries(folder: int) -> list[tuple[str, str]]:
    """(name, kind) of each entry of the folder `folder`, sorted, links not followed."""
    with os.scandir(folder) as found:  # it reads a duplicate of `folder` and rewinds it: `folder` stays open
        listed = []
        for entry in found:
            try:
                listed.append((entry.name, kind(entry.stat(follow_symlinks=False).st_mode)))
            except OSError:  # removed while listed
                continue
    return sorted(listed)


def read_at(fd: int, offset: int, limit: int) -> bytes:
    """At most `limit` bytes of `fd` from `offset` (fewer at its end)."""
    parts, left = [], limit
    while left > 0:
        part = os.pread(fd, min(left, CHUNK), offset)
        if not part:
            break
        parts.append(part)
        offset += len(part)
        left -= len(part)
    return b"".join(parts)


def chunks(fd: int, limit: int) -> Iterator[bytes]:
    """The first `limit` bytes of `fd`, CHUNK at a time."""
    offset = 0
    while offset < limit:
        part = os.pread(fd, min(CHUNK, limit - offset), offset)
        if not part:
            return
        offset += len(part)
        yield part
