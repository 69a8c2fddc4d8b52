"""The bash sandbox (loop/tools/bash.py): what it runs, where, with what, and what it refuses."""

from __future__ import annotations

import os

import pytest

from loop.tools import Bash, ToolBox
from loop.tools.bash import OUTPUT_LIMIT
from loop.tools.sandbox import INSIDE
from loop.tools.workspace import sandbox_user
from loop.engine.toolsets import default_toolbox
from tests.conftest import settle


def bash(workspace, command: str, timeout: float = 10.0):
    return ToolBox([Bash(timeout=timeout)], workspace).run("bash", {"command": command})


def test_timeout_kills_the_whole_process_group(workspace, tag):
    out = bash(workspace, f"sleep {tag} & pgrep -f {tag} > /dev/null && echo started; sleep 300", timeout=1)
    assert out.is_error
    assert out.content.startswith("Error: Timeout (1 s)")
    assert "started" in out.content  # what it printed before the timeout is kept, and the child did run
    assert settle(tag) == [], "the background child outlived its step"


def test_a_background_child_does_not_outlive_a_command_that_finished(workspace, tag):
    out = bash(workspace, f"(sleep {tag} &); pgrep -f {tag} > /dev/null && echo done")
    assert out.content == "done" and not out.is_error
    assert settle(tag) == []


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
    monkeypatch.setenv("LOOPSCOPE_HARMLESS", "not-passed-either")
    monkeypatch.setenv("TZ", "Europe/Paris")
    out = bash(workspace, "env")
    assert "TZ=Europe/Paris" in out.content  # what tools need passes; nothing else, harmless or not
    assert "LOOPSCOPE_HARMLESS" not in out.content
    for name, value in canaries.items():
        assert value not in out.content and f"{name}=" not in out.content
    assert f"HOME={INSIDE}" in out.content  # the workspace as the command sees it, under bubblewrap


def test_it_runs_in_the_workspace(workspace):
    inner = workspace / "ws"
    out = default_toolbox(inner).run("bash", {"command": "pwd; echo hi > made.txt"})
    assert out.content == INSIDE  # bound there: the server's path of it is not the command's business
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


def test_commands_never_run_as_root_and_cannot_read_the_servers_environment(workspace, monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_PARENT_CANARY", "canary-in-the-parent")
    out = bash(workspace, f"id -u; touch made-by-a-command; cat /proc/{os.getpid()}/environ")
    uid = out.content.splitlines()[0]
    assert uid == str(sandbox_user()[0]) and uid != "0"  # `nobody` when the server is root
    # and so it is outside the sandbox's user namespace: what it makes is nobody's on the server too
    assert os.stat(workspace / "made-by-a-command").st_uid == sandbox_user()[0]
    # the server is not in the command's PID namespace: its /proc has no such process
    assert "canary-in-the-parent" not in out.content and "No such file or directory" in out.content


def test_a_command_that_closes_its_output_before_it_exits_is_not_killed(workspace):
    # EOF on the output comes before the exit; killing the group at EOF turned successes
    # into "[killed by signal 9]" (seen on a busy machine in the recover scenario).
    out = bash(workspace, "echo done; exec >&- 2>&-; sleep 0.3; touch finished")
    assert out.content == "done" and not out.is_error
    assert (workspace / "finished").exists()


def test_a_command_that_closes_its_output_and_hangs_still_times_out(workspace):
    out = bash(workspace, "echo bye; exec >&- 2>&-; sleep 300", timeout=1)
    assert out.is_error and out.content.startswith("Error: Timeout (1 s)") and "bye" in out.content
