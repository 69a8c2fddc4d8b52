"""The sessions folder (`python -m loop sessions`), and a log followed as it is written (`replay --follow`)."""

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from loop.importers.follow import Follower
from loop.importers.sessions import refused, sessions
from tests.cli import ROOT, clean_env, loop_main
from tests.test_import_claude_code import TASK, Log

ASK_AGENT = [
    {"role": "user", "content": "review the parser"},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_task", "name": "Task",
         "input": {"description": "read it", "prompt": "read parser.py and say what it does"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "it parses"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "The sub-agent says it parses."}]},
]
AGENT = [
    {"role": "user", "content": "read parser.py and say what it does"},
    {"role": "assistant", "content": [{"type": "text", "text": "it parses"}]},
]


def write(path: Path, data: bytes, mtime: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def folder(tmp_path: Path) -> Path:
    """Two projects: an older session with an error and a compaction, a newer one with a sub-agent's log."""
    projects = tmp_path / "projects"
    old = Log()
    meta = old.add("user", None, "<local-command-caveat>Caveat: the messages below</local-command-caveat>",
                   isMeta=True)
    last = old.history(TASK, meta)
    old.records.append({"parentUuid": None, "logicalParentUuid": last, "isSidechain": False, "type": "system",
                        "subtype": "compact_boundary", "uuid": "c1", "sessionId": "sess",
                        "compactMetadata": {"trigger": "auto", "preTokens": 1000},
                        "timestamp": "2025-06-01T11:00:00.000Z", "content": "Conversation compacted"})
    write(projects / "-home-ada-wc" / "old.jsonl", old.bytes(), 1_750_000_000)
    new = Log()
    new.history(ASK_AGENT)
    for record in new.records:
        if record["type"] == "user" and isinstance(record["message"]["content"], list):
            record["toolUseResult"] = {"agentId": "a1b2", "content": [{"type": "text", "text": "it parses"}]}
    write(projects / "-home-ada-parser" / "new.jsonl", new.bytes(), 1_760_000_000)
    agent = Log(agent="a1b2", sidechain=True)
    agent.history(AGENT)
    write(projects / "-home-ada-parser" / "new" / "subagents" / "agent-a1b2.jsonl", agent.bytes(), 1_760_000_000)
    return projects


def test_the_list_is_newest_first_with_what_each_session_holds(tmp_path):
    projects = folder(tmp_path)
    found = sessions(projects)
    assert [s.path.stem for s in found] == ["new", "old"]
    new, old = found
    assert new.first_request == "review the parser" and new.sub_agents == 1
    assert new.size == sum(p.stat().st_size for p in projects.rglob("*.jsonl") if "parser" in str(p))
    # The caveat the harness added (isMeta) is not the user's request.
    assert old.first_request == "count the lines"
    assert (old.compactions, old.errors, old.sub_agents) == (1, 1, 0)
    [(code, said, err)] = [(r.returncode, r.stdout, r.stderr) for r in loop_main(["sessions", projects])]
    assert code == 0, err
    lines = said.splitlines()
    assert lines[0] == "-home-ada-parser"
    assert lines[1].startswith("    1. 2025-10-09 ") and "sub-agents 1 · compactions 0 · errors 0 · new" in lines[1]
    assert lines[2].strip() == "review the parser"
    assert lines[3] == "-home-ada-wc"
    assert "    2. 2025-06-15 " in lines[4] and "sub-agents 0 · compactions 1 · errors 1 · old" in lines[4]
    assert lines[5].strip() == "count the lines"


def test_open_imports_a_session_with_its_sub_agents_log(tmp_path):
    projects = folder(tmp_path)
    out = tmp_path / "t.json"
    [done] = loop_main(["sessions", projects, "--open", "1", "--out", out])
    assert done.returncode == 0, done.stderr
    assert "format: claude-code" in done.stdout
    assert "thread: agent-a1b2" in done.stdout and "started by toolu_task" in done.stdout
    [checked] = loop_main(["check", out])
    assert checked.returncode == 0 and "ok: thread agent-a1b2 (started by toolu_task)" in checked.stdout
    [wrong] = loop_main(["sessions", projects, "--open", "3"])
    assert wrong.returncode == 1 and "the list has sessions 1 to 2" in wrong.stderr


def test_the_folder_is_listed_only_on_the_users_own_machine(tmp_path):
    own = {"LOOPSCOPE_SESSIONS_DIR": str(tmp_path), "LOOPSCOPE_LIST_SESSIONS": "1"}
    assert refused("127.0.0.1", own) is None and refused("localhost", own) is None and refused("::1", own) is None
    assert "is not set" in refused("127.0.0.1", {}).render()
    assert "listens on 0.0.0.0" in refused(None, own).render()  # unset, Streamlit listens on every interface
    assert "listens on 0.0.0.0" in refused("0.0.0.0", own).render()
    assert "serves a class" in refused("127.0.0.1", {**own, "LOOPSCOPE_CLASSROOM": "1"}).render()


def test_deploy_classroom_marks_its_replicas(tmp_path):
    from deploy.classroom import Classroom

    room = Classroom(1, folder=tmp_path, runs=tmp_path, env={})
    assert room.env["LOOPSCOPE_CLASSROOM"] == "1"


def lines(records: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_followed_log_reads_only_what_was_appended_and_keeps_the_cursor(tmp_path):
    log = Log()
    log.history(TASK[:2])
    path = tmp_path / "live.jsonl"
    path.write_bytes(lines(log.records))
    follower = Follower(path)
    first = follower.poll()
    n = len(first.imported.trace)
    assert follower.poll() is None  # nothing written
    # A line still being written waits; the results come, then the answer.
    end = log.history(TASK[2:3], log.records[-1]["uuid"])
    written = lines(log.records[-3:])
    with open(path, "ab") as f:
        f.write(written[:-10])
    follower.poll(cursor=1)
    assert follower.logs[path].partial == written[:-10].rsplit(b"\n", 1)[1]  # the cut line waits
    with open(path, "ab") as f:
        f.write(written[-10:])
    change = follower.poll(cursor=1)
    assert len(change.imported.trace) > n and not change.branch_changed
    assert change.cursor == 1  # not at the end: it stays
    log.history(TASK[3:], end)
    with open(path, "ab") as f:
        f.write(lines(log.records[-1:]))
    at_end = len(change.imported.trace) - 1
    last = follower.poll(cursor=at_end)
    assert last.cursor == len(last.imported.trace) - 1  # at the end: it follows
    assert last.imported.trace.steps[-1].ended


def test_a_record_that_makes_another_branch_current_is_said_and_the_cursor_stays_on_its_record(tmp_path):
    log = Log()
    request = log.add("user", None, "count the lines")
    log.add("assistant", request, [{"type": "text", "text": "first try"}])
    path = tmp_path / "live.jsonl"
    path.write_bytes(lines(log.records))
    follower = Follower(path)
    follower.poll()
    # The user edits and retries: a new branch from the request, written after the first.
    log.add("assistant", request, [{"type": "text", "text": "second try, longer"}], mid="msg_retry")
    with open(path, "ab") as f:
        f.write(lines(log.records[-1:]))
    change = follower.poll(cursor=0)
    assert change.branch_changed and change.cursor == 0
    trace = change.imported.trace
    assert "second try" in json.dumps(trace.messages)


def test_replay_follow_prints_the_steps_appended_while_it_runs(tmp_path):
    log = Log()
    log.history(TASK)  # written in two parts: the request and the tool_use lines, then the results and the answer
    path = tmp_path / "live.jsonl"
    path.write_bytes(lines(log.records[:5]))
    proc = subprocess.Popen([sys.executable, "-m", "loop", "replay", "--follow", str(path)], cwd=ROOT,
                            env=clean_env(PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        said = until(proc, "run a tool_use: Read")  # the steps written so far
        assert said.startswith(f"following {path}")
        with open(path, "ab") as f:  # the results, then the answer, written while it follows
            f.write(lines(log.records[5:]))
        said = until(proc, "a has 3 lines, b is missing, c has 1.")
        # The tool steps printed before their results came are printed again, with them; the steps before are not.
        assert said.startswith("the log's new records complete steps printed above: from step 5 on")
        assert "count the lines" not in said and 'Bash {"command": "wc -l a"} → 3 a' in said
    finally:
        proc.terminate()
        proc.wait(10)


def until(proc: subprocess.Popen, text: str, timeout: float = 60) -> str:
    """What the process prints until a line holds `text` (at most `timeout` seconds)."""
    if not hasattr(proc, "said"):  # its lines, read as they come by a thread of their own
        proc.said = queue.Queue()
        threading.Thread(target=lambda: [proc.said.put(line) for line in iter(proc.stdout.readline, "")]
                         + [proc.said.put(None)], daemon=True).start()
    said, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = proc.said.get(timeout=deadline - time.monotonic())
        except queue.Empty:
            break
        if line is None:
            raise AssertionError(f"it exited: {''.join(said)}{proc.stderr.read()}")
        said.append(line)
        if text in line:
            return "".join(said)
    raise AssertionError(f"{text!r} was not printed: {''.join(said)}")
