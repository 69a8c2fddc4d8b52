"""The chapter's `bash` tool, in a sandbox that holds against a hostile model.

Same schema and the same output rules as the course's `run_bash` (stdout and
stderr together, stripped, cut to 50,000 characters, "(no output)" when empty,
dangerous commands refused). What it adds, and why (sandbox.py has the rest):
- each command runs under bubblewrap: the system read-only, the run's
  workspace the only folder it may write, no network, its own processes only;
- as a user that is never root (`nobody` when the server is root);
- in its run's cgroup (memory, processes, CPU weight for the whole run) and a
  cgroup of the step's own, so every process the command starts is killed at
  the timeout and when the command ends;
- the child's environment holds a few named variables only, so no API key or
  other secret;
- no kernel keyring (a seccomp filter: keys are per user, and every run's user
  is the same);
- per-process limits bound address space, file size and CPU time.
See docs/security.md for what each mode promises.
"""

from __future__ import annotations

import logging
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from . import seccomp
from .base import Tool, ToolOutput
from .cgroups import Limits
from .read_only import read_only
from .sandbox import Sandbox, start
from .workspace import Workspace

OUTPUT_LIMIT = 50_000

# How much longer than its timeout a command may really run: 1, except where LOOPSCOPE_TIMEOUT_SCALE says more (up
# to 10 times). The tests stretch it, as they shorten the loop's waits (engine/waits.py): on a loaded machine
# (three test processes on two cores) a command of a few milliseconds can take seconds to start. What a command
# is told and shows is still its own timeout, and its CPU time (which a loaded machine does not lengthen) is
# bounded by it as before.
TIMEOUT_SCALE_VARIABLE = "LOOPSCOPE_TIMEOUT_SCALE"


def timeout_scale() -> float:
    """How many times its timeout a command may really run (1 outside tests)."""
    try:
        value = float(os.environ.get(TIMEOUT_SCALE_VARIABLE, "1"))
    except ValueError:
        return 1.0
    return value if 1 <= value <= 10 else 1.0

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

log = logging.getLogger("loopscope.tools.bash")
# Shown where the app configures logging; never Python's bare fallback to stderr, which the CLI keeps for errors.
log.addHandler(logging.NullHandler())


def refused(command: str) -> str | None:
    """The deny-list entry `command` hits, if any."""
    for label, pattern in DENIED:
        if pattern.search(command):
            return label
    return None


def kill_group(pgid: int, mark: str | None = None) -> None:
    """Kill the process group `pgid`, then whatever else is left in its session or carries its `mark`.

    For a step's command and for a learner's child (loop/yours/sandboxed.py), both started in a session of
    their own whose id is their pid.

    `set -m` (job control) and setpgid() move children into process groups of
    their own, which a group kill misses; they stay in the command's session
    (its id is the command's pid, as the group's is). setsid() leaves the
    session too, but keeps the environment, where the command's MARK_VARIABLE
    finds it. Only a process that also drops its environment escapes, and only
    without bubblewrap: under it, the command's PID namespace ends with bwrap.
    This is the way when the machine gives no cgroup (see cgroups.layout and
    docs/security.md).
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    # A member may fork while it is being killed: go round until none is left. Under bubblewrap the
    # namespace's init carries the mark and, killed, ends every process of its namespace before it
    # dies itself; so waiting for the marked to go waits for all of them.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        members = _session_members(pgid, mark)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.002)
    log.warning("processes of the step %s were still alive 5 s after SIGKILL", pgid)


def namespace_init(info: int) -> int | None:
    """A pidfd of the init of the PID namespace bwrap made, whose pid bwrap writes to `info` (its --info-fd).

    None when bwrap ended before it made one. A step's and a learner's child's: `end_namespace` ends it.
    """
    ready, _, _ = select.select([info], [], [], 5.0)
    match = re.search(rb'"child-pid"\s*:\s*(\d+)', os.read(info, 4096) if ready else b"")
    if not match:
        return None  # bwrap ended before it made the namespace: nothing of it is left
    try:
        return os.pidfd_open(int(match.group(1)))
    except ProcessLookupError:
        return None


def end_namespace(init: int) -> None:
    """Kill the init of a PID namespace (a pidfd from `namespace_init`) and wait until it is gone.

    Its end ends every process of the namespace: the kernel kills them all and
    the init exits only when none is left. The mark alone cannot tell: a dying
    process's environment reads empty while its namespace is still going.
    """
    try:
        signal.pidfd_send_signal(init, signal.SIGKILL)
    except ProcessLookupError:
        return
    if not select.select([init], [], [], 5.0)[0]:  # readable once the process has exited
        log.warning("the PID namespace of a step was still there 5 s after SIGKILL")


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

    sandboxed = True  # ToolBox.run gives it the run's Sandbox (see run_in)

    def __init__(self, timeout: float = 30.0, limits: Limits | None = None, network: bool | None = None):
        self.timeout = timeout
        self.limits = limits or Limits()
        self.network = network  # None: as the operator set it (sandbox.network_allowed)

    def sandbox(self, workspace: Path | Workspace) -> Sandbox:
        """A sandbox of this tool's limits in `workspace` (a run's tool box makes one for all its tools)."""
        space = workspace if isinstance(workspace, Workspace) else Workspace.given(workspace)
        return Sandbox(space, self.limits, self.network)

    def warnings(self, workspace: Path) -> list[str]:
        """What a learner or teacher should know about running commands in `workspace`."""
        return self.sandbox(workspace).warnings()

    def parallel_safe(self, tool_input: dict) -> bool:
        """Only a command of the short read-only list may run beside others (loop/engine/parallel.py)."""
        return read_only(tool_input.get("command"))

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        """Run one command in `workspace`, in a sandbox of its own (a run's tool box uses `run_in` instead)."""
        sandbox = self.sandbox(workspace)
        try:
            return self.run_in(sandbox, tool_input)
        finally:
            sandbox.close()

    def run_in(self, sandbox: Sandbox, tool_input: dict) -> ToolOutput:
        """Run one command in the run's sandbox."""
        command = tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolOutput("Error: bash needs a non-empty string in `command`.", True)
        hit = refused(command)
        if hit:
            return ToolOutput(
                f"Error: Dangerous command blocked ({hit}). Loopscope's sandbox refuses it; the command was not run.",
                True,
            )
        problem = sandbox.problem()  # never run as root instead: say what is needed
        if problem:
            return ToolOutput(f"Error: the command was not run: {problem}.", True)
        sandbox.workspace.prepare()
        cgroup = sandbox.cgroup()
        step = cgroup.step() if cgroup else None
        try:
            return self._run(command, sandbox, step)
        finally:
            if step:
                step.remove()

    def _run(self, command: str, sandbox: Sandbox, step):
        mark = os.urandom(8).hex()  # in every process of this step's environment, for the final kill without a cgroup
        # Without a cgroup, under bubblewrap, the step ends with its PID namespace: bwrap says its init's pid.
        info = os.pipe() if step is None and sandbox.mode == "bubblewrap" else None
        # bwrap reads the seccomp program from this fd before it starts the command.
        rules = seccomp.readable(seccomp.keyring_filter()) if sandbox.mode == "bubblewrap" else None
        try:
            proc = start(
                sandbox.argv(command, step, cpu_seconds=int(self.timeout) + 5, info_fd=info[1] if info else None,
                             rules=rules),
                cwd=sandbox.cwd(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=dict(sandbox.environment(), **{MARK_VARIABLE: mark}),
                start_new_session=True,  # its own process group and session, for the kill without a cgroup
                pass_fds=((info[1],) if info else ()) + ((rules,) if rules is not None else ()),
            )
        finally:
            if info:
                os.close(info[1])
            if rules is not None:
                os.close(rules)
        namespace = namespace_init(info[0]) if info else None  # a pidfd: safe from the pid's reuse

        def kill():
            """Every process of the step: its cgroup, or else its group, its session, its mark, its namespace."""
            if step:
                step.kill()
                return
            kill_group(proc.pid, mark)
            if namespace is not None:
                end_namespace(namespace)

        try:
            data, timed_out, flooded = self._collect(proc, kill)
            kill()  # nothing the command started outlives its step, whether it ended or timed out
            proc.wait()
        finally:
            for fd in ([info[0]] if info else []) + ([namespace] if namespace is not None else []):
                os.close(fd)
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
        deadline = time.monotonic() + self.timeout * timeout_scale()
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
