"""The sandbox's user, and the server taking that user's file rights for as long as it touches a run's files.

A run's workspace belongs to the model: its commands may rename a folder and
put a link in its place at any moment, also while the server is in there
(copying it on Resume, reading it for `read_file`). Checks by path, and even
`O_NOFOLLOW` at every name, leave a mistake away from reading `/etc/shadow`
as root. So the server does not go in with root's rights at all:
`as_sandbox_user()` gives the calling thread the sandbox's user's file rights
for the length of its block. Whatever that block opens, lists, makes or
copies, it can reach only what `nobody` may (what the run's commands may
anyway), and what it makes belongs to `nobody` without a chown.

How: Linux keeps a filesystem uid and gid per thread (setfsuid, setfsgid),
used for every permission check on files, and while the fsuid is not 0 the
kernel drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN (and
the other file capabilities) from that thread's effective set. Other threads,
every other session's, keep root meanwhile. The supplementary groups count
too (root's group 0 opens root's group-readable files): they are cleared for
the thread with the raw setgroups system call, because glibc's setgroups()
changes every thread of the process. Each change is checked, and anything
that did not take effect raises instead of going on as root.

Keep what runs in the block short, and import nothing there: a module loaded
lazily would be read as `nobody`, which may not read the server's files.
"""

from __future__ import annotations

import ctypes
import os
import platform
import pwd
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SETGROUPS = {"x86_64": 116, "amd64": 116, "aarch64": 159, "arm64": 159}  # the system call's number

_libc = ctypes.CDLL(None, use_errno=True)
_held = threading.local()  # how deep the calling thread is in as_sandbox_user() blocks
_user: tuple[int, int] | None = None


class RightsError(OSError):
    """The thread could not take (or give back) the sandbox's user's file rights; nothing was touched."""


def sandbox_user() -> tuple[int, int]:
    """(uid, gid) commands run as: `nobody` when the server is root, else the server's own user. Decided once."""
    global _user
    if _user is None:
        if os.geteuid() != 0:
            _user = (os.geteuid(), os.getegid())
        else:
            try:  # the machine's nobody; 65534 is the kernel's overflow id, which owns nothing, where there is none
                entry = pwd.getpwnam("nobody")
                _user = (entry.pw_uid, entry.pw_gid) if entry.pw_uid != 0 else (65534, 65534)
            except KeyError:
                _user = (65534, 65534)
    return _user


def _set_groups(groups: list[int]) -> None:
    """This thread's supplementary groups, and no other thread's (the raw system call, not glibc's)."""
    number = SETGROUPS.get(platform.machine().lower())
    if number is None:
        raise RightsError(f"no setgroups system call known for {platform.machine()}: the server will not touch "
                          "a run's files as root")
    array = (ctypes.c_uint * len(groups))(*groups) if groups else None
    if _libc.syscall(number, len(groups), array) != 0:
        code = ctypes.get_errno()
        raise RightsError(code, f"setgroups: {os.strerror(code)}")
    if sorted(os.getgroups()) != sorted(groups):
        raise RightsError(f"setgroups did not take effect (groups {os.getgroups()}, wanted {groups})")


def _set_fs(uid: int, gid: int) -> None:
    """This thread's filesystem uid and gid; checked, since setfsuid never reports a failure itself."""
    _libc.setfsgid(gid)
    _libc.setfsuid(uid)
    now = (_libc.setfsuid(-1), _libc.setfsgid(-1))  # an invalid id changes nothing and returns the current one
    if now != (uid, gid):
        raise RightsError(f"setfsuid/setfsgid did not take effect (fsuid, fsgid {now}, wanted {(uid, gid)})")


@contextmanager
def as_sandbox_user() -> Iterator[None]:
    """The block runs with the sandbox's user's file rights in this thread only; nothing to change unless root.

    Nested blocks are one: only the outermost changes and restores.
    """
    depth = getattr(_held, "depth", 0)
    if os.geteuid() != 0 or depth:
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth = depth
        return
    uid, gid = sandbox_user()
    groups = os.getgroups()
    own = (os.geteuid(), os.getegid())
    _set_groups([])
    try:
        try:
            _set_fs(uid, gid)
            _held.depth = 1
            yield
        finally:
            _held.depth = 0
            _set_fs(*own)
    finally:
        _set_groups(groups)
