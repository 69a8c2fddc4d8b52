"""Files the server reads for a user are regular files, opened without following links, read within a cap.

The sessions folder (`python -m loop sessions`, Replay's list) and Follow read a folder the user and the user's agent
write, often as root. A link named `*.jsonl` to /dev/zero, a FIFO, a device, a link to a root-only file, a project
folder that is a link, a log swapped for a link while it is followed: each is said, none is read, and nothing is read
past the limit.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from loop.importers import ImportFailed
from loop.importers.follow import Follower
from loop.importers.sessions import listing, read_session, refused
from loop.text.catalogs import size_words
from tests.cli import ROOT, clean_env
from tests.test_import_claude_code import TASK, Log
from tests.test_sessions_folder import folder, lines

SECRET = "root-only-secret-0600"
PEAK_OF = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
           "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
           "print(done.stdout, done.stderr, sep='\\n')")


def root_only(tmp_path: Path) -> Path:
    """A file only its owner may read, holding a session's records and SECRET: what a link must never show."""
    log = Log()
    log.history([{"role": "user", "content": SECRET}, {"role": "assistant", "content": [{"type": "text",
                                                                                         "text": SECRET}]}])
    secret = tmp_path / "elsewhere" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_bytes(lines(log.records))
    secret.chmod(0o600)
    return secret


def hostile(tmp_path: Path) -> Path:
    """A sessions folder with two real sessions, and beside them everything that must not be read."""
    projects = folder(tmp_path)
    os.symlink("/dev/zero", projects / "x.jsonl")
    os.mkfifo(projects / "y.jsonl")
    os.mknod(projects / "z.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # a device node: /dev/zero's own
    os.symlink(root_only(tmp_path), projects / "-home-ada-parser" / "shadow.jsonl")
    os.symlink(tmp_path / "elsewhere", projects / "-elsewhere")  # a project's folder that is a link
    os.symlink("/dev/zero", projects / "-home-ada-parser" / "new" / "subagents" / "agent-zero.jsonl")
    return projects


REFUSED = {  # each name not read, and the reason said for it
    "x.jsonl": "x.jsonl: not read: it is a link, and Loopscope follows no link there.",
    "y.jsonl": "y.jsonl: not read: it is a FIFO (a named pipe), not a regular file.",
    "z.jsonl": "z.jsonl: not read: it is a device, not a regular file.",
    "shadow": "-home-ada-parser/shadow.jsonl: not read: it is a link, and Loopscope follows no link there.",
    "-elsewhere": "-elsewhere: not read: it is a link, and Loopscope follows no link there.",
    "agent-zero": "-home-ada-parser/new/subagents/agent-zero.jsonl: not read: it is a link, and Loopscope follows "
                  "no link there.",
}


def test_the_command_line_lists_the_sessions_and_says_each_name_it_does_not_read_within_400_mb(tmp_path):
    projects = hostile(tmp_path)
    # A process of its own, its memory bounded (today's reading of /dev/zero ran to 23 GB) and its peak measured by
    # a small Python that starts it: forked from this test, its ru_maxrss would count the test's own pages.
    done = subprocess.run([sys.executable, "-c", PEAK_OF, sys.executable, "-c",
                           "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31)); "
                           "sys.argv = ['loop', 'sessions', sys.argv[1]]; runpy.run_module('loop', run_name='__main__')",
                           projects], cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120)
    status, peak_kib = (int(n) for n in done.stdout.split("\n", 1)[0].split())
    said = done.stdout.split("\n", 1)[1]
    assert status == 0, said
    assert peak_kib < 400 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    assert "review the parser" in said and "count the lines" in said  # the real sessions are listed
    assert "sub-agents 1 ·" in said  # the real sub-agent's log counted, the link beside it not
    for line in REFUSED.values():
        assert line in said.splitlines()
    assert SECRET not in said


def test_the_list_reads_no_name_that_is_not_a_regular_file(tmp_path):
    found = listing(hostile(tmp_path))
    assert sorted(s.path.name for s in found.sessions) == ["new.jsonl", "old.jsonl"]
    assert sorted(note.render() for note in found.refused) == sorted(REFUSED.values())
    assert found.sessions[0].sub_agents == 1


def test_the_folder_the_operator_names_may_itself_be_a_link(tmp_path):
    projects = folder(tmp_path)
    named = tmp_path / "named"
    os.symlink(projects, named)
    assert [s.path.stem for s in listing(named).sessions] == ["new", "old"]


def test_a_session_swapped_for_a_link_after_it_was_listed_is_not_opened(tmp_path):
    projects = folder(tmp_path)
    [new, old] = listing(projects).sessions
    files = read_session(new.folder, new.names, 10**8)
    assert [name for name, _ in files] == ["new.jsonl", "new/subagents/agent-a1b2.jsonl"]
    old.path.unlink()
    os.symlink(root_only(tmp_path), old.path)
    with pytest.raises(ImportFailed) as refusal:
        read_session(old.folder, old.names, 10**8)
    assert str(refusal.value) == "-home-ada-wc/old.jsonl: not read: it is a link, and Loopscope follows no link there."


def test_opening_a_session_reads_no_more_than_the_limit(tmp_path):
    projects = folder(tmp_path)
    [new, _] = listing(projects).sessions
    with pytest.raises(ImportFailed) as refusal:
        read_session(new.folder, new.names, new.size - 1)
    assert "over the limit of" in str(refusal.value)


# -- Follow -----------------------------------------------------------------------------------------------------------

def finish(log: Log) -> None:
    """The tool_results and the answer of TASK, as Claude Code writes them after its first lines: 4 records more."""
    log.history(TASK[3:], log.history(TASK[2:3], log.records[-1]["uuid"]))


def followed(tmp_path: Path) -> tuple[Path, Follower, Log]:
    log = Log()
    log.history(TASK[:2])
    path = tmp_path / "sessions" / "proj" / "live.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(lines(log.records))
    follower = Follower(path, folder=tmp_path / "sessions")
    assert follower.poll() is not None
    return path, follower, log


@pytest.mark.parametrize("swap", ["link", "fifo"])
def test_a_followed_log_swapped_for_a_link_or_a_fifo_is_refused_never_read(tmp_path, swap):
    path, follower, _ = followed(tmp_path)
    path.unlink()
    if swap == "link":
        os.symlink(root_only(tmp_path), path)  # a root-only 0600 log: today it was shown
    else:
        os.mkfifo(path)  # today the poll blocked for ever
    with pytest.raises(ImportFailed) as refusal:
        follower.poll()
    kind = "a link, and Loopscope follows no link there" if swap == "link" else "a FIFO (a named pipe)"
    assert str(refusal.value).startswith(f"proj/live.jsonl: not read: it is {kind}")  # its path from the folder
    assert SECRET not in repr(follower.logs[path].records)


def test_a_project_folder_swapped_for_a_link_under_follow_is_refused(tmp_path):
    path, follower, _ = followed(tmp_path)
    secret = root_only(tmp_path)
    (secret.parent / "live.jsonl").symlink_to(secret.name)  # the same name, elsewhere
    os.rename(path.parent, tmp_path / "sessions" / "moved")
    os.symlink(secret.parent, path.parent)
    with pytest.raises(ImportFailed, match="^proj: not read: it is a link"):
        follower.poll()


def test_a_new_file_in_the_logs_place_is_read_from_its_start(tmp_path):
    path, follower, log = followed(tmp_path)
    before = len(follower.imported.trace)
    finish(log)
    fresh = path.with_name("fresh")
    fresh.write_bytes(lines(log.records))
    os.rename(fresh, path)  # as an editor saves: another file under the same name
    change = follower.poll()
    assert len(change.imported.trace) > before and change.imported.trace.steps[-1].ended


def test_follow_stops_at_the_limit_and_reads_nothing_more(tmp_path):
    path, follower, log = followed(tmp_path)
    follower.max_bytes = path.stat().st_size + 100
    finish(log)
    with open(path, "ab") as f:
        f.write(lines(log.records[-4:]))
    with pytest.raises(ImportFailed) as refusal:
        follower.poll()
    assert str(refusal.value) == (f"proj/live.jsonl: {size_words(path.stat().st_size)}, over the limit of "
                                  f"{size_words(follower.max_bytes)} read here: nothing more of it is read")
    read = follower.logs[path].offset
    with open(path, "ab") as f:
        f.write(b"\n" * 10)
    with pytest.raises(ImportFailed):
        follower.poll()
    assert follower.logs[path].offset == read  # nothing more was read


def test_a_sub_agents_log_that_is_a_link_is_said_and_not_read(tmp_path):
    path, follower, log = followed(tmp_path)
    subagents = path.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    os.symlink("/dev/zero", subagents / "agent-zero.jsonl")
    finish(log)
    with open(path, "ab") as f:
        f.write(lines(log.records[-4:]))
    change = follower.poll()
    assert "proj/live/subagents/agent-zero.jsonl: not read: it is a link, and Loopscope follows no link there." in [
        note.render() for note in change.imported.notes]


# -- listing this machine's sessions on a page is the operator's explicit setting ---------------------------------------

def test_the_page_lists_the_folder_only_when_the_operator_says_the_server_is_theirs(tmp_path):
    named = {"LOOPSCOPE_SESSIONS_DIR": str(tmp_path)}
    said = refused("127.0.0.1", named)  # loopback is not enough: a proxy, a tunnel or another user reaches it too
    assert said.render().startswith("The sessions folder is not listed: LOOPSCOPE_LIST_SESSIONS is not set to 1.")
    assert refused("127.0.0.1", {**named, "LOOPSCOPE_LIST_SESSIONS": "yes"}) is not None
    assert refused("127.0.0.1", {**named, "LOOPSCOPE_LIST_SESSIONS": "1"}) is None
    # said, it still lists nothing beyond loopback or in a class
    assert "listens on 0.0.0.0" in refused(None, {**named, "LOOPSCOPE_LIST_SESSIONS": "1"}).render()


def test_replay_says_each_name_it_does_not_read_and_opens_the_real_sessions(tmp_path):
    from tests.apptest import app, click
    from tests.test_app_replay_sessions import listening

    projects = hostile(tmp_path)
    with listening({"LOOPSCOPE_SESSIONS_DIR": str(projects), "LOOPSCOPE_LIST_SESSIONS": "1"}, "127.0.0.1"):
        at = app("pages/replay.py")
        said = [c.value for c in at.caption]
        assert "`x.jsonl`: not read: it is a link, and Loopscope follows no link there." in said
        assert "`y.jsonl`: not read: it is a FIFO (a named pipe), not a regular file." in said
        assert len(at.selectbox(key="replay-session-choice").options) == 2
        click(at, "replay-session-open")
        assert at.session_state["replay"]["name"] == "new.jsonl" and at.session_state["replay"]["sub_agent_logs"] == 1
