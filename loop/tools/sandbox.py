"""Where a run's commands run: bubblewrap around each, the run's cgroups and limits, and the user.

Under bubblewrap (`bwrap`, Debian's package `bubblewrap`), a command sees:
- the system read-only: /usr, /etc and the /bin, /sbin, /lib links; nothing
  else of the host (no /home, /root, /var, /srv, the app's folder, `runs/`, other
  workspaces);
- its workspace, the only writable folder, at /workspace;
- a private /tmp and /dev/shm (tmpfs, counted in the run's memory) and a
  minimal /dev;
- new PID, IPC, UTS, cgroup, user and network namespaces: its own processes
  only (its own /proc), no network unless the operator allows it
  (LOOPSCOPE_SANDBOX_NETWORK=1), and no user namespaces of its own;
- a seccomp filter that refuses the kernel keyring, which the kernel keeps
  per user, not per namespace (seccomp.py);
- an environment of a few named variables only (`child_environment`).

Each command starts through an exec chain with no Python in the child (the
server is threaded; Python code between fork and exec can deadlock there):

    sh (joins the run's cgroups) → prlimit (per-process limits)
       → setpriv (as root: drops to `nobody`, for good) → bwrap → bash -c COMMAND

Where bubblewrap cannot run (not installed, no user namespaces, a container
that forbids them) commands run without it, `plain`: the same chain without
bwrap, in the workspace's real folder. `warnings()` says so, and the page
refuses real models then unless the operator opts in
(LOOPSCOPE_ALLOW_UNSANDBOXED=1). docs/security.md says what each mode promises.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import seccomp
from .cgroups import Limits, RunCgroup, StepCgroup, join_and_run, layout
from .workspace import Workspace, sandbox_user, workspaces_root

INSIDE = "/workspace"  # where the workspace is, as commands see it under bubblewrap
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
BWRAP_VARIABLE = "LOOPSCOPE_BWRAP"  # the bubblewrap to use (default: `bwrap` on PATH)
NETWORK_VARIABLE = "LOOPSCOPE_SANDBOX_NETWORK"  # "1": commands may use the network
UNSANDBOXED_VARIABLE = "LOOPSCOPE_ALLOW_UNSANDBOXED"  # "1": real models on the page even without bubblewrap
APP = Path(__file__).resolve().parents[2]
NO_BUBBLEWRAP = "Warning: commands run without bubblewrap: "

log = logging.getLogger("loopscope.tools.sandbox")
log.addHandler(logging.NullHandler())


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def network_allowed() -> bool:
    """Whether the operator lets commands use the network (LOOPSCOPE_SANDBOX_NETWORK=1); off by default."""
    return _flag(NETWORK_VARIABLE)


def unsandboxed_allowed() -> bool:
    """Whether the operator lets real models run commands where bubblewrap cannot (LOOPSCOPE_ALLOW_UNSANDBOXED=1)."""
    return _flag(UNSANDBOXED_VARIABLE)


class Programs:
    """The programs of the exec chain, found once: prlimit and setpriv (util-linux), and bwrap if it works here."""

    def __init__(self):
        self.prlimit = shutil.which("prlimit")
        self.setpriv = shutil.which("setpriv")
        configured = os.environ.get(BWRAP_VARIABLE)
        self.bwrap = shutil.which(configured) if configured else shutil.which("bwrap")
        self.why_not: str | None = None  # why bubblewrap is not used
        if not self.prlimit or (os.geteuid() == 0 and not self.setpriv):
            self.why_not = "util-linux's prlimit and setpriv are missing"
            self.broken = "commands cannot run: this machine lacks prlimit or setpriv (Debian's util-linux)"
            self.bwrap = None
            return
        self.broken = None
        if not self.bwrap:
            self.why_not = ("bubblewrap is not installed (`apt-get install bubblewrap`)" if not configured
                            else f"{BWRAP_VARIABLE}={configured} is not a program")
            return
        rules = seccomp.readable(seccomp.keyring_filter())  # the trial has the filter too: it must work here
        try:
            trial = subprocess.run(self.head(None) + bwrap_options(self.bwrap, None, network=False, rules=rules)
                                   + ["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=30, cwd="/", pass_fds=(rules,))
        finally:
            os.close(rules)
        if trial.returncode != 0:
            said = trial.stderr.decode(errors="replace").strip().splitlines()
            self.why_not = f"bubblewrap cannot run here ({said[-1] if said else f'status {trial.returncode}'})"
            self.bwrap = None

    def head(self, limits: Limits | None, cpu_seconds: int = 0, nproc: bool = False) -> list[str]:
        """prlimit with the per-process limits, then (as root) setpriv to the sandbox's user."""
        argv = [self.prlimit]
        if limits is not None:
            argv += [f"--as={limits.process_memory_bytes}", f"--fsize={limits.file_bytes}", "--core=0"]
            if cpu_seconds:
                argv.append(f"--cpu={cpu_seconds}")
            if nproc:
                argv.append(f"--nproc={limits.nproc}")
        argv.append("--")
        if os.geteuid() == 0:
            uid, gid = sandbox_user()
            argv += [self.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--bounding-set=-all",
                     "--no-new-privs", "--"]
        return argv


# bwrap's --die-with-parent is the kernel's parent-death signal, which comes when the *thread* that started the
# process ends, not the server: a learner's child started ahead of Run by a thread that then returned (the page's
# warm-up) was killed with SIGKILL in the middle of its run ("the process ended with status -9"). So every sandboxed
# process is started by this one thread, which lives as long as the server and ends with it.
_starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loopscope-starter")


def start(argv: list[str], **options) -> subprocess.Popen:
    """`subprocess.Popen(argv, **options)`, started by the thread that lives as long as the server."""
    return _starter.submit(subprocess.Popen, argv, **options).result()


_programs: Programs | None = None
_programs_lock = threading.Lock()


def programs() -> Programs:
    """The exec chain's programs on this machine, checked at the first command (a trial of bwrap), then kept."""
    global _programs
    with _programs_lock:
        if _programs is None:
            _programs = Programs()
            if _programs.why_not:
                log.warning("commands run without bubblewrap: %s (see docs/security.md)", _programs.why_not)
        return _programs


def _hidden() -> list[Path]:
    """Folders a command must not see even where they sit under a system folder it does (an app in /usr/local)."""
    found = [APP]
    if os.environ.get("LOOPSCOPE_RUNS"):
        found.append(Path(os.environ["LOOPSCOPE_RUNS"]))
    try:
        found.append(workspaces_root())
    except (OSError, ValueError):
        pass
    return [p.resolve() for p in found]


def bwrap_options(bwrap: str, workspace: Path | None, network: bool, limits: Limits = Limits(),
                  rules: int | None = None) -> list[str]:
    """bwrap and its options, up to the command: the view of the machine a command gets (see the module's doc).

    `rules`: an fd bwrap reads the seccomp program from (seccomp.readable), which it applies before the command.
    """
    uid, gid = sandbox_user()
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--uid", str(uid), "--gid", str(gid), "--hostname", "loopscope"]
    if rules is not None:
        argv += ["--seccomp", str(rules)]
    if network:
        argv.append("--share-net")
    for folder in SYSTEM:
        if os.path.islink(folder):  # /bin → usr/bin on a merged /usr
            argv += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    if network and os.path.isdir("/run/systemd/resolve"):  # /etc/resolv.conf may point there
        argv += ["--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve"]
    argv += ["--dev", "/dev", "--proc", "/proc",
             "--size", str(limits.workspace_bytes), "--tmpfs", "/tmp",
             "--size", str(limits.workspace_bytes), "--tmpfs", "/dev/shm"]
    for hidden in _hidden():
        if any(hidden == Path(s) or Path(s) in hidden.parents for s in SYSTEM if os.path.isdir(s)):
            argv += ["--tmpfs", str(hidden), "--remount-ro", str(hidden)]
    if workspace is None:
        argv += ["--dir", INSIDE]
    else:
        argv += ["--bind", str(workspace), INSIDE]
    return argv + ["--chdir", INSIDE, "--remount-ro", "/"]


# What a command gets of the server's environment: language, terminal and time zone, which change how tools
# print, and nothing else. An allow-list, because no list of names to remove knows every secret (DB_PASS,
# DATABASE_URL, SENTRY_DSN, a proxy's URL with its password, ...).
PASSED = ("LANG", "LANGUAGE", "TERM", "TZ", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY",
          "LC_NUMERIC", "LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER",
          "LC_TELEPHONE")


def child_environment(home: str) -> dict[str, str]:
    """The few variables of the server's environment in PASSED, with a fixed PATH and HOME in the workspace."""
    env = {name: os.environ[name] for name in PASSED if name in os.environ}
    # HOME in the workspace keeps tools from reading the server user's dot-files.
    env.update(HOME=home, PWD=home, PATH=PATH)
    return env


class Sandbox:
    """How one run's commands run: its workspace, its cgroups (made at its first command), its mode."""

    def __init__(self, workspace: Workspace, limits: Limits = Limits(), network: bool | None = None):
        self.workspace = workspace
        self.limits = limits
        self.network = network_allowed() if network is None else network
        self._cgroup: RunCgroup | None = None
        self._lock = threading.Lock()

    @property
    def mode(self) -> str:
        """"bubblewrap", or "plain" where it cannot run."""
        return "bubblewrap" if programs().bwrap else "plain"

    @property
    def inside(self) -> str:
        """The workspace's path as commands see it."""
        return INSIDE if self.mode == "bubblewrap" else str(self.workspace.path)

    def problem(self) -> str | None:
        """Why no command can run here (the reason is the whole error); None when they can."""
        return programs().broken or self.workspace.problem()

    def warnings(self) -> list[str]:
        """What a learner or teacher should know before the first command, one line each; [] when all is well."""
        found = []
        why_not = programs().why_not
        if why_not:
            found.append(f"{NO_BUBBLEWRAP}{why_not}. They see the machine as "
                         f"{'`nobody`' if os.geteuid() == 0 else 'the server’s user'} does, share its network "
                         "and /tmp, and runs are not isolated from each other (see docs/security.md).")
        return found + self.workspace.warnings()

    def cgroup(self) -> RunCgroup | None:
        """The run's cgroups, made at its first command where the machine allows them."""
        with self._lock:
            if self._cgroup is None:
                where = layout()
                if where.steps is not None or where.v1:
                    self._cgroup = RunCgroup(where, self.limits)
            return self._cgroup

    def argv(self, command: str, step: StepCgroup | None, cpu_seconds: int = 0, info_fd: int | None = None,
             rules: int | None = None) -> list[str]:
        """The exec chain that runs `command` (joining `step` and the run's cgroups); CPU time per process.

        `info_fd`: where bwrap writes `{"child-pid": …}`, the pid of the namespace's init (see bash.py).
        `rules`: where bwrap reads the seccomp filter (seccomp.readable); under bubblewrap it is required.
        """
        found = programs()
        cgroup = self.cgroup()
        procs = cgroup.procs(step) if cgroup else ([step.procs] if step else [])
        pids_bounded = cgroup is not None and cgroup.read("pids.max") is not None
        head = found.head(self.limits, cpu_seconds, nproc=not pids_bounded)
        if found.bwrap:
            if rules is None:
                raise ValueError("under bubblewrap a command needs the seccomp filter's fd (seccomp.readable)")
            tail = bwrap_options(found.bwrap, self.workspace.path, self.network, self.limits, rules)
            if info_fd is not None:
                tail[1:1] = ["--info-fd", str(info_fd)]
        else:
            tail = []
        return join_and_run(procs, head + tail + ["/bin/bash", "-c", command])

    def cwd(self) -> str:
        return "/" if programs().bwrap else str(self.workspace.path)

    def environment(self) -> dict[str, str]:
        return child_environment(self.inside)

    def describe(self) -> str:
        """One line: how commands run here (for the CLI and the bench)."""
        cgroup = layout()
        limited = ", ".join(cgroup.limited) or "none"
        size = f"a tmpfs of {self.workspace.size // 2**20} MiB" if self.workspace.size else "no size limit"
        if self.mode != "bubblewrap":
            network = "the host's"
        else:
            network = "allowed" if self.network else "none"
        return (f"sandbox: {self.mode} · uid {sandbox_user()[0]} · run limits (cgroup): {limited} · "
                f"workspace: {size} · network: {network}")

    def close(self) -> None:
        with self._lock:
            if self._cgroup is not None:
                self._cgroup.remove()
                self._cgroup = None
