"""What no command gets round: the end of its step, its run's cgroups, and the user it runs as.

Every process a command starts must be gone by the time the `bash` tool
returns, whether the command timed out or ended, even one that leaves the
session and clears its environment (`setsid env -i …`). Where the server may
make cgroups (root and a writable cgroup tree; the tests that need one are
skipped elsewhere, with the reason) every step gets one and cgroup.kill ends
it. Without one, bubblewrap's PID namespace still ends everything; only
without both (tested here by hiding them) does `setsid env -i` escape, the gap
docs/security.md states.

Commands never run as root: a folder `nobody` cannot enter is refused, with
what it would need, and where bubblewrap cannot run the run says so.

Sleeps carry an argument no other test uses (`sleep 313.7…`), so a survivor is
found in /proc by its command line, whatever its session, group or pid.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from loop.tools import Bash, ToolBox
from loop.tools.bash import TIMEOUT_SCALE_VARIABLE
from loop.tools import bash as bash_module, cgroups, sandbox
from loop.tools.cgroups import STEP_PREFIX, Layout, Limits, StepCgroup, layout
from loop.tools.sandbox import INSIDE
from loop.tools.workspace import sandbox_user
from loop.engine.toolsets import default_toolbox
from tests.cli import clean_env, loop_main, start_cli
from tests.conftest import live_with as holding  # live processes whose command line holds the argument

AS_ROOT = os.geteuid() == 0
ROOT = Path(__file__).resolve().parent.parent
needs_cgroup = pytest.mark.skipif(layout().steps is None,
                                  reason="the server may not make cgroups here (not root, or no writable cgroup v2)")
needs_limits = pytest.mark.skipif(not {"memory", "pids"} <= set(layout().limited),
                                  reason="no memory and pids cgroups for runs here (not root, or none writable)")
needs_nobody = pytest.mark.skipif(not AS_ROOT, reason="commands drop to nobody only when the server runs as root")

# Each starts a `sleep {arg}` that leaves its step's session (and mostly its environment) and returns.
ESCAPERS = {
    "setsid-env-i": "setsid env -i sleep {arg} > /dev/null 2>&1 < /dev/null &",
    "nohup": "nohup setsid env -i sleep {arg} > /dev/null 2>&1 < /dev/null &",
    "double-fork": "( (setsid env -i sleep {arg} > /dev/null 2>&1 < /dev/null &) & )",
    "daemon": "python3 -c 'import os, signal\nif os.fork(): os._exit(0)\nos.setsid()\nif os.fork(): os._exit(0)\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nos.execve(\"/bin/sleep\", [\"sleep\", \"{arg}\"], {{}})' "
              "> /dev/null 2>&1 < /dev/null",
    "respawner": "setsid env -i sh -c 'trap \"\" TERM HUP INT; while :; do sleep {arg}; done' > /dev/null 2>&1 "
                 "< /dev/null &",
    "holds-the-output": "setsid env -i sleep {arg} &",  # keeps the pipe open after the command ends
}
ENDINGS = {"times-out": "sleep 300", "returns": "echo started"}


@pytest.fixture
def arg(tag):
    """A sleep argument no other process has (conftest's `tag`: what holds it after the test is killed)."""
    return tag


@pytest.fixture
def at_its_own_timeout(monkeypatch):
    """A command meant to be ended by its timeout is ended at its own timeout, not at the three times the tests
    allow (tests/conftest.py `long_command_timeouts`): what such a test checks (nothing survives, "Timeout (1 s)")
    does not need its output, which a loaded machine could delay past the second."""
    monkeypatch.setenv(TIMEOUT_SCALE_VARIABLE, "1")


@pytest.fixture
def without_cgroups(monkeypatch):
    """The tool as on a machine that gives it no cgroup: not root, or /sys/fs/cgroup read-only. Its processes are
    then bounded by the sandbox user's RLIMIT_NPROC, which counts that user's processes on the whole machine: here
    the other test processes' fork floods too (held at their runs' cgroups, 128 each), which a run of these tests
    must not meet. What these tests check is what ends a command's processes, not that bound."""
    monkeypatch.setattr(cgroups, "_layout", Layout())
    monkeypatch.setattr(bash_module, "Limits", functools.partial(Limits, nproc=Limits().nproc * 16))


@pytest.fixture
def without_bubblewrap(monkeypatch):
    """The tool as on a machine where bubblewrap cannot run (here: the operator points LOOPSCOPE_BWRAP nowhere)."""
    monkeypatch.setenv(sandbox.BWRAP_VARIABLE, "/nonexistent/bwrap")
    monkeypatch.setattr(sandbox, "_programs", None)
    assert sandbox.programs().bwrap is None


def run(ws: Path, command: str, timeout: float = 1.0):
    return ToolBox([Bash(timeout=timeout)], ws).run("bash", {"command": command})


def step_cgroups() -> list[str]:
    """This process's step cgroups still there, wherever its runs keep them. The other test processes' come and go
    while the tree is read: os.walk passes over a folder gone since it was listed (a glob fails on it)."""
    mine = f"{STEP_PREFIX}{os.getpid()}-"
    return sorted(name for _, folders, _ in os.walk(layout().steps) for name in folders if name.startswith(mine))


# -- with a cgroup: nothing survives its step ---------------------------------------

@needs_cgroup
@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("name", list(ESCAPERS))
def test_nothing_a_command_started_survives_its_step(name, ending, workspace, arg, request):
    if ending == "times-out":
        request.getfixturevalue("at_its_own_timeout")
    command = f"{ESCAPERS[name].format(arg=arg)}\nsleep 0.2; {ENDINGS[ending]}"
    out = run(workspace, command)
    assert holding(arg) == [], f"{name}: a process outlived its step"  # at once: the tool waited for the kill
    if ending == "times-out":
        assert out.is_error and out.content.startswith("Error: Timeout (1 s)")
    else:
        assert out.content == "started" and not out.is_error
    assert step_cgroups() == []  # and the step's cgroup is gone with it


@needs_cgroup
def test_the_escapers_did_start_what_the_step_kills(shared, arg):
    # So the test above finds nothing because it was killed, not because it never ran.
    out = run(shared, f"{ESCAPERS['setsid-env-i'].format(arg=arg)}\nsleep 0.2; "
                      f"pgrep -f {arg} > /dev/null && echo running")
    assert out.content == "running"
    assert holding(arg) == []


@needs_cgroup
@needs_nobody
def test_a_command_as_nobody_cannot_leave_its_cgroup(shared, arg):
    parent = layout().steps
    out = run(shared, f"id -u; grep '^0::' /proc/self/cgroup; echo $$ > {parent}/cgroup.procs; "
                      f"sleep {arg} & echo $! > {parent}/cgroup.procs; mkdir {parent}/mine; sleep 300")
    lines = out.content.splitlines()
    assert lines[2] == str(sandbox_user()[0])  # after "Error: Timeout…" and "Output before…"
    assert lines[3] == "0::/"  # its own cgroup namespace: the step's cgroup is its root
    assert out.content.count("No such file or directory") == 3  # the cgroup tree is not in its view at all
    assert holding(arg) == []
    assert not (parent / "mine").exists()


@needs_cgroup
@needs_nobody
def test_in_a_cgroup_commands_keep_their_user_limits_and_environment(shared, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "canary-sandbox-key")
    box = ToolBox([Bash(timeout=7)], shared)
    out = box.run("bash", {"command": "id -u; ulimit -v; ulimit -t; ulimit -f; env | grep -c ANTHROPIC_API_KEY; "
                                      "echo $HOME"})
    # nobody, 2 GiB of address space (in KiB), CPU time of the timeout + 5 s, 64 MiB a file (in KiB), no key, HOME
    assert out.content.splitlines() == [str(sandbox_user()[0]), str(2 * 2**20), "12", str(64 * 2**10), "0", INSIDE]
    box.close()


@needs_limits
def test_a_run_has_one_cgroup_with_its_limits_for_all_its_commands(shared):
    box = ToolBox([Bash(timeout=5)], shared)
    assert box.sandbox.cgroup() is not None
    run = box.sandbox.cgroup()
    assert run.read("pids.max") == "128"
    assert (run.read("memory.max") or run.read("memory.limit_in_bytes")) == str(2**30)
    # each command of the run counts against the same cgroup: the run's memory grows with its workspace
    before = int(run.read("memory.current") or run.read("memory.usage_in_bytes"))
    box.run("bash", {"command": "head -c 50000000 /dev/zero > kept"})
    after = int(run.read("memory.current") or run.read("memory.usage_in_bytes"))
    folders = list(run.folders)
    box.close()
    assert all(not f.exists() for f in folders)  # closing the box removed the run's cgroups
    if box.sandbox.workspace.size:  # on tmpfs the workspace's pages are the run's
        assert after - before > 40_000_000


@needs_cgroup
def test_a_fork_loop_is_ended_with_its_step(shared, arg, monkeypatch):
    # cgroup.kill reaches forks in flight; a group or session kill has to go round.
    monkeypatch.setenv(TIMEOUT_SCALE_VARIABLE, "1")  # it is ended by its timeout: no need to spin longer
    command = (f"python3 -c 'import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
               f"        time.sleep(0.01)' {arg} > /dev/null 2>&1 & sleep 300")
    out = run(shared, command)
    assert out.is_error and holding(arg) == []


@needs_cgroup
def test_without_cgroup_kill_the_listed_processes_are_killed_until_none_is_left(shared, arg, monkeypatch,
                                                                               at_its_own_timeout):
    # Kernels before 5.14 have no cgroup.kill: the tool kills each member, again until the cgroup is empty.
    monkeypatch.setattr(StepCgroup, "kill_file", False)
    out = run(shared, f"{ESCAPERS['respawner'].format(arg=arg)}\n{ESCAPERS['daemon'].format(arg=arg)}\nsleep 300")
    assert out.is_error and holding(arg) == []
    assert step_cgroups() == []


# -- without a cgroup: the PID namespace, the session and the mark, and what they miss --------------

@pytest.mark.parametrize("command", [
    "setsid sleep {arg} > /dev/null 2>&1 < /dev/null & sleep 300",  # leaves the session, keeps the mark
    "set -m; sleep {arg} & sleep 300",  # a group of its own
    "sleep {arg} & sleep 300",
])
def test_without_a_cgroup_the_session_and_the_mark_still_end_what_they_see(command, workspace, arg, without_cgroups,
                                                                          at_its_own_timeout):
    out = run(workspace, command.format(arg=arg))
    assert out.is_error and out.content.startswith("Error: Timeout (1 s)")
    assert holding(arg) == []


@pytest.mark.parametrize("name", list(ESCAPERS))
def test_without_a_cgroup_bubblewraps_pid_namespace_ends_every_escaper(name, shared, arg, without_cgroups):
    out = run(shared, f"{ESCAPERS[name].format(arg=arg)}\nsleep 0.2; echo started")
    assert out.content == "started"
    assert holding(arg) == [], f"{name}: a process outlived its step"


def test_without_a_cgroup_or_bubblewrap_a_process_that_leaves_the_session_and_clears_its_environment_escapes(
        shared, arg, without_cgroups, without_bubblewrap):
    # The gap docs/security.md states for machines with neither; if this starts failing, update the docs.
    out = run(shared, f"{ESCAPERS['setsid-env-i'].format(arg=arg)}\nsleep 0.2; echo started")
    assert out.content == "started"
    assert len(holding(arg)) == 1


# -- the user: never root, and a folder it cannot use is said, with what it needs ----------

@needs_nobody
def test_a_folder_nobody_cannot_enter_is_refused_with_what_it_needs_and_nothing_runs_as_root(tmp_path):
    # pytest's tmp_path sits under a folder of mode 700: nobody cannot enter it.
    closed = next(p for p in reversed(tmp_path.resolve().parents) if not os.stat(p).st_mode & 0o001)
    box = default_toolbox(tmp_path, toolset="s02")
    expected = (f"commands run as uid {sandbox_user()[0]} (`nobody`), which cannot enter {closed} (mode 700, uid 0): "
                "give a folder it can enter and write, e.g. under /tmp with `chown 65534:65534 FOLDER`, or leave the "
                "workspace out and Loopscope makes one")
    assert box.problem() == expected
    out = box.run("bash", {"command": "id -u > ran-as; id -u"})
    assert out.is_error and out.content == f"Error: the command was not run: {expected}."
    assert not (tmp_path / "ran-as").exists()  # nothing ran, as root or anyone
    wrote = box.run("write_file", {"path": "a.txt", "content": "x"})  # the file tools act as nobody too
    assert wrote.is_error and wrote.content == "Error: a.txt: Permission denied" and not (tmp_path / "a.txt").exists()


@needs_nobody
def test_a_given_folder_is_not_taken_over(tmp_path):
    # The folder and what is in it stay the user's: no chown, no chmod. Commands can read it; writing needs
    # what the warning says.
    given = Path(tempfile.mkdtemp(prefix="loopscope-given-"))
    try:
        (given / "notes.txt").write_text("mine\n")
        given.chmod(0o755)
        before = [(os.stat(p).st_uid, os.stat(p).st_mode) for p in (given, given / "notes.txt")]
        box = default_toolbox(given)
        assert box.warnings == [f"Commands run as `nobody` (uid {sandbox_user()[0]}), which cannot write in {given} "
                                f"(mode 755, uid 0): they can read it but not change it. To let them, "
                                f"`chown -R {sandbox_user()[0]}:{sandbox_user()[1]} {given}`; Loopscope does not "
                                "change a folder you give."]
        assert box.run("bash", {"command": "cat notes.txt"}).content == "mine"
        assert "Permission denied" in box.run("bash", {"command": "touch new"}).content
        box.close()
        assert [(os.stat(p).st_uid, os.stat(p).st_mode) for p in (given, given / "notes.txt")] == before
        assert given.exists() and (given / "notes.txt").read_text() == "mine\n"  # closing leaves it
    finally:
        subprocess.run(["rm", "-rf", str(given)])


@needs_nobody
def test_a_folder_not_made_yet_is_made_for_the_commands(tmp_path):
    # The missing folders are Loopscope's to make, and it gives them to the user commands run as.
    base = Path(tempfile.mkdtemp(prefix="loopscope-not-made-"))
    base.chmod(0o755)
    try:
        box = ToolBox([Bash()], base / "a" / "ws")
        assert box.warnings == [] and box.problem() is None
        assert box.run("bash", {"command": "touch made; id -u"}).content == str(sandbox_user()[0])
        assert os.stat(base / "a").st_uid == os.stat(base / "a" / "ws").st_uid == sandbox_user()[0]
        assert os.stat(base).st_uid == 0  # what was there stays as it was
    finally:
        subprocess.run(["rm", "-rf", str(base)])
    assert ToolBox([Bash()], tmp_path / "not" / "yet").problem() is not None  # under a closed folder: refused


def test_not_as_root_there_is_nothing_to_warn_about():
    # A server that is not root has nothing to warn about: its commands run as itself. As root (as in CI),
    # the check runs in a process that is not: the sandbox's user, in a folder of its own, with a copy of the
    # engine there (the clone may sit in a folder that user cannot read).
    base = Path(tempfile.mkdtemp(prefix="loopscope-not-root-"))
    try:
        base.chmod(0o755)
        shutil.copytree(ROOT / "loop", base / "loop", ignore=shutil.ignore_patterns("__pycache__"))
        folder = base / "ws"
        folder.mkdir()
        code = "import sys; from loop.engine.toolsets import default_toolbox; print(default_toolbox(sys.argv[1], toolset='s02').warnings)"
        command = [sys.executable, "-c", code, str(folder)]
        if AS_ROOT:
            uid, gid = sandbox_user()
            os.chown(folder, uid, gid)
            command = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *command]
        done = subprocess.run(command, cwd=base, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]"
    finally:
        subprocess.run(["rm", "-rf", str(base)])


def test_a_tool_without_warnings_adds_none(shared):
    class Echo:
        name, input_schema = "echo", {}

    assert ToolBox([Echo()], shared).warnings == []


# -- where bubblewrap cannot run ----------------------------------------------------------

NO_BWRAP = "Warning: commands run without bubblewrap: "


def test_without_bubblewrap_the_run_says_so_and_commands_still_never_run_as_root(shared, without_bubblewrap, caplog):
    box = default_toolbox(shared)
    (warning,) = box.warnings
    assert warning.startswith(NO_BWRAP + f"{sandbox.BWRAP_VARIABLE}=/nonexistent/bwrap is not a program.")
    assert "runs are not isolated from each other" in warning
    out = box.run("bash", {"command": "id -u; pwd"})
    assert out.content.splitlines() == [str(sandbox_user()[0]), str(shared)]  # plain: the real folder
    assert box.sandbox.describe().startswith("sandbox: plain")


def test_the_cli_says_how_commands_run_and_refuses_a_folder_nobody_cannot_use(tmp_path):
    # The run without bubblewrap is a real command (the programs found are kept for the process); while it runs,
    # the other two go through `main` in this process, as `python -m loop` calls it.
    env = {**clean_env(), sandbox.BWRAP_VARIABLE: "/nonexistent/bwrap"}
    without = start_cli(["run", "--scenario", "list-files"], env=env)
    (ok,) = loop_main(["run", "--scenario", "list-files"])
    if AS_ROOT:
        closed = tmp_path / "closed"
        closed.mkdir(mode=0o700)
        (refused,) = loop_main(["run", "--scenario", "list-files", "--workspace", str(closed / "ws")])
    (cli,) = without()
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert lines[1].startswith("sandbox: plain")
    assert lines[2].startswith(NO_BWRAP + f"{sandbox.BWRAP_VARIABLE}=/nonexistent/bwrap is not a program")
    assert ok.stdout.splitlines()[1].startswith("sandbox: bubblewrap")
    assert not ok.stdout.splitlines()[2].startswith("Warning")  # nothing to warn of: the first stage follows
    if AS_ROOT:
        assert refused.returncode == 2 and refused.stdout == ""
        assert "cannot enter" in refused.stderr and "chown 65534:65534 FOLDER" in refused.stderr
        assert not (closed / "ws").exists()  # refused before anything was made


# -- cgroup v2 machines ---------------------------------------------------------------------

@pytest.mark.parametrize("alone", [True, False])
def test_on_cgroup_v2_a_server_alone_in_its_cgroup_moves_into_a_leaf_so_runs_get_limits(alone, tmp_path,
                                                                                        monkeypatch):
    # A folder stands in for the server's v2 cgroup, and `kernel` plays the rule a real one applies: a cgroup
    # with processes of its own may not give controllers to its children. (This machine's v2 tree has no
    # controllers to try it on: here they are v1's.)
    import errno

    folder = tmp_path / "loopscope.service"
    folder.mkdir()
    (folder / "cgroup.controllers").write_text("cpu io memory pids\n")
    (folder / "cgroup.subtree_control").write_text("")
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n" + ("" if alone else "1\n"))
    real = cgroups._write

    def kernel(path, value):
        if path.name == "cgroup.procs" and path.parent.name == cgroups.SERVER_LEAF:
            others = [p for p in (folder / "cgroup.procs").read_text().split() if p != value]
            (folder / "cgroup.procs").write_text("\n".join(others))
        if path.name == "cgroup.subtree_control" and (folder / "cgroup.procs").read_text().strip():
            raise OSError(errno.EBUSY, "Device or resource busy")
        real(path, value)

    monkeypatch.setattr(cgroups, "_write", kernel)
    cgroups._enable(folder, ["memory", "pids", "cpu"])
    if alone:
        assert (folder / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
        assert (folder / cgroups.SERVER_LEAF / "cgroup.procs").read_text() == str(os.getpid())
    else:  # shared with another process: nothing is moved, and runs get no v2 limits
        assert (folder / "cgroup.subtree_control").read_text() == ""
        assert not (folder / cgroups.SERVER_LEAF).exists()


# -- workspaces: removed with their run, or by the next server --------------------------------

def test_a_workspace_a_crashed_server_left_is_removed_by_the_next_one(tmp_path):
    from loop.tools import workspace as workspaces

    crash = ("from loop.tools import Workspace\nimport os\nw = Workspace.make()\n"
             "open(w.path / 'left.txt', 'w').write('x')\nprint(w.path, flush=True)\nos._exit(9)")
    done = subprocess.run([sys.executable, "-c", crash], cwd=ROOT, capture_output=True, text=True, timeout=60)
    left = Path(done.stdout.strip())
    assert done.returncode == 9 and (left / "left.txt").exists()  # the crash left it, mounted
    workspaces._swept.discard(left.parent)  # this process has swept once already: as a new server would
    with workspaces.Workspace.make() as fresh:
        assert fresh.path.exists()
        assert not left.exists() and not left.with_name(left.name + ".lock").exists()
        assert str(left) not in Path("/proc/self/mountinfo").read_text()


@needs_nobody
def test_where_the_server_may_not_mount_a_workspace_is_a_plain_folder_and_still_goes(monkeypatch):
    from loop.tools import workspace as workspaces

    monkeypatch.setattr(workspaces, "_mount_tmpfs", lambda *args: "Operation not permitted")
    box = default_toolbox(workspaces.Workspace.make())
    assert box.sandbox.workspace.size is None and os.stat(box.workspace).st_uid == sandbox_user()[0]
    assert "workspace: no size limit" in box.sandbox.describe()
    # a tree deeper than Python's recursion goes does not keep it from going
    out = box.run("bash", {"command": "python3 -c 'import os\nfor i in range(1100):\n    os.mkdir(\"d\"); "
                                      "os.chdir(\"d\")' && echo made"})
    assert out.content == "made"
    path = box.workspace
    box.close()
    assert not path.exists()


def test_without_bubblewrap_the_page_says_so_and_refuses_real_models_unless_the_operator_opts_in(
        fake_api, without_bubblewrap, monkeypatch, no_key_in_environment):
    from tests.apptest import app, choose_server, click

    at = app()
    assert any(w.value.startswith("Commands run without bubblewrap on this server (LOOPSCOPE_BWRAP=/nonexistent/bwrap "
                                  "is not a program)") for w in at.warning)
    scripted = at.session_state["live-run"]
    choose_server(at, fake_api.url)
    (refusal,) = at.sidebar.error
    assert refusal.value.startswith("A real model's commands need bubblewrap, which cannot run on this server")
    assert "LOOPSCOPE_ALLOW_UNSANDBOXED=1" in refusal.value
    assert at.session_state["live-run"] is scripted and fake_api.requests == []  # nothing was started
    monkeypatch.setenv(sandbox.UNSANDBOXED_VARIABLE, "1")  # the operator accepts the risk
    click(at, "new-run")
    run = at.session_state["live-run"]
    assert run is not scripted and run.model.name == "claude-test" and not at.sidebar.error
    for _ in range(4):  # user_request, call_model, append_assistant, decide: then a command runs
        click(at, "live-step")
    click(at, "live-step")
    assert run.trace.steps[-1].stage == "run_tool" and not run.trace.steps[-1].detail["is_error"]
