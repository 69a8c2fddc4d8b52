"""Hostile commands and paths against the tools: what holds, and that the server stays responsive.

The tools run inside the server's own Python process (the file tools) or as its
children (bash). Whatever a model asks for, each call must come back, within
the timeout and a little, with an `is_error` result or harmless output, and
leave nothing running behind it.

Two kinds of workspace, as in tests/test_engine_bash.py: "shared" is a folder
under /tmp like a real run's, where a server running as root runs commands as
`nobody`; "private" is pytest's tmp_path, which nobody cannot enter, so there
commands run as the server's own user.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from loop.engine.blocks import tool_result
from loop.tools import Bash, EditFile, ReadFile, ToolBox, WriteFile
from loop.tools import Limits
from loop.tools.bash import OUTPUT_LIMIT, TIMEOUT_SCALE_VARIABLE, timeout_scale
from loop.tools.workspace import sandbox_user
from tests.conftest import settle

AS_ROOT = os.geteuid() == 0
SLACK = 1.5  # seconds a call may take beyond its timeout
CANARY = "sk-ant-CANARY-hardening-do-not-leak-7f3a"

needs_nobody = pytest.mark.skipif(not AS_ROOT, reason="commands drop to nobody only when the server runs as root")
needs_root = pytest.mark.skipif(not AS_ROOT, reason="a run's cgroups are made only when the server runs as root")


# -- workspaces and helpers ---------------------------------------------------

@pytest.fixture
def outside():
    """A folder beside the workspace, readable by everyone, holding a file the tools must not touch."""
    folder = Path(tempfile.mkdtemp(prefix="loopscope-hardening-outside-"))
    folder.chmod(0o755)
    (folder / "secret.txt").write_text(CANARY)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def timed(box: ToolBox, name: str, tool_input: dict, limit: float):
    """Run one tool in a thread and give (output, seconds); fail rather than hang if it does not come back."""
    got: dict = {}

    def call():
        got["out"] = box.run(name, tool_input)

    started = time.monotonic()
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    most = (limit + SLACK) * timeout_scale()  # as the command's own timeout is stretched on a loaded machine
    worker.join(most)
    took = time.monotonic() - started
    assert not worker.is_alive(), f"{name} {tool_input!r} did not come back within {most:g} s"
    return got["out"], took


def bash(ws: Path, command: str, timeout: float = 2.0):
    out, _ = timed(ToolBox([Bash(timeout=timeout)], ws), "bash", {"command": command}, timeout)  # back in time
    assert isinstance(out.content, str)
    return out


def files(ws: Path) -> ToolBox:
    return ToolBox([ReadFile(), WriteFile(), EditFile()], ws)


# -- the file tools: paths that leave the workspace ---------------------------

ESCAPES = ["dotdot", "dotdot-deep", "absolute", "absolute-proc", "link-file", "link-dir", "link-chain",
           "link-dangling", "link-proc", "link-root"]


def _escape_path(kind: str, ws: Path, out: Path) -> str:
    """Plant what `kind` needs in `ws` and give the path a model would pass."""
    if kind == "dotdot":
        return f"../{out.name}/secret.txt"
    if kind == "dotdot-deep":
        (ws / "sub").mkdir()
        return f"sub/./../../{out.name}/secret.txt"
    if kind == "absolute":
        return str(out / "secret.txt")
    if kind == "absolute-proc":
        return "/proc/self/environ"  # the server's own environment: the file tools run in the server
    if kind == "link-file":
        (ws / "notes.txt").symlink_to(out / "secret.txt")
        return "notes.txt"
    if kind == "link-dir":
        (ws / "docs").symlink_to(out)
        return "docs/secret.txt"
    if kind == "link-chain":
        (ws / "b").symlink_to(out / "secret.txt")
        (ws / "a").symlink_to("b")
        return "a"
    if kind == "link-dangling":  # would create a new file outside when written
        (ws / "new.txt").symlink_to(out / "created-by-a-tool.txt")
        return "new.txt"
    if kind == "link-proc":
        (ws / "env").symlink_to("/proc/self/environ")
        return "env"
    if kind == "link-root":
        (ws / "root").symlink_to("/")
        return f"root{out}/secret.txt"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ESCAPES)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_file_tools_refuse_every_way_out_of_the_workspace(kind, tool, shared, outside):
    ws = shared
    path = _escape_path(kind, ws, outside)
    tool_input = {"read_file": {"path": path},
                  "write_file": {"path": path, "content": "overwritten"},
                  "edit_file": {"path": path, "old_text": "CANARY", "new_text": "overwritten"}}[tool]
    out, _ = timed(files(ws), tool, tool_input, 2)
    assert out.is_error
    assert out.content == f"Error: {path!r} is outside the workspace; file tools stay inside it."
    assert (outside / "secret.txt").read_text() == CANARY  # neither read into the result nor changed
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing created beside it


def test_links_that_stay_inside_the_workspace_still_work(shared):
    # So the refusals above come from leaving the workspace, not from links or `..` as such.
    ws = shared
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "real.txt").write_text("inside\n")
    if AS_ROOT:  # as a command would have made it: the file tools act with the rights commands have
        for made in (ws / "sub", ws / "sub" / "real.txt"):
            os.chown(made, *sandbox_user())
    (ws / "link.txt").symlink_to("sub/real.txt")
    (ws / "subdir").symlink_to(ws / "sub")
    box = files(ws)
    assert box.run("read_file", {"path": "link.txt"}).content == "inside\n"
    assert box.run("read_file", {"path": "sub/../subdir/real.txt"}).content == "inside\n"
    assert box.run("edit_file", {"path": "link.txt", "old_text": "inside", "new_text": "edited"}).content == \
        "Edited link.txt"
    assert (ws / "sub" / "real.txt").read_text() == "edited\n"
    assert not box.run("write_file", {"path": f"{ws}/sub/abs.txt", "content": "x"}).is_error  # absolute, but inside


@pytest.mark.parametrize("path", ["a\x00b", "x" * 5000, "/".join(["d"] * 3000), "", "."])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_odd_paths_are_errors_not_exceptions(tool, path, tmp_path):
    tool_input = {"path": path, "content": "c", "old_text": "a", "new_text": "b"}
    out, _ = timed(files(tmp_path), tool, tool_input, 2)
    assert out.is_error and out.content.startswith("Error: ")


def _special_files(ws: Path) -> list[str]:
    os.mkfifo(ws / "fifo")
    names = ["fifo"]
    if AS_ROOT:
        try:
            os.mknod(ws / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: never ends
            names.append("zero")
        except OSError:  # no CAP_MKNOD in this container
            pass
    return names


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_a_fifo_or_a_device_in_the_workspace_is_refused_without_hanging_the_server(tool, shared):
    # A command can `mkfifo` in its workspace; opening a FIFO nobody writes to blocks for ever,
    # and read_file runs inside the server process.
    for name in _special_files(shared):
        tool_input = {"path": name, "content": "c", "old_text": "a", "new_text": "b"}
        out, _ = timed(files(shared), tool, tool_input, 1)  # fails if it does not come back: it did not hang
        assert out.is_error, name
        assert out.content == (f"Error: {name} is not a regular file (a FIFO, socket or device); "
                               "file tools read and write regular files only.")


def test_read_file_reads_no_more_than_it_shows(shared):
    (shared / "big.txt").write_bytes(b"y" * (8 * 2**20))
    out = files(shared).run("read_file", {"path": "big.txt"})
    assert out.content == "y" * 50_000 and not out.is_error


# -- bash and the file tools together, as nobody --------------------------------

@pytest.fixture
def root_secret():
    """A folder like .streamlit/ (0755, root's) with secrets.toml at 0600 and, for contrast, a 0644 file."""
    folder = Path(tempfile.mkdtemp(prefix="loopscope-hardening-app-"))
    folder.chmod(0o755)
    secret = folder / "secrets.toml"
    secret.write_text(f'ANTHROPIC_API_KEY = "{CANARY}"\n')
    secret.chmod(0o600)
    public = folder / "config.toml"
    public.write_text("[server]\nheadless = true\n")
    public.chmod(0o644)
    yield secret
    shutil.rmtree(folder, ignore_errors=True)


@needs_nobody
def test_a_command_cannot_plant_a_way_out_for_the_file_tools(shared, root_secret):
    # bash runs as nobody but the file tools run as root, in the server: a link or a hard link
    # planted by a command must not let read_file fetch what nobody may not read.
    bash(shared, f"ln -s {root_secret} soft; ln {root_secret} hard; mkfifo pipe; ls")
    assert (shared / "soft").is_symlink() and (shared / "pipe").exists()
    assert not (shared / "hard").exists()  # the kernel refuses hard links to root's files (protected_hardlinks)
    box = files(shared)
    for path in ("soft", "hard", "pipe"):
        out, _ = timed(box, "read_file", {"path": path}, 1)
        assert out.is_error and CANARY not in out.content, path
    assert box.run("write_file", {"path": "soft", "content": "x"}).is_error
    assert root_secret.read_text() == f'ANTHROPIC_API_KEY = "{CANARY}"\n'


@needs_nobody
def test_what_the_file_tools_write_the_commands_can_change(shared):
    # The file tools run as root; what they create is handed to the user commands run as,
    # or the model's own `echo >> file` would be refused.
    box = ToolBox([Bash(timeout=3), WriteFile(), EditFile()], shared)
    assert box.run("write_file", {"path": "src/pkg/a.txt", "content": "one\n"}).content == "Wrote 4 bytes to src/pkg/a.txt"
    out = box.run("bash", {"command": "echo two >> src/pkg/a.txt && touch src/pkg/b && mkdir src/c && cat src/pkg/a.txt"})
    assert out.content == "one\ntwo" and not out.is_error
    assert box.run("edit_file", {"path": "src/pkg/a.txt", "old_text": "two", "new_text": "2"}).content == \
        "Edited src/pkg/a.txt"
    assert box.run("bash", {"command": "echo 3 >> src/pkg/a.txt; cat src/pkg/a.txt"}).content == "one\n2\n3"


# -- bash as nobody: the server's files, environment and folders ---------------

@needs_nobody
def test_as_nobody_a_command_cannot_write_or_read_outside_its_workspace(shared, outside):
    (outside / "secret.txt").chmod(0o600)
    target = Path("/root") / f"loopscope-hardening-{os.getpid()}"
    app_file = Path(__file__).resolve().parent.parent / f".loopscope-hardening-{os.getpid()}"  # the app's own folder
    try:
        out = bash(shared, f"touch {target}; echo x > {app_file}; echo x > {outside}/new.txt; "
                           f"cat {outside}/secret.txt; ls /root; rm -f {outside}/secret.txt; touch /usr/x /etc/x")
        assert out.is_error
        # None of these folders is in the command's view of the machine (`rm -f` of nothing says nothing);
        # the system there is read-only.
        assert out.content.count("No such file or directory") == 5, out.content
        assert out.content.count("Read-only file system") == 2, out.content
        assert CANARY not in out.content
        assert not target.exists() and not app_file.exists()
        assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    finally:
        target.unlink(missing_ok=True)
        app_file.unlink(missing_ok=True)


@needs_nobody
def test_as_nobody_the_servers_environment_and_secret_files_are_out_of_reach(shared, root_secret, monkeypatch):
    # A root process started with the key in its environment, as the server would be.
    server = subprocess.Popen(["sleep", "30"], env={**os.environ, "ANTHROPIC_API_KEY": CANARY})
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("anthropic_api_key", CANARY)  # Streamlit copies secrets.toml keys into the environment
    try:
        deadline = time.monotonic() + 5  # until `sleep` has exec'd, its environment reads empty
        while CANARY not in Path(f"/proc/{server.pid}/environ").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert CANARY in Path(f"/proc/{server.pid}/environ").read_text()  # it is there to be found
        out = bash(shared, f"cat /proc/{server.pid}/environ; cat /proc/{os.getpid()}/environ; "
                           f"cat /proc/1/environ; grep -rs CANARY /proc/[0-9]*/environ; env | grep -i key; "
                           f"cat {root_secret}; cat {root_secret.parent / 'config.toml'}")
    finally:
        server.kill()
        server.wait()
    assert CANARY not in out.content
    # The server is not in the command's PID namespace, and the app's folder is not in its view at all;
    # /proc/1 is the sandbox's own init, whose environment holds no secret either.
    assert out.content.count("No such file or directory") == 4, out.content  # two environ files, both .toml
    assert "headless = true" not in out.content  # not even a file at 0644 outside the workspace is seen


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "anthropic_api_key", "OPENAI_API_KEY", "GITHUB_TOKEN",
                                  "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "db_password", "PGPASSWORD", "MYSQL_PWD",
                                  "SERVICE_CREDENTIALS", "CLIENT_SECRET"])
def test_secret_looking_variables_are_not_passed_to_commands(name, shared, monkeypatch):
    monkeypatch.setenv(name, CANARY)
    monkeypatch.setenv("LANG", "C.UTF-8")
    out = bash(shared, "env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert CANARY not in out.content and f"{name}=" not in out.content
    assert "LANG=C.UTF-8" in out.content  # what tools need is passed (an allow-list), never a secret


# -- floods, binary output ------------------------------------------------------

@pytest.mark.parametrize("command", ["yes", "yes >&2", "cat /dev/zero", "head -c 50000000 /dev/urandom",
                                     "while :; do echo flood; done"])
def test_a_flood_is_cut_at_once_and_its_command_stopped(command, workspace, tag):
    out = bash(workspace, f"export LOOPSCOPE_TEST_TAG={tag}; {command}", timeout=10)
    assert out.is_error
    assert out.content.endswith(f"\n[output cut at {OUTPUT_LIMIT:,} characters]\n"
                                "[stopped by the sandbox: it printed more than the cap]")
    assert len(out.content) <= OUTPUT_LIMIT + 100
    assert settle(tag) == []


@pytest.mark.parametrize("command, expected", [
    (r"printf '\xff\xfe'", "\ufffd\ufffd"),
    (r"printf 'a\0b\x80c'", "a\x00b\ufffdc"),
    (r"printf '\xed\xa0\x80'", "\ufffd\ufffd\ufffd"),  # a UTF-16 surrogate written as UTF-8: not valid UTF-8
    ("head -c 3000 /dev/urandom", None),
    ("head -c 3000 /dev/urandom >&2; exit 3", None),
])
def test_binary_and_invalid_utf8_output_gives_text_the_api_accepts(command, expected, workspace):
    out = bash(workspace, command)
    assert isinstance(out.content, str)
    if expected is not None:
        assert out.content == expected
    out.content.encode("utf-8")  # no lone surrogates: it can be sent to the API and saved
    block = tool_result("toolu_x", out)
    assert json.loads(json.dumps(block, ensure_ascii=False)) == block


# -- processes that overstay ------------------------------------------------------

OVERSTAYERS = {
    "background": "sleep 300 & sleep 300 & (sleep 300 &); sleep 300",
    "forked-python": "python3 -c 'import os, time\nfor _ in range(3): os.fork()\ntime.sleep(300)' & sleep 300",
    "own-process-groups": "set -m; sleep 300 & python3 -c 'import os, time\nos.setpgid(0, 0)\ntime.sleep(300)' & "
                          "sleep 300",
    "ignores-sigterm": "trap '' TERM HUP INT; (trap '' TERM; sleep 300) & sleep 300",
}


@pytest.mark.parametrize("name", list(OVERSTAYERS))
def test_at_the_timeout_nothing_the_command_started_survives(name, workspace, tag, monkeypatch):
    monkeypatch.setenv(TIMEOUT_SCALE_VARIABLE, "1")  # ended at its own timeout: nothing checked needs its output
    out = bash(workspace, f"export LOOPSCOPE_TEST_TAG={tag}; {OVERSTAYERS[name]}", timeout=1)
    assert out.is_error and out.content.startswith("Error: Timeout (1 s)")
    assert settle(tag) == []


@pytest.mark.parametrize("command", [
    "set -m; sleep 300 & echo started",
    "python3 -c 'import os, time\nif os.fork() == 0:\n    os.setpgid(0, 0); time.sleep(300)'; echo started",
])
def test_a_child_in_a_process_group_of_its_own_does_not_outlive_a_command_that_ended(command, workspace, tag):
    out = bash(workspace, f"export LOOPSCOPE_TEST_TAG={tag}; {command}")
    assert out.content == "started" and not out.is_error
    assert settle(tag) == []


def test_a_child_in_a_session_of_its_own_does_not_outlive_its_step(shared, tag):
    out = bash(shared, f"setsid sleep {tag} > /dev/null 2>&1 < /dev/null & sleep 0.3; pgrep -f {tag} > /dev/null && "
                       "echo running", timeout=2)
    assert out.content == "running"  # it did start, in a session of its own
    assert settle(tag, 1) == [], "the setsid child outlived its step"


# -- resource limits ----------------------------------------------------------------

FORK_BOMBS = {
    "python-fork-loop": "python3 -c 'import os, time\nwhile True:\n    try:\n        os.fork()\n"
                        "    except OSError:\n        time.sleep(0.01)'",
    "bash-function": "bomb() { bomb | bomb & }; bomb; sleep 300",
}


@needs_root
@pytest.mark.parametrize("name", list(FORK_BOMBS))
def test_a_fork_bomb_is_held_at_the_process_limit_and_killed_at_the_timeout(name, shared, tag, monkeypatch):
    monkeypatch.setenv(TIMEOUT_SCALE_VARIABLE, "1")  # it is ended by its timeout: no need to spin longer
    box = ToolBox([Bash(timeout=2)], shared)
    command = f"export LOOPSCOPE_TEST_TAG={tag}; {FORK_BOMBS[name]} 2>/dev/null"
    got: dict = {}
    worker = threading.Thread(target=lambda: got.setdefault("out", box.run("bash", {"command": command})))
    started = time.monotonic()
    worker.start()
    run = box.sandbox.cgroup()  # the run's cgroups: made at its first command, here
    seen, samples = 0, 0
    while worker.is_alive() and time.monotonic() - started < (2 + SLACK) * timeout_scale():
        seen = max(seen, int(run.read("pids.current") or 0))  # the server's own thread keeps running meanwhile
        samples += 1
        time.sleep(0.05)
    worker.join(0.1)
    try:
        assert not worker.is_alive()  # back by the end of its timeout (2 s, stretched here) and a little slack
        assert got["out"].is_error and got["out"].content.startswith("Error: Timeout (2 s)")
        assert samples >= 10  # the test's own thread was never starved
        assert run.read("pids.max") == str(Limits().pids)
        assert 20 < seen <= Limits().pids  # it did fork, up to the run's limit and no further
        assert int(run.read("pids.peak") or seen) == Limits().pids  # the limit, not the clock, held it
        assert settle(tag) == []
    finally:
        box.close()


@needs_root
def test_after_quick_commands_a_command_may_still_start_as_many_processes_as_the_run_may_have(shared, tag):
    """The kernel gives back what a command's bwrap counted in the run's pids about a second after it ended: commands
    one after another (an offline model answers at once) found the run's 128 processes taken by processes long
    gone, and its 155th `echo hi` was refused ("bwrap: Can't fork for pid 1")."""
    box = ToolBox([Bash(timeout=30)], shared)
    try:
        ended_but_counted = 0
        with ThreadPoolExecutor(4) as pool:  # four at a time, as a loaded machine runs each one slower
            for _ in range(75):  # quick commands, until the run is still charged for ten that have ended
                outs = list(pool.map(lambda _: box.run("bash", {"command": "true"}), range(4)))
                assert not any(out.is_error for out in outs), [out.content for out in outs]
                ended_but_counted = int(box.sandbox.cgroup().read("pids.current") or 0)  # none of the run lives now
                if ended_but_counted >= 10:
                    break
        assert ended_but_counted >= 10
        out = box.run("bash", {"command": f"for i in $(seq 120); do sleep {tag} & done; jobs -p | wc -l"})
        assert (out.content, out.is_error) == ("120", False)  # bash, bwrap's two and 120 children: under 128
        assert int(box.sandbox.cgroup().read("pids.max")) <= 2 * Limits().pids
        assert settle(tag) == []
    finally:
        box.close()


@pytest.mark.parametrize("command, said", [
    ("python3 -c 'x = bytearray(4 * 2**30)'", "MemoryError"),
    # mapped, never touched: only the address space limit can stop it, and quickly
    ("python3 -c 'import mmap\nheld = []\nwhile True: held.append(mmap.mmap(-1, 256 * 2**20))'",
     "OSError: [Errno 12] Cannot allocate memory"),
])
def test_a_memory_hog_is_stopped_by_the_address_space_limit(command, said, workspace):
    out = bash(workspace, command, timeout=3)
    assert out.is_error and said in out.content
    assert out.content.endswith("[exit status 1]")


def test_a_file_too_big_is_stopped_at_64_mib(workspace):
    out = bash(workspace, "head -c 100000000 /dev/zero > big; echo after", timeout=5)
    assert "File size limit exceeded" in out.content and out.content.endswith("after")
    assert (workspace / "big").stat().st_size == 64 * 2**20
    (workspace / "big").unlink()
