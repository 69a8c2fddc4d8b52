"""The chapter's `bash` tool, made safe enough for a classroom.

Same schema and the same output rules as the course's `run_bash` (stdout and
stderr together, stripped, cut to 50,000 characters, "(no output)" when empty,
dangerous commands refused). What it adds, and why:
- it runs in the run's own workspace, never the app's folder;
- every process the command starts is killed at the timeout and when the
  command ends, so nothing started by the model outlives its step (a cgroup of
  the step's own where the machine allows it, else its session and a mark);
- the child's environment holds no API key or other secret;
- resource limits bound memory, file size and CPU time;
- when the server runs as root, commands run as `nobody` (and `warnings` says
  so when they cannot).
It is not a container: see docs/security.md.
"""

from __future__ import annotations

import logging
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from ..redact import secret_name
from .base import Tool, ToolOutput

OUTPUT_LIMIT = 50_000

# The course's deny-list, then more of the same kind. `> /dev/` is the course's,
# narrowed so that the everyday `2> /dev/null` still works.
DENIED = [
    ("rm -rf /", re.compile(r"\brm\s+(-[a-zA-Z]*\s+)*-[a-zA-Z]*[rR][a-zA-Z]*\s+(-[a-zA-Z]+\s+)*/(\s|\*|$)")),
    ("sudo", re.compile(r"\bsudo\b")),
    ("shutdown", re.compile(r"\bshutdown\b")),
    ("reboot", re.compile(r"\breboot\b")),
    ("> /dev/", re.compile(r">\s*/dev/(?!null\b|stdout\b|stderr\b)")),
    ("su", re.compile(r"(^|[;&|]\s*)su(\s|$)")),
    ("halt / poweroff", re.compile(r"\b(halt|poweroff)\b")),
    ("mkfs", re.compile(r"\bmkfs")),
    ("dd of=", re.compile(r"\bdd\b.*\bof=/")),
    ("fork bomb", re.compile(r":\s*\(\s*\)\s*\{")),
    ("kill every process", re.compile(r"\bkill(all)?\s+(-\S+\s+)*-1\b|\bkillall\b|\bpkill\b")),
    ("chmod/chown of /", re.compile(r"\bch(mod|own)\s+(-\S+\s+)*\S+\s+/(\s|$)")),
]

MARK_VARIABLE = "LOOPSCOPE_STEP"
NPROC_LIMIT = 256  # processes of the unprivileged user, all runs together
CGROUP_PREFIX = "loopscope-step-"

log = logging.getLogger("loopscope.tools.bash")
# Shown where the app configures logging; never Python's bare fallback to stderr, which the CLI keeps for errors.
log.addHandler(logging.NullHandler())


def child_environment(workspace: Path) -> dict[str, str]:
    """The parent's environment less every secret, with HOME in the workspace."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not secret_name(name)
    }
    # HOME in the workspace keeps tools from reading the server user's dot-files.
    env.update(HOME=str(workspace), PWD=str(workspace))
    return env


def refused(command: str) -> str | None:
    """The deny-list entry `command` hits, if any."""
    for label, pattern in DENIED:
        if pattern.search(command):
            return label
    return None


def unprivileged_user(workspace: Path) -> tuple[int, int] | None:
    """(uid, gid) of `nobody` when the server runs as root and nobody can work in `workspace`.

    Commands then run as nobody: they cannot read the server's environment in
    /proc or its private files, and the process limit bounds a fork bomb (the
    kernel does not apply that limit to root). `root_warning` says why not.
    """
    return None if _why_root(workspace) else _nobody()


def _nobody() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return nobody.pw_uid, nobody.pw_gid


def _why_root(workspace: Path) -> str | None:
    """Why commands in `workspace` would run as root, the server's user; None when they would not."""
    if os.geteuid() != 0:
        return None
    if _nobody() is None:
        return "this machine has no user `nobody`"
    # Every folder above the workspace must let others pass, or nobody cannot reach it.
    # A folder not made yet is made by the tool with the usual mode (others may pass).
    for parent in Path(workspace).resolve().parents:
        try:
            mode = os.stat(parent).st_mode
        except FileNotFoundError:
            continue
        if not mode & 0o001:
            return f"`nobody` cannot reach the workspace: {parent} is closed to other users"
    return None


def root_warning(workspace: Path, drop_privileges: bool = True) -> str | None:
    """One line for the learner or teacher when commands in `workspace` would run as root, else None.

    As root, none of the `nobody` measures of docs/security.md hold: a command can
    read the server's environment (the API key) and files, and kill the server.
    """
    if os.geteuid() != 0:
        return None
    why = "the bash tool was made with drop_privileges=False" if not drop_privileges else _why_root(workspace)
    if why is None:
        return None
    return (f"Warning: commands run as root, not as `nobody`: {why}. They can read the server's files and "
            "environment (the API key) and stop the server; use a workspace under /tmp (see docs/security.md).")


def _join(cgroup_procs: bytes) -> None:
    """Move the calling process into the cgroup whose cgroup.procs is given; its descendants are born there."""
    fd = os.open(cgroup_procs, os.O_WRONLY)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def _prepare_child(memory_bytes: int, cpu_seconds: int, user: tuple[int, int] | None, cgroup_procs: bytes | None):
    """In the child, before the command: join the step's cgroup (still as root), set limits, drop to `user`."""
    if cgroup_procs:
        _join(cgroup_procs)
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 2**20, 64 * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if user:
        resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
        os.setgroups([])
        os.setgid(user[1])
        os.setuid(user[0])


class StepCgroup:
    """A cgroup (v2) of one step's own, made in the server's cgroup.

    The command joins it before it starts, so every process it ever starts is
    born in it, whatever it does with sessions, process groups or its
    environment, and cannot leave it: moving a process needs write access to
    cgroup files that belong to root. `kill` writes cgroup.kill, which the
    kernel applies to every member at once, forks in flight included. (A PID
    namespace would do as much, but the command would see itself as PID 1.)
    """

    kill_file = True  # use cgroup.kill where the kernel has it (5.14+); tests turn it off to try the older way

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def make(cls, parent: Path) -> StepCgroup | None:
        path = parent / f"{CGROUP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        try:
            path.mkdir()
        except OSError as exc:  # e.g. cgroup.max.descendants: this step falls back to its session and mark
            log.warning("could not make %s (%s): this command ends by its session and mark", path, exc)
            return None
        return cls(path)

    @property
    def procs(self) -> bytes:
        """What the child writes its pid to (a bytes path: the child should do as little as it can)."""
        return os.fsencode(self.path / "cgroup.procs")

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def kill(self, wait: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup and wait until none is left; False if some still are."""
        has_kill = self.kill_file and (self.path / "cgroup.kill").exists()
        deadline = time.monotonic() + wait
        while True:
            try:
                if has_kill:
                    (self.path / "cgroup.kill").write_text("1")
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


def _unescape(field: str) -> str:
    """A path from /proc/self/mountinfo, where a space is written \\040."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _own_cgroup_folder() -> Path | None:
    """The folder of the server's own cgroup in the cgroup v2 tree, if one is mounted and writable."""
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except (OSError, StopIteration):
        return None
    for line in mounts:
        fields, _, after = line.partition(" - ")
        fields = fields.split()
        if after.split()[:1] != ["cgroup2"] or len(fields) < 5:
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        if own == root or own.startswith(root.rstrip("/") + "/"):
            folder = Path(mount_point) / own[len(root):].lstrip("/")
            if os.access(folder, os.W_OK) and (folder / "cgroup.procs").exists():
                return folder
    return None


_cgroup_parent: Path | None = None
_cgroup_checked = False
_cgroup_lock = threading.Lock()


def cgroup_parent() -> Path | None:
    """Where steps get their cgroups, or None when this machine does not let the server make them.

    Checked once, by starting `true` in a trial cgroup: as root with a writable
    cgroup v2 tree it works; otherwise (not root, a container that mounts
    /sys/fs/cgroup read-only, cgroup v1 only) the steps fall back to their
    session and mark (see `_kill_group`).
    """
    global _cgroup_parent, _cgroup_checked
    with _cgroup_lock:
        if not _cgroup_checked:
            _cgroup_checked = True
            folder = _own_cgroup_folder()
            trial = StepCgroup.make(folder) if folder else None
            if trial is not None:
                try:
                    procs = trial.procs
                    subprocess.run(["true"], check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, preexec_fn=lambda: _join(procs))
                    _cgroup_parent = folder
                except (OSError, subprocess.SubprocessError):
                    pass
                trial.remove()
            if _cgroup_parent is None:  # said once, in the server's log
                log.warning("no cgroup for commands here (not root, or no writable cgroup v2): a process that "
                            "leaves its session and clears its environment can outlive its step "
                            "(see docs/security.md)")
        return _cgroup_parent


def _kill_group(pgid: int, mark: str | None = None) -> None:
    """Kill the command's process group, then whatever else is left in its session or carries its mark.

    `set -m` (job control) and setpgid() move children into process groups of
    their own, which a group kill misses; they stay in the command's session
    (its id is the command's pid, as the group's is). setsid() leaves the
    session too, but keeps the environment, where the command's MARK_VARIABLE
    finds it. Only a process that also drops its environment escapes. This is
    the way when the machine gives no cgroup (see `cgroup_parent` and
    docs/security.md).
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(20):  # a member may fork while it is being killed: go round until none is left
        members = _session_members(pgid, mark)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _marked(pid: str, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{MARK_VARIABLE}={mark}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def _session_members(sid: int, mark: str | None = None) -> list[int]:
    """Live processes (not zombies) of session `sid` or carrying `mark`, from /proc; none without /proc."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended meanwhile
        # after the command name: state, ppid, pgrp, session
        if len(fields) > 3 and fields[0] not in (b"Z", b"X") and (
                fields[3] == str(sid).encode() or (mark and _marked(name, mark))):
            found.append(int(name))
    return found


class Bash(Tool):
    """`bash` with input `{"command": string}`, exactly as the chapter defines it."""

    name = "bash"
    description = "Run a shell command in the workspace."
    input_schema = {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    }

    def __init__(self, timeout: float = 30.0, memory_bytes: int = 2 * 2**30, drop_privileges: bool = True):
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        self.drop_privileges = drop_privileges  # as root, run commands as `nobody` (see unprivileged_user)
        self._warned: set[str] = set()

    def warnings(self, workspace: Path) -> list[str]:
        """What a learner or teacher should know about this tool in `workspace`: commands that would run as root."""
        warning = root_warning(workspace, self.drop_privileges)
        return [warning] if warning else []

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        command = tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolOutput("Error: bash needs a non-empty string in `command`.", True)
        hit = refused(command)
        if hit:
            return ToolOutput(
                f"Error: Dangerous command blocked ({hit}). Loopscope's sandbox refuses it; the command was not run.",
                True,
            )
        workspace = Path(workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        user = unprivileged_user(workspace) if self.drop_privileges else None
        if user and os.stat(workspace).st_uid != user[0]:
            os.chown(workspace, *user)
            workspace.chmod(0o700)
        for warning in self.warnings(workspace) if user is None else []:  # as `nobody`, nothing to warn of
            if warning not in self._warned:  # in the server's log once; ToolBox.warnings is for the page
                self._warned.add(warning)
                log.warning("%s (workspace %s)", warning, workspace)
        parent = cgroup_parent()
        cgroup = StepCgroup.make(parent) if parent else None
        try:
            return self._run(command, workspace, user, cgroup)
        finally:
            if cgroup:
                cgroup.remove()

    def _run(self, command: str, workspace: Path, user: tuple[int, int] | None, cgroup: StepCgroup | None):
        mark = os.urandom(8).hex()  # in every process of this step's environment, for the final kill without a cgroup
        procs = cgroup.procs if cgroup else None
        proc = subprocess.Popen(
            ["/bin/bash", "-c", command],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(child_environment(workspace), **{MARK_VARIABLE: mark}),
            start_new_session=True,  # its own process group and session, for the kill without a cgroup
            preexec_fn=lambda: _prepare_child(self.memory_bytes, int(self.timeout) + 5, user, procs),
        )

        def kill():
            """Every process of the step: its cgroup, or else its group, its session and its mark."""
            if cgroup:
                cgroup.kill()
            else:
                _kill_group(proc.pid, mark)

        data, timed_out, flooded = self._collect(proc, kill)
        kill()  # nothing the command started outlives its step, whether it ended or timed out
        proc.wait()
        text = data.decode("utf-8", errors="replace").strip()
        cut = flooded or len(text) > OUTPUT_LIMIT
        text = text[:OUTPUT_LIMIT]
        if cut:
            text += f"\n[output cut at {OUTPUT_LIMIT:,} characters]"
        if timed_out:
            return ToolOutput(
                f"Error: Timeout ({self.timeout:g} s): the command was stopped and every process it started was killed."
                + (f"\nOutput before the timeout:\n{text}" if text else ""),
                True,
            )
        text = text or "(no output)"
        if proc.returncode:
            if flooded:  # the signal was the sandbox's own kill at the cap, not the command's failure
                reason = "stopped by the sandbox: it printed more than the cap"
            elif proc.returncode < 0:
                reason = f"killed by signal {-proc.returncode}"
            else:
                reason = f"exit status {proc.returncode}"
            return ToolOutput(f"{text}\n[{reason}]", True)
        return ToolOutput(text)

    def _collect(self, proc: subprocess.Popen, kill) -> tuple[bytes, bool, bool]:
        """Read the combined output until it ends, the cap is passed, or time is up."""
        fd = proc.stdout.fileno()
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.timeout
        exited_at = None
        try:
            while True:
                now = time.monotonic()
                if now >= deadline:
                    return b"".join(chunks), True, False
                # A background child may hold the pipe open after the command ends;
                # give it a moment, then stop reading (it is killed right after).
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > 0.5:
                    break
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    # The output is closed, but the command may still be on its way out: let it
                    # exit, or the kill below can turn a success into "killed by signal 9".
                    try:
                        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        return b"".join(chunks), True, False
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > OUTPUT_LIMIT * 4:  # utf-8 is at most 4 bytes a character
                    kill()
                    return b"".join(chunks), False, True
        finally:
            proc.stdout.close()
        return b"".join(chunks), False, False
