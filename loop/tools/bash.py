"""The chapter's `bash` tool, made safe enough for a classroom.

Same schema and the same output rules as the course's `run_bash` (stdout and
stderr together, stripped, cut to 50,000 characters, "(no output)" when empty,
dangerous commands refused). What it adds, and why:
- it runs in the run's own workspace, never the app's folder;
- the whole process group is killed at the timeout and when the command ends,
  so nothing started by the model outlives its step;
- the child's environment holds no API key or other secret;
- resource limits bound memory, file size and CPU time;
- when the server runs as root, commands run as `nobody`.
It is not a container: see docs/security.md.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
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
    kernel does not apply that limit to root).
    """
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    # Every folder above the workspace must let others pass, or nobody cannot reach it.
    for parent in Path(workspace).resolve().parents:
        if not os.stat(parent).st_mode & 0o001:
            return None
    return nobody.pw_uid, nobody.pw_gid


def _limit_resources(memory_bytes: int, cpu_seconds: int, user: tuple[int, int] | None) -> None:
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


def _kill_group(pgid: int, mark: str | None = None) -> None:
    """Kill the command's process group, then whatever else is left in its session or carries its mark.

    `set -m` (job control) and setpgid() move children into process groups of
    their own, which a group kill misses; they stay in the command's session
    (its id is the command's pid, as the group's is). setsid() leaves the
    session too, but keeps the environment, where the command's MARK_VARIABLE
    finds it. Only a process that also drops its environment escapes: see
    docs/security.md.
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
        mark = os.urandom(8).hex()  # in every process of this step's environment, for the final kill
        proc = subprocess.Popen(
            ["/bin/bash", "-c", command],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(child_environment(workspace), **{MARK_VARIABLE: mark}),
            start_new_session=True,  # its own process group, so one kill reaches every child
            preexec_fn=lambda: _limit_resources(self.memory_bytes, int(self.timeout) + 5, user),
        )
        data, timed_out, flooded = self._collect(proc)
        _kill_group(proc.pid, mark)  # nothing the command started outlives its step
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

    def _collect(self, proc: subprocess.Popen) -> tuple[bytes, bool, bool]:
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
                    # exit, or the group kill below can turn a success into "killed by signal 9".
                    try:
                        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        return b"".join(chunks), True, False
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > OUTPUT_LIMIT * 4:  # utf-8 is at most 4 bytes a character
                    _kill_group(proc.pid)
                    return b"".join(chunks), False, True
        finally:
            proc.stdout.close()
        return b"".join(chunks), False, False
