"""Nothing left behind: a server killed mid-run leaves its runs' cgroups (and a process in them); the next server's start
sweeps them, as it sweeps the workspaces a dead server left, and touches no cgroup of a live process's.

Several servers and test processes share these cgroup folders, each with live runs: a cgroup is judged by its
owner, the process named in it (its pid and when it started), never by being idle.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loop.tools.cgroups import STEP_PREFIX, layout, owner_gone
from tests.cli import ROOT, clean_env

needs_cgroup = pytest.mark.skipif(layout().steps is None,
                                  reason="no writable cgroup here (not root, or /sys/fs/cgroup read-only)")

# A server with a run: its cgroups made, a command of it started in them, the paths and the command's pid said.
SERVER = """
import subprocess, sys, time
from loop.tools.cgroups import Limits, RunCgroup, join_and_run, layout
run = RunCgroup(layout(), Limits())
step = run.step()
command = subprocess.Popen(join_and_run(run.procs(step), ["sleep", "600"]), start_new_session=True)
while not any(open(p).read().strip() for p in run.procs(step)):  # the command joined its cgroups
    time.sleep(0.01)
print(command.pid, *run.folders, step.path, flush=True)
time.sleep(600)
"""


def start_server() -> tuple[subprocess.Popen, int, list[Path]]:
    server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE,
                              text=True)
    said = server.stdout.readline().split()
    return server, int(said[0]), [Path(p) for p in said[1:]]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def started(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@needs_cgroup
def test_a_new_server_sweeps_the_cgroups_a_killed_one_left_and_keeps_a_live_ones():
    dead, dead_command, dead_cgroups = start_server()
    live, live_command, live_cgroups = start_server()
    where, made = layout().steps, {}
    try:
        dead.kill()  # mid-run: nothing of it removes its cgroups, and its command lives on in them
        dead.wait()
        assert alive(dead_command) and all(p.exists() for p in dead_cgroups)
        made = {  # names a server could have left, beside the live one's own: (name, whether it is swept)
            f"{STEP_PREFIX}{live.pid}-{started(live.pid) - 1}-{os.urandom(6).hex()}": True,  # its pid, given again
            f"{STEP_PREFIX}{live.pid}-{os.urandom(6).hex()}": False,  # a name of old (no start): its pid lives
            f"{STEP_PREFIX}{dead.pid}-{os.urandom(6).hex()}": True,  # a name of old whose pid is gone
            f"loopscope-other-{dead.pid}-{os.urandom(6).hex()}": False,  # not one of ours
        }
        for name in made:
            (where / name).mkdir()
        # A server starts: it finds its cgroups' layout, and sweeps first.
        started_server = subprocess.run([sys.executable, "-c", "from loop.tools.cgroups import layout; layout()"],
                                        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120)
        assert started_server.returncode == 0, started_server.stderr
        assert not any(p.exists() for p in dead_cgroups), "the killed server's cgroups were left"
        assert not alive(dead_command), "the killed server's command was left running"
        assert all(p.exists() for p in live_cgroups) and alive(live_command), "a live server's run was swept"
        assert {name: not (where / name).exists() for name in made} == made
    finally:
        for server, command in ((dead, dead_command), (live, live_command)):
            server.kill()
            server.wait()
            try:
                os.kill(command, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for name in made:
            try:
                (where / name).rmdir()
            except FileNotFoundError:
                pass
        from loop.tools.cgroups import sweep

        sweep([where, *{p.parent for p in live_cgroups}])  # the live one is gone now: its cgroups with it


def test_a_cgroup_is_judged_by_its_owner_only():
    from loop.tools.cgroups import owner

    mine = f"{STEP_PREFIX}{owner()}-{os.urandom(6).hex()}"
    assert not owner_gone(mine)  # this process's own
    parent = os.getppid()
    assert not owner_gone(f"loopscope-run-{parent}-{started(parent)}-{os.urandom(6).hex()}")  # a live process's
    assert owner_gone(f"loopscope-run-{parent}-{started(parent) + 1}-{os.urandom(6).hex()}")  # its pid, given again
    assert not owner_gone(f"loopscope-run-{parent}-not-ours")
