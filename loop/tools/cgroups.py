"""Cgroups for commands: one a run, which holds its limits, and one a step, which ends every process of it.

A run's cgroup bounds all its commands together: memory (`memory.max`, which
also counts what they write to a workspace on tmpfs and to their private /tmp
and /dev/shm), processes (`pids.max`) and a CPU weight, so one run cannot
starve another. A step's cgroup is where its command is born; at the step's end
`cgroup.kill` ends everything in it at once, whatever it did with sessions,
process groups or its environment.

Machines differ, so the layout is found once (`layout()`):
- cgroup v2 with the controllers enabled for the server's children (a root
  cgroup, or a delegated one): the run is a v2 cgroup with its limits and its
  steps are cgroups inside it;
- v1 controllers beside a v2 tree (hybrid, as on many VMs and CI machines): the
  run has a cgroup in each of the memory, pids and cpu hierarchies, and its
  steps are cgroups in the v2 tree;
- neither writable (not root, a container that mounts /sys/fs/cgroup
  read-only): no cgroups; commands end by their session and mark, or their PID
  namespace under bubblewrap (see bash.py), and only per-process limits hold.

Nothing here runs Python in a child: a command joins its cgroups through the
small shell at the head of its exec chain (see sandbox.py), which writes its
own pid into each `cgroup.procs` before it execs the rest.

A cgroup is named after the process that made it, its owner: its pid and the
time it started (`loopscope-run-<pid>-<start>-<random>`; the start, in clock
ticks since boot as /proc/<pid>/stat gives it, tells the owner from a later
process given the same pid). A server killed mid-run leaves its cgroups (and
perhaps processes in them) behind: the next server, where it finds its layout,
sweeps them as it sweeps workspaces a dead server left (`sweep`). Only a cgroup
whose owner is gone is touched: several servers and test processes share these
folders, each with live runs.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

STEP_PREFIX = "loopscope-step-"
RUN_PREFIX = "loopscope-run-"
CONTROLLERS = ("memory", "pids", "cpu")
# A cgroup of ours: its owner's pid, its start (absent from names made before the start was written), a random part.
NAME = re.compile(r"loopscope-(?:run|step)-(\d+)-(?:(\d+)-)?[0-9a-f]{12}")

log = logging.getLogger("loopscope.tools.sandbox")
log.addHandler(logging.NullHandler())


@dataclass(frozen=True)
class Limits:
    """What one run may use, all its commands together (a cgroup's), and each process (rlimits)."""

    memory_bytes: int = 2**30  # the run: processes, their /tmp and /dev/shm, and a workspace on tmpfs
    pids: int = 128  # processes and threads of the run at once
    cpu_weight: int = 100  # a run's share of the CPU against other runs (cgroup v2's default weight)
    workspace_bytes: int = 256 * 2**20  # the size of a workspace Loopscope makes (a tmpfs)
    process_memory_bytes: int = 2 * 2**30  # address space of one process (RLIMIT_AS)
    file_bytes: int = 64 * 2**20  # one file (RLIMIT_FSIZE)
    nproc: int = 256  # processes of the sandbox's user, only where no pids cgroup bounds a run (RLIMIT_NPROC)


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot); None if there is none, or it has ended (a zombie kept
    for its parent is still its own: never counted as gone). OSError when it cannot be told."""
    try:
        said = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    # "pid (comm) state ppid … starttime …": comm may hold spaces and parentheses; starttime is the 22nd field
    return int(said[said.rindex(")") + 1:].split()[19])


_owner: tuple[int, str] | None = None


def owner() -> str:
    """This process, as its cgroups' names say it: "<pid>-<start>" (after a fork, the child's own)."""
    global _owner
    if _owner is None or _owner[0] != os.getpid():
        try:
            _owner = (os.getpid(), f"{os.getpid()}-{_started(os.getpid())}")
        except (OSError, ValueError, IndexError):  # no /proc: the pid alone, judged as names of old are
            _owner = (os.getpid(), str(os.getpid()))
    return _owner[1]


def owner_gone(name: str) -> bool:
    """Whether the cgroup `name` is ours and the process that made it is gone: no process has its pid, or the one
    that has it started at another time (the pid was given again). Anything else, and anything that cannot be told
    (a name without the start whose pid lives, /proc unreadable), is kept."""
    found = NAME.fullmatch(name)
    if found is None:
        return False
    pid, start = int(found.group(1)), found.group(2)
    if pid == os.getpid():
        return False
    try:
        started = _started(pid)
    except (OSError, ValueError, IndexError):
        return False
    return started is None or (start is not None and int(start) != started)


def sweep(folders: list[Path]) -> list[Path]:
    """Remove the cgroups in `folders` whose owner is gone (`owner_gone`), with their steps' cgroups, first ending
    every process left in them; the cgroups removed."""
    removed = []
    for folder in folders:
        try:
            names = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for name in names:
            if owner_gone(name) and _removed(folder / name):
                removed.append(folder / name)
    if removed:
        log.info("removed %d cgroups left by servers that ended without removing them", len(removed))
    return removed


def _removed(folder: Path, wait: float = 5.0) -> bool:
    """End every process in the cgroup `folder` and its children's, and remove them all; whether it is gone."""
    try:
        children = [entry.path for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return False
    except OSError:
        children = []
    for child in children:  # a v2 run's steps: emptied and removed first
        _removed(Path(child), wait)
    deadline = time.monotonic() + wait
    while True:
        try:
            members = (folder / "cgroup.procs").read_text().split()
        except FileNotFoundError:
            return False
        except OSError:
            members = []
        if not members:
            break
        if (folder / "cgroup.kill").exists():
            try:
                _write(folder / "cgroup.kill", "1")
            except OSError:
                pass
        else:  # cgroup v1, or a kernel before 5.14: each member (forks meanwhile are found at the next look)
            for pid in members:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        if time.monotonic() > deadline:
            log.warning("processes of %s were still alive %g s after SIGKILL: it is left", folder, wait)
            return False
        time.sleep(0.001)
    try:
        folder.rmdir()
    except FileNotFoundError:
        return False
    except OSError as exc:
        log.warning("could not remove %s: %s", folder, exc)
        return False
    return True


class StepCgroup:
    """A cgroup (v2) of one step's own.

    The command joins it before it starts, so every process it ever starts is
    born in it and cannot leave it: moving a process needs write access to
    cgroup files that belong to root. `kill` writes cgroup.kill, which the
    kernel applies to every member at once, forks in flight included.
    """

    kill_file = True  # use cgroup.kill where the kernel has it (5.14+); tests turn it off to try the older way

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def make(cls, parent: Path) -> StepCgroup | None:
        path = parent / f"{STEP_PREFIX}{owner()}-{os.urandom(6).hex()}"
        try:
            path.mkdir()
        except OSError as exc:  # e.g. cgroup.max.descendants: this step ends by its session and mark
            log.warning("could not make %s (%s): this command ends by its session and mark", path, exc)
            return None
        return cls(path)

    @property
    def procs(self) -> str:
        return str(self.path / "cgroup.procs")

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def joined(self, running: Callable[[], bool], wait: float = 5.0) -> bool:
        """Wait until the step's command is in the cgroup, while `running()`; False if it never came.

        The command joins through the shell at the head of its exec chain, just after the fork: a `kill` before
        that finds the cgroup empty, and what the shell then starts is in it, alive. A command killed as soon as
        it started (a child started ahead of a run, ended as the server stops) waits here first.
        """
        deadline = time.monotonic() + wait
        while not self.populated():
            if not running() or time.monotonic() > deadline:
                return self.populated()
            time.sleep(0.001)
        return True

    def kill(self, wait: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup and wait until none is left; False if some still are."""
        has_kill = self.kill_file and (self.path / "cgroup.kill").exists()
        deadline = time.monotonic() + wait
        while True:
            try:
                if has_kill:
                    _write(self.path / "cgroup.kill", "1")
                else:  # kill what is listed, again until nothing is (a member may fork meanwhile)
                    for pid in (self.path / "cgroup.procs").read_text().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
            except OSError:
                pass
            if not self.populated():
                return True
            if time.monotonic() > deadline:
                log.warning("processes of %s were still alive %g s after SIGKILL", self.path, wait)
                return False
            time.sleep(0.001)

    def remove(self) -> None:
        """Kill what is left and delete the cgroup."""
        self.kill()
        try:
            self.path.rmdir()
        except OSError as exc:
            log.warning("could not remove %s: %s", self.path, exc)


@dataclass
class Layout:
    """Where this machine lets the server make cgroups (found once, by `layout()`)."""

    steps: Path | None = None  # a v2 folder in which each step gets a cgroup (cgroup.kill)
    v2_limits: bool = False  # run cgroups are v2 cgroups in `steps`, with memory.max, pids.max, cpu.weight
    v1: dict[str, Path] = field(default_factory=dict)  # controller → the v1 folder run cgroups are made in

    @property
    def limited(self) -> tuple[str, ...]:
        """The controllers that bound a run here."""
        if self.v2_limits:
            return tuple(c for c in CONTROLLERS if c in _words(self.steps / "cgroup.subtree_control"))
        return tuple(c for c in CONTROLLERS if c in self.v1)


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _unescape(field_: str) -> str:
    """A path from /proc/self/mountinfo, where a space is written \\040."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def _own_folders() -> tuple[Path | None, dict[str, Path]]:
    """(the server's own v2 cgroup folder, {v1 controller: its own folder}), those that are mounted and writable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None, {}
    own: dict[str, str] = {}  # "" for v2, else each controller of a v1 hierarchy
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            own[name] = path
    unified, v1 = None, {}
    for line in mounts:
        fields, _, after = line.partition(" - ")
        fields, after = fields.split(), after.split()
        if len(fields) < 5 or len(after) < 3 or after[0] not in ("cgroup", "cgroup2"):
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        names = [""] if after[0] == "cgroup2" else [o for o in after[2].split(",") if o in CONTROLLERS]
        for name in names:
            path = own.get(name)
            if path is None or not (path == root or path.startswith(root.rstrip("/") + "/")):
                continue
            folder = Path(mount_point) / path[len(root):].lstrip("/")
            if os.access(folder, os.W_OK) and (folder / "cgroup.procs").exists():
                if name:
                    v1.setdefault(name, folder)
                elif unified is None:
                    unified = folder
    return unified, v1


def join_and_run(procs: list[str], argv: list[str]) -> list[str]:
    """`argv` behind a shell that first writes its own pid into each `cgroup.procs` (no Python in the child).

    A process moves itself by writing 0; what it then execs, and everything
    that starts, is born in those cgroups. A failed write ends the chain with
    status 125 and the shell's message.
    """
    if not procs:
        return argv
    return ["/bin/sh", "-c", 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"',
            "sh", *procs, "--", *argv]


def _try(procs: list[str]) -> bool:
    try:
        subprocess.run(join_and_run(procs, ["true"]), check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def _find_layout() -> Layout:
    found = Layout()
    unified, v1 = _own_folders()
    # What a server that died left where this one makes its cgroups: swept first, as workspaces are.
    sweep([f for f in [unified, *v1.values()] if f is not None])
    if unified is not None:
        trial = StepCgroup.make(unified)
        if trial is not None:
            if _try([trial.procs]):
                found.steps = unified
            trial.remove()
    if found.steps is not None:
        available = _words(found.steps / "cgroup.controllers")
        wanted = [c for c in CONTROLLERS if c in available]
        enabled = _words(found.steps / "cgroup.subtree_control")
        if "memory" in wanted and "pids" in wanted and not set(wanted) <= set(enabled):
            _enable(found.steps, wanted)
        found.v2_limits = {"memory", "pids"} <= set(_words(found.steps / "cgroup.subtree_control"))
    if not found.v2_limits and v1:
        probe = RunCgroup(Layout(steps=None, v1=v1), Limits())
        if probe.folders and _try(probe.procs(None)):
            found.v1 = {c: v1[c] for c in v1 if any(f.parent == v1[c] for f in probe.folders)}
        probe.remove()
    if found.steps is None:  # said once, in the server's log
        log.warning("no cgroup for commands here (not root, or no writable cgroup v2): a process that "
                    "leaves its session and clears its environment can outlive its step unless bubblewrap "
                    "holds it in a PID namespace (see docs/security.md)")
    if not found.limited:
        log.warning("no memory or pids cgroup for runs here: only per-process limits bound a run's commands")
    return found


SERVER_LEAF = "loopscope-server"


def _enable(folder: Path, controllers: list[str]) -> None:
    """Enable `controllers` for the children of the server's own v2 cgroup, where the kernel lets it.

    A cgroup with processes of its own may not give controllers to its children
    (only the root may). A server alone in its cgroup (a systemd service with
    Delegate=yes, a container of its own) first moves itself into a leaf,
    `loopscope-server`, as cgroup v2 expects of a delegated subtree; a cgroup
    shared with other processes is left as it is, and runs get no v2 limits.
    """
    wanted = " ".join(f"+{c}" for c in controllers)
    try:
        _write(folder / "cgroup.subtree_control", wanted)
        return
    except OSError:
        pass
    members = _words(folder / "cgroup.procs")
    if members != [str(os.getpid())]:
        return
    try:
        leaf = folder / SERVER_LEAF
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))  # the whole process, every thread
        _write(folder / "cgroup.subtree_control", wanted)
        log.info("moved the server into %s, so that its runs' cgroups may have limits", leaf)
    except OSError as exc:
        log.warning("could not give controllers to the runs' cgroups in %s: %s", folder, exc)


_layout: Layout | None = None
_layout_lock = threading.Lock()


def layout() -> Layout:
    """Where runs and steps get their cgroups on this machine; found at the first command, then kept."""
    global _layout
    with _layout_lock:
        if _layout is None:
            _layout = _find_layout()
        return _layout


class RunCgroup:
    """The cgroup(s) of one run: its limits, and the parent of its steps' cgroups.

    Made at the run's first command and removed when its tool box is closed
    (or, at the latest, when it is garbage-collected or the server exits).
    """

    def __init__(self, where: Layout, limits: Limits):
        name = f"{RUN_PREFIX}{owner()}-{os.urandom(6).hex()}"
        self.folders: list[Path] = []  # the run's own cgroups, each with its limits
        self.steps_in: Path | None = where.steps  # where this run's steps get their cgroups
        if where.v2_limits:
            folder = where.steps / name
            if self._make(folder, {"memory.max": limits.memory_bytes, "memory.swap.max": 0,
                                   "pids.max": limits.pids, "cpu.weight": limits.cpu_weight}):
                self.steps_in = folder
        else:
            settings = {"memory": {"memory.limit_in_bytes": limits.memory_bytes,
                                   "memory.memsw.limit_in_bytes": limits.memory_bytes},
                        "pids": {"pids.max": limits.pids},
                        "cpu": {"cpu.shares": max(2, limits.cpu_weight * 1024 // 100)}}
            for controller, parent in where.v1.items():
                self._make(parent / name, settings[controller])
        self.pids = limits.pids
        self._finalizer = weakref.finalize(self, _remove_folders, list(self.folders))

    def _make(self, folder: Path, settings: dict[str, int]) -> bool:
        try:
            folder.mkdir()
        except OSError as exc:
            log.warning("could not make %s (%s): this run has no such limit", folder, exc)
            return False
        self.folders.append(folder)
        for name, value in settings.items():
            if (folder / name).exists():
                try:
                    _write(folder / name, str(value))
                except OSError as exc:  # e.g. memsw where swap accounting is off
                    log.info("could not set %s: %s", folder / name, exc)
        return True

    def procs(self, step: StepCgroup | None) -> list[str]:
        """The cgroup.procs files a command of this run joins, the step's last."""
        v1 = [str(f / "cgroup.procs") for f in self.folders if f != self.steps_in]
        return v1 + ([step.procs] if step else [])

    def step(self) -> StepCgroup | None:
        self._pids_for_the_living()
        return StepCgroup.make(self.steps_in) if self.steps_in else None

    def _pids_for_the_living(self) -> None:
        """`pids.max` raised by what the run is still charged for processes that have ended.

        Each command's bwrap is the first process of a PID namespace, and the kernel gives its charge back about a
        second after it ended: commands one after another (an offline model answers at once) found the run's
        processes used up by processes long gone ("bwrap: Can't fork for pid 1: Resource temporarily
        unavailable" at the 155th `echo hi` of bench/sandbox.py). So the limit still bounds the processes that
        live; never past twice its value.
        """
        for folder in self.folders:
            try:
                charged = int((folder / "pids.current").read_text())
            except (OSError, ValueError):
                continue  # not a pids cgroup
            alive = 0
            for each in [folder, *(d for d in folder.rglob("*") if d.is_dir())]:
                alive += len(_words(each / ("tasks" if (each / "tasks").exists() else "cgroup.threads")))
            try:
                _write(folder / "pids.max", str(self.pids + min(self.pids, max(0, charged - alive))))
            except OSError as exc:
                log.info("could not set %s: %s", folder / "pids.max", exc)

    def read(self, name: str) -> str | None:
        """A file of the run's cgroups (e.g. "pids.max", "memory.max"), from the first that has it."""
        for folder in self.folders:
            try:
                return (folder / name).read_text().strip()
            except OSError:
                continue
        return None

    def remove(self) -> None:
        self._finalizer()


def _remove_folders(folders: list[Path]) -> None:
    for folder in reversed(folders):  # a v2 run's step cgroups are gone already: each step removes its own
        try:
            folder.rmdir()
        except OSError as exc:
            log.warning("could not remove %s: %s", folder, exc)
