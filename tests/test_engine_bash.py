"""The bash sandbox (loop/tools/bash.py): what it runs, where, with what, and what it refuses."""

from __future__ import annotations

import os
import time

import pytest

from loop.tools import Bash, ToolBox, default_toolbox
from loop.tools.bash import OUTPUT_LIMIT, unprivileged_user


def bash(workspace, command: str, timeout: float = 10.0):
    return ToolBox([Bash(timeout=timeout)], workspace).run("bash", {"command": command})


def gone(pid: int) -> bool:
    """True once `pid` is dead.

    A killed background child is reparented to PID 1; where PID 1 does not reap
    (a bare container's init), it stays a zombie: dead, holding nothing but its
    pid, and os.kill(pid, 0) still succeeds on it. So a zombie counts as gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_timeout_kills_the_whole_process_group(workspace):
    pid_file = workspace / "child.pid"
    out = bash(workspace, f"sleep 300 & echo $! > {pid_file}; echo started; sleep 300", timeout=1)
    assert out.is_error
    assert out.content.startswith("Error: Timeout (1 s)")
    assert "started" in out.content  # what it printed before the timeout is kept
    child = int(pid_file.read_text())
    for _ in range(50):  # SIGKILL is delivered at once, but give the kernel a moment
        if gone(child):
            break
        time.sleep(0.02)
    assert gone(child), f"the background child {child} outlived its step"


def test_a_background_child_does_not_outlive_a_command_that_finished(workspace):
    pid_file = workspace / "child.pid"
    out = bash(workspace, f"(sleep 300 &  echo $! > {pid_file}); echo done")
    assert out.content == "done" and not out.is_error
    child = int(pid_file.read_text())
    for _ in range(50):
        if gone(child):
            break
        time.sleep(0.02)
    assert gone(child)


def test_output_is_cut_at_50000_characters_with_a_note(workspace):
    out = bash(workspace, "python3 -c \"print('x' * 60000)\"")
    body, note = out.content.rsplit("\n", 1)
    assert body == "x" * OUTPUT_LIMIT == "x" * 50_000
    assert note == "[output cut at 50,000 characters]"
    assert not out.is_error


def test_a_flood_of_output_is_stopped_and_cut(workspace):
    out = bash(workspace, "yes", timeout=10)
    body, note, why = out.content.rsplit("\n", 2)
    assert body == ("y\n" * 25_000)[:OUTPUT_LIMIT] and len(body) == 50_000
    assert note == "[output cut at 50,000 characters]"
    assert why == "[stopped by the sandbox: it printed more than the cap]"  # not a bare "signal 9"
    assert out.is_error and "Timeout" not in out.content  # stopped by the cap, not by the clock


def test_output_under_the_cap_is_whole(workspace):
    out = bash(workspace, "python3 -c \"print('y' * 49999)\"")
    assert out.content == "y" * 49999


@pytest.mark.parametrize("command", [
    "sudo ls",
    "rm -rf /",
    "rm -rf / --no-preserve-root",
    "rm -fr /*",
    "shutdown -h now",
    "reboot",
    "echo 0 > /dev/sda",
    "cat x >/dev/sda1",
    ":(){ :|:& };:",
])
def test_the_deny_list_refuses_without_running(workspace, command):
    marker = workspace / "ran"
    out = bash(workspace, f"touch {marker}; {command}")
    assert out.is_error
    assert out.content.startswith("Error: Dangerous command blocked")
    assert "not run" in out.content
    assert not marker.exists()  # nothing of the command ran


@pytest.mark.parametrize("command, expected", [
    ("ls nothing-here 2>/dev/null; echo fine", "fine"),
    ("echo ok > /dev/null; echo fine", "fine"),
    ("mkdir -p d/e && rm -rf d && echo removed", "removed"),
    ("echo pseudo sudoku", "pseudo sudoku"),
])
def test_everyday_commands_still_run(workspace, command, expected):
    out = bash(workspace, command)
    assert out.content == expected and not out.is_error


def test_the_environment_holds_no_secrets(workspace, monkeypatch):
    canaries = {"ANTHROPIC_API_KEY": "canary-anthropic-1", "MY_SERVICE_TOKEN": "canary2",
                "X_SECRET": "canary-x-secret-3", "Y_KEY": "canary-y-key-4", "ANTHROPIC_BASE_URL": "canary-url-5"}
    for name, value in canaries.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOOPSCOPE_HARMLESS", "visible-value")
    out = bash(workspace, "env")
    assert "LOOPSCOPE_HARMLESS=visible-value" in out.content  # the environment is there, minus secrets
    for name, value in canaries.items():
        assert value not in out.content and f"{name}=" not in out.content
    assert f"HOME={workspace}" in out.content


def test_it_runs_in_the_workspace(workspace):
    inner = workspace / "ws"
    out = default_toolbox(inner).run("bash", {"command": "pwd; echo hi > made.txt"})
    assert out.content == str(inner)
    assert (inner / "made.txt").read_text() == "hi\n"
    assert not (workspace / "made.txt").exists()


def test_no_output(workspace):
    out = bash(workspace, "true")
    assert out.content == "(no output)" and not out.is_error


def test_a_nonzero_exit_status_is_an_error_and_shown(workspace):
    out = bash(workspace, "echo partial; exit 3")
    assert out.is_error
    assert out.content == "partial\n[exit status 3]"
    silent = bash(workspace, "false")
    assert silent.content == "(no output)\n[exit status 1]" and silent.is_error


def test_stdout_and_stderr_together_and_stripped(workspace):
    out = bash(workspace, "echo '  out'; echo err >&2; echo")
    assert out.content == "out\nerr"


@pytest.mark.parametrize("tool_input, words", [
    ({"command": ""}, "non-empty string"),
    ({"command": 42}, "non-empty string"),
    ({}, "needs command"),
    ("ls", "must be a JSON object"),
])
def test_bad_input_is_an_error_not_an_exception(workspace, tool_input, words):
    out = ToolBox([Bash()], workspace).run("bash", tool_input)
    assert out.is_error and words in out.content


@pytest.mark.skipif(os.geteuid() != 0, reason="only a server running as root drops to nobody")
def test_as_root_commands_run_as_nobody_and_cannot_read_the_servers_environment(workspace, monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_PARENT_CANARY", "canary-in-the-parent")
    user = unprivileged_user(workspace)
    out = bash(workspace, f"id -u; cat /proc/{os.getpid()}/environ")
    uid = out.content.splitlines()[0]
    if user is None:  # pytest's own tmp folder is private to root: nobody could not enter it
        assert uid == "0"
    else:
        assert uid == str(user[0])
        assert "canary-in-the-parent" not in out.content and "Permission denied" in out.content


def test_a_command_that_closes_its_output_before_it_exits_is_not_killed(workspace):
    # EOF on the output comes before the exit; killing the group at EOF turned successes
    # into "[killed by signal 9]" (seen on a busy machine in the recover scenario).
    out = bash(workspace, "echo done; exec >&- 2>&-; sleep 0.3; touch finished")
    assert out.content == "done" and not out.is_error
    assert (workspace / "finished").exists()


def test_a_command_that_closes_its_output_and_hangs_still_times_out(workspace):
    out = bash(workspace, "echo bye; exec >&- 2>&-; sleep 300", timeout=1)
    assert out.is_error and out.content.startswith("Error: Timeout (1 s)") and "bye" in out.content
