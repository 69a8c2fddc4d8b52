"""A run's workspace: the one folder its commands may write, made by Loopscope or given by the user.

A workspace Loopscope makes (`Workspace.make`):
- sits under a parent that belongs to the server's user and that others may
  pass through but not list (`workspaces_root()`; as root
  /var/lib/loopscope/workspaces, mode 711), never in sticky /tmp, so a command
  can neither rename it nor plant a link in its place, and one run cannot find
  another's;
- is, as root, a tmpfs of its own with `size=` (`Limits.workspace_bytes`),
  belonging to the sandbox's user: a disk flood stops at that size, and what it
  holds counts against the run's memory cgroup. A tmpfs, not a quota, because
  it needs nothing of the machine's file systems (quotas need ext4 or XFS
  mounted with them) and goes away with the run;
- belongs to its `Run` (through the tool box), which removes it on close()
  unless it is kept (`keep=True`, `--keep-workspace`). A lock file held while
  it lives lets a later server remove what a crashed one left.

A workspace the user gives (`Workspace.given`) is theirs: Loopscope changes
no owner or mode of it, makes only the folders that are missing (and gives
those to the sandbox's user), and never removes it. `problem()` says what the
sandbox's user would need there.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

from .cgroups import Limits
from .rights import as_sandbox_user, sandbox_user

ROOT_VARIABLE = "LOOPSCOPE_WORKSPACES"
README = "This folder is the agent's workspace. Every command the model asks for runs here.\n"
MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2

log = logging.getLogger("loopscope.tools.sandbox")
log.addHandler(logging.NullHandler())


class WorkspaceError(ValueError):
    """The workspace cannot be used; the message says why and what is needed."""


def workspaces_root() -> Path:
    """The folder workspaces are made in, made and checked: the server's user's, not listable by others."""
    configured = os.environ.get(ROOT_VARIABLE)
    if configured:
        root = Path(configured)
    elif os.geteuid() == 0:
        root = Path("/var/lib/loopscope/workspaces")
    else:
        root = Path(tempfile.gettempdir()) / f"loopscope-{os.geteuid()}"
    mode = 0o711 if os.geteuid() == 0 else 0o700  # nobody passes through to its workspace, lists nothing
    for folder in [*reversed(root.parents[:-1]), root] if os.geteuid() == 0 and not configured else [root]:
        try:
            folder.mkdir(mode=mode)
            os.chmod(folder, mode)  # mkdir's mode is cut by the umask
        except FileExistsError:
            pass
        except OSError as exc:
            raise WorkspaceError(f"cannot make the workspaces folder {folder}: {exc.strerror}") from None
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise WorkspaceError(f"{root} is not a folder of this server's own that others cannot write (it is "
                             f"{'a link' if stat.S_ISLNK(info.st_mode) else oct(info.st_mode & 0o7777)}, "
                             f"uid {info.st_uid}): remove it, or set {ROOT_VARIABLE} to another folder")
    if os.geteuid() == 0 and info.st_mode & 0o777 != mode:
        os.chmod(root, mode)
    return root


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(path: Path, size: int, owner: tuple[int, int]) -> str | None:
    """Mount a tmpfs of `size` bytes on `path`; None, or why not (e.g. no CAP_SYS_ADMIN in a container)."""
    options = f"size={size},mode=0700,uid={owner[0]},gid={owner[1]}".encode()
    if _libc().mount(b"loopscope-workspace", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        return os.strerror(ctypes.get_errno())
    return None


def _unmount(path: Path) -> None:
    if _libc().umount2(os.fsencode(path), MNT_DETACH) != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):
        log.warning("could not unmount %s: %s", path, os.strerror(ctypes.get_errno()))


def _remove(path: Path, mounted: bool, lock: Path | None, lock_fd: int | None) -> None:
    """Remove a workspace Loopscope made: its tmpfs, its files, its lock."""
    if mounted:
        _unmount(path)
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:  # a command can nest folders deeper than Python's recursion goes
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if lock is not None:
        lock.unlink(missing_ok=True)
    if lock_fd is not None:
        os.close(lock_fd)


def _release(lock: Path | None, lock_fd: int | None) -> None:
    """A kept workspace: its lock goes, so no later server takes it for a crashed one's."""
    if lock is not None:
        lock.unlink(missing_ok=True)
    if lock_fd is not None:
        os.close(lock_fd)


_swept: set[Path] = set()
_sweep_lock = threading.Lock()


def _sweep(root: Path) -> None:
    """Remove workspaces whose server died without closing them (their lock is free); once a process."""
    with _sweep_lock:
        if root in _swept:
            return
        _swept.add(root)
    for lock in root.glob("*.lock"):
        if lock.name.startswith("."):  # a draft: its server is making it right now
            continue
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its server is alive
            os.close(fd)
            continue
        folder = root / lock.name.removesuffix(".lock")
        log.info("removing %s, left by a server that ended without closing it", folder)
        _remove(folder, folder.is_mount(), lock, fd)


class Workspace:
    """The folder a run's tools work in; `path` is where it is on the server."""

    def __init__(self, path: Path, owned: bool, *, size: int | None = None, kept: bool = False):
        self.path = Path(path)
        self.owned = owned  # made by Loopscope: removed by close() unless kept
        self.size = size  # bytes, when a tmpfs bounds it
        self.kept = kept
        self.created: list[Path] = []  # folders of a given path that Loopscope had to make
        self._finalizer = None
        self._fd: int | None = None
        self._fd_lock = threading.Lock()

    # -- made by Loopscope -------------------------------------------------------------

    @classmethod
    def make(cls, limits: Limits = Limits(), *, keep: bool = False, root: Path | None = None) -> Workspace:
        """A new workspace under `workspaces_root()`; a tmpfs of `limits.workspace_bytes` as root, unless kept."""
        root = root or workspaces_root()
        _sweep(root)
        name = os.urandom(12).hex()
        path = root / name
        path.mkdir(mode=0o700)
        lock, lock_fd = None, None
        if not keep:
            # Locked before it has its name, so a sweeping server never sees it free.
            draft = root / f".{name}.lock"
            lock_fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            lock = root / f"{name}.lock"
            os.rename(draft, lock)
        user = sandbox_user()
        size = None
        if os.geteuid() == 0 and not keep:  # a kept workspace outlives the server: a plain folder
            why = _mount_tmpfs(path, limits.workspace_bytes, user)
            if why is None:
                size = limits.workspace_bytes
            else:
                log.warning("no tmpfs for workspaces here (%s): a run's files are bounded per file only", why)
        if size is None and os.geteuid() == 0:
            os.chown(path, *user)
        workspace = cls(path, True, size=size, kept=keep)
        workspace._finalizer = weakref.finalize(workspace, _release, lock, lock_fd) if keep else \
            weakref.finalize(workspace, _remove, path, size is not None, lock, lock_fd)
        workspace.write_readme()
        return workspace

    def write_readme(self) -> None:
        """Something real for a first `ls` to find, made as the sandbox's user (so theirs) in the folder's fd."""
        folder = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            with as_sandbox_user():
                fd = os.open("README.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=folder)
                try:
                    os.write(fd, README.encode())
                finally:
                    os.close(fd)
        finally:
            os.close(folder)

    def copy_from(self, source: Path | str, limit: int) -> bool:
        """Copy an earlier run's workspace into this one, as the sandbox's user; False when it is not copied.

        A resumed run gets a new workspace; the files its commands wrote come with it while the old one is
        still there, and while those commands may still be changing it. Those files are the model's, so the
        copy reads them with the sandbox's user's rights (`as_sandbox_user`), never root's, and walks them
        from folder descriptors, never by a path: every name is opened relative to its folder with
        O_NOFOLLOW, so a folder swapped for a link mid-copy is passed over, and even a walk gone wrong
        reaches only what the run's commands could read anyway. Only folders, regular files and links (as
        links) are copied; a FIFO, socket or device is passed over (reading one would hang the server).
        Nothing is copied when the regular files add up to more than `limit` bytes, and no more than
        `limit` bytes are written if they grow meanwhile. What it makes is the sandbox's user's.
        """
        target = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            # The old folder is found as the server (its parents may be closed to others, as the new one's
            # are): a handle only, O_PATH, that reads nothing. Everything under it is opened as the sandbox's user.
            where = os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (OSError, TypeError, ValueError):
            os.close(target)
            return False
        try:
            if os.path.samestat(os.fstat(where), os.fstat(target)):
                return False
            with as_sandbox_user():
                try:
                    top = os.open(".", _FOLDER, dir_fd=where)
                except OSError:
                    return False
                try:
                    total = 0
                    for _, name, info in _walk(top):
                        if stat.S_ISREG(info.st_mode):
                            total += info.st_size
                            if total > limit:
                                return False
                    _copy_tree(top, target, limit)
                finally:
                    os.close(top)
        finally:
            os.close(where)
            os.close(target)
        return True

    # -- given by the user -------------------------------------------------------------

    @classmethod
    def given(cls, path: Path | str) -> Workspace:
        """The user's folder; made (with its missing parents) if it does not exist yet, and otherwise left as it is."""
        return cls(Path(path), False)

    def prepare(self) -> None:
        """Make a given folder that is missing; the folders made are given to the sandbox's user."""
        if self.owned or self.path.is_dir():
            return
        missing = [p for p in [self.path, *self.path.parents] if not p.exists()][::-1]
        self.path.mkdir(parents=True, exist_ok=True)
        for folder in missing:
            self.created.append(folder)
            if os.geteuid() == 0:
                os.chown(folder, *sandbox_user(), follow_symlinks=False)
        if missing and not any(self.path.iterdir()):
            self.write_readme()

    def problem(self) -> str | None:
        """Why the sandbox's user cannot enter this folder (so no command can run here); None when it can."""
        if self.path.exists() and not self.path.is_dir():
            return f"{self.path} is a file, not a folder"
        if self.owned or os.geteuid() != 0:
            return None
        uid, gid = sandbox_user()
        for folder in reversed([self.path, *self.path.parents]):
            try:
                info = os.stat(folder)
            except FileNotFoundError:
                return None  # made by prepare(), with the sandbox's user as owner
            if not _may(info, uid, gid, 0o1):
                return (f"commands run as uid {uid} (`nobody`), which cannot enter {folder} "
                        f"(mode {oct(info.st_mode & 0o777)[2:]}, uid {info.st_uid}): give a folder it can enter "
                        "and write, e.g. under /tmp with `chown 65534:65534 FOLDER`, or leave the workspace out "
                        "and Loopscope makes one")
        return None

    def warnings(self) -> list[str]:
        """What a learner or teacher should know about this folder (commands cannot write in it), one line each."""
        if self.owned or os.geteuid() != 0 or self.problem() or not self.path.exists():
            return []
        info = os.stat(self.path)
        uid, gid = sandbox_user()
        if _may(info, uid, gid, 0o3):
            return []
        return [f"Commands run as `nobody` (uid {uid}), which cannot write in {self.path} "
                f"(mode {oct(info.st_mode & 0o777)[2:]}, uid {info.st_uid}): they can read it but not change it. "
                f"To let them, `chown -R {uid}:{gid} {self.path}`; Loopscope does not change a folder you give."]

    # -- both --------------------------------------------------------------------------

    def fd(self) -> int:
        """The workspace folder, opened once (O_PATH, no link followed at its end) and held: the file tools
        resolve every path from it, so renaming the folder or putting a link in its place changes nothing."""
        with self._fd_lock:
            if self._fd == -1:
                raise WorkspaceError(f"the workspace {self.path} was closed with its run")
            if self._fd is None:
                self.prepare()
                self._fd = os.open(self.path.resolve(), os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                self._fd_finalizer = weakref.finalize(self, _close_fd, self._fd)
            return self._fd

    def close(self) -> None:
        """Remove the workspace if Loopscope made it and it is not kept; a given folder is left as it is."""
        with self._fd_lock:
            if self._fd is not None and self._fd != -1:
                self._fd_finalizer()
            self._fd = -1  # closed: a later fd() must not reopen a removed workspace
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __fspath__(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __truediv__(self, other) -> Path:
        return self.path / other

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r}, owned={self.owned})"


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _may(info: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    """Whether uid/gid has `bits` (1 = x, 2 = w, 4 = r, or-ed) on a file with `info`, by its mode (no ACLs)."""
    if info.st_uid == uid:
        shift = 6
    elif info.st_gid == gid:
        shift = 3
    else:
        shift = 0
    return (info.st_mode >> shift) & bits == bits


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_DEPTH = 200  # folders deeper than this are not copied: each level holds a descriptor while it is walked


def _walk(top: int):
    """(folder fd, name, lstat) of everything under the folder `top`, depth first, from descriptors only.

    Each folder is opened relative to its parent's descriptor with O_NOFOLLOW | O_DIRECTORY: a name swapped for
    a link (or for anything not a folder) since it was listed fails to open and is passed over, never followed.
    Only the folders on the way down are held open. Names that vanish meanwhile are passed over.
    """
    stack = [(top, iter(_names(top)), False)]
    try:
        while stack:
            folder, names, own = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                if own:
                    os.close(folder)
                continue
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                continue
            yield folder, name, info
            if stat.S_ISDIR(info.st_mode) and len(stack) < MAX_DEPTH:
                try:
                    inner = os.open(name, _FOLDER, dir_fd=folder)
                except OSError:  # swapped for a link or a file since, or not ours to enter
                    continue
                stack.append((inner, iter(_names(inner)), True))
    finally:  # also when the caller stops early (over the limit)
        for folder, _, own in stack:
            if own:
                os.close(folder)


def _names(folder: int) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _copy_tree(source: int, target: int, limit: int) -> None:
    """Copy what is under the folder fd `source` into the folder fd `target`, both walked by descriptor only."""
    stack = [(source, target, iter(_names(source)), False)]
    left = limit
    try:
        while stack:
            folder, into, names, own = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                if own:
                    os.close(folder)
                    os.close(into)
                continue
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and len(stack) < MAX_DEPTH:
                    inner = os.open(name, _FOLDER, dir_fd=folder)
                    try:
                        try:
                            os.mkdir(name, 0o755, dir_fd=into)
                        except FileExistsError:
                            pass
                        made = os.open(name, _FOLDER, dir_fd=into)
                    except BaseException:
                        os.close(inner)
                        raise
                    stack.append((inner, made, iter(_names(inner)), True))
                elif stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(name, dir_fd=folder), name, dir_fd=into)
                elif stat.S_ISREG(info.st_mode):
                    left -= _copy_file(folder, into, name, left)
            except OSError as exc:  # removed or swapped meanwhile, a name already here, not the sandbox's to read
                log.info("not copied into the resumed run's workspace: %s (%s)", name, exc.strerror)
    finally:
        for folder, into, _, own in stack:
            if own:
                os.close(folder)
                os.close(into)


def _copy_file(folder: int, into: int, name: str, left: int) -> int:
    """Copy the regular file `name` of `folder` into `into`, at most `left` bytes; the bytes written.

    Opened without following a link or waiting on a FIFO swapped in meanwhile, and checked to be a regular
    file once open.
    """
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file")
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=into)
        written = 0
        try:
            while written < left and (chunk := os.read(fd, min(1 << 20, left - written))):
                while chunk:
                    done = os.write(out, chunk)
                    written, chunk = written + done, chunk[done:]
        finally:
            os.close(out)
        return written
    finally:
        os.close(fd)
