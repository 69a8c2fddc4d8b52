"""Imports with sub-agents and compactions: every shape on files written here, nothing dropped.

- course traces (s04: a sub-agent's cycles between its parent's; s06: a history compacted on the way);
- Claude Code logs: a system record inside the chain, a compact_boundary, a sidechain linked by its prompt,
  sub-agents in subagents/agent-<id>.jsonl (several files, a folder, a zip), and what must be refused.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from loop.engine import rules
from loop.files import transcript
from loop.importers import ImportFailed, import_bytes, import_files, import_path
from tests.test_import_claude_code import TASK, Log

SYSTEM = "You are a coding agent at /w. Use the task tool to delegate exploration or subtasks."
SUB = "You are a coding subagent at /w. Complete the given task, then summarize your findings."
TOOLS = [{"name": "bash", "input_schema": {"type": "object"}}, {"name": "task", "input_schema": {"type": "object"}}]
PROMPT = "Find the tests and say which framework they use."


def response(content: list, stop: str, n: int) -> dict:
    return {"id": f"resp_{n}", "type": "message", "role": "assistant", "model": "m", "stop_reason": stop,
            "content": content, "usage": {"input_tokens": 10 * n, "output_tokens": 5}}


def cycle(n: int, system: str, messages: list, content: list, stop: str, runs: list | None = None) -> dict:
    return {"cycle": n, "elapsed_ms": 100 + n, "request": {"model": "m", "system": system, "messages": messages,
                                                           "tools": TOOLS if system == SYSTEM else TOOLS[:1],
                                                           "max_tokens": 8000},
            "response": response(content, stop, n), "tool_executions": runs or []}


def result(use_id: str, content: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": content}]}


TASK_USE = {"type": "tool_use", "id": "call_task", "name": "task", "input": {"description": "find tests", "prompt": PROMPT}}
LS = {"type": "tool_use", "id": "call_ls", "name": "bash", "input": {"command": "ls"}}
CAT = {"type": "tool_use", "id": "call_cat", "name": "bash", "input": {"command": "cat test_calc.py"}}


def s04_trace() -> dict:
    """As the course's s04 records it: the parent's task call, the sub-agent's cycles, then the parent again."""
    child = [{"role": "user", "content": PROMPT}]
    cycles = [
        cycle(1, SYSTEM, [{"role": "user", "content": "Which framework?"}], [TASK_USE], "tool_use"),
        cycle(2, SUB, child, [LS], "tool_use", [{"name": "bash", "input": LS["input"], "output": "test_calc.py"}]),
        cycle(3, SUB, child + [{"role": "assistant", "content": [LS]}, result("call_ls", "test_calc.py")], [CAT],
              "tool_use", [{"name": "bash", "input": CAT["input"], "output": "import unittest"}]),
        cycle(4, SUB, child + [{"role": "assistant", "content": [LS]}, result("call_ls", "test_calc.py"),
                               {"role": "assistant", "content": [CAT]}, result("call_cat", "import unittest")],
              [{"type": "text", "text": "It uses unittest."}], "end_turn"),
        cycle(5, SYSTEM, [{"role": "user", "content": "Which framework?"}, {"role": "assistant", "content": [TASK_USE]},
                          result("call_task", "It uses unittest.")],
              [{"type": "text", "text": "The project tests with unittest."}], "end_turn"),
    ]
    return {"version": "s04", "prompt": "Which framework?", "model": "m", "total_cycles": 5, "cycles": cycles}


def test_a_course_trace_with_a_sub_agent_keeps_every_cycle_in_its_thread():
    raw = s04_trace()
    imported = import_bytes(json.dumps(raw).encode(), "s04.json")
    trace = imported.trace
    assert imported.warnings == []
    child = trace.threads["task-call_task"]
    assert (child.parent, child.parent_tool_use_id, child.system) == ("main", "call_task", SUB)
    calls = [s for s in trace.steps if s.stage == "call_model"]
    # Nothing dropped: every cycle is a call, in order, each in its own thread, each sending what it sent.
    assert [c.detail["cycle"] for c in calls] == [1, 2, 3, 4, 5]
    assert [c.thread for c in calls] == ["main", child.id, child.id, child.id, "main"]
    for call, recorded in zip(calls, raw["cycles"]):
        assert trace.request_at(call.index) == recorded["request"]
    returned = trace.steps[trace.returned_at(child.id)]
    assert returned.detail["output"] == "It uses unittest." and returned.detail["thread"] == child.id
    assert trace.opened_at(child.id) == calls[0].index + 3  # right after the parent's decide
    assert trace.messages[-1]["content"][0]["text"] == "The project tests with unittest."
    assert transcript.violations(trace) == []
    back = transcript.loads(transcript.dumps(trace))
    assert all(back.messages_at(i) == trace.messages_at(i) for i in range(len(trace)))


def test_a_course_trace_compacted_on_the_way_is_a_compact_step_not_a_warning():
    """s06: the third request has an old result replaced (micro), the fourth is a summary (auto)."""
    one = [{"role": "user", "content": "Read a and b."}]
    read_a = {"type": "tool_use", "id": "c_a", "name": "bash", "input": {"command": "cat a"}}
    read_b = {"type": "tool_use", "id": "c_b", "name": "bash", "input": {"command": "cat b"}}
    long_a = "A" * 300
    two = one + [{"role": "assistant", "content": [read_a]}, result("c_a", long_a)]
    three = two[:2] + [result("c_a", "[Previous: used bash]"), {"role": "assistant", "content": [read_b]},
                       result("c_b", "B")]
    summary = [{"role": "user", "content": "[Conversation compressed.]\n\nRead a and b; both done."}]
    raw = {"prompt": "Read a and b.", "cycles": [
        cycle(1, SYSTEM, one, [read_a], "tool_use", [{"name": "bash", "input": {}, "output": long_a}]),
        cycle(2, SYSTEM, two, [read_b], "tool_use", [{"name": "bash", "input": {}, "output": "B"}]),
        cycle(3, SYSTEM, three, [{"type": "text", "text": "Both read."}], "end_turn"),
        cycle(4, SYSTEM, summary + [{"role": "assistant", "content": "Both read."},
                                    {"role": "user", "content": "and now?"}],
              [{"type": "text", "text": "Nothing more."}], "end_turn"),
    ]}
    imported = import_bytes(json.dumps(raw).encode(), "s06.json")
    trace = imported.trace
    assert not any("fewer than" in w or "more than" in w for w in imported.warnings), imported.warnings
    compacts = [s for s in trace.steps if s.stage == "compact"]
    assert [s.detail["kind"] for s in compacts] == ["imported", "imported"]
    micro, auto = compacts
    assert [r["index"] for r in micro.detail["replaced"]] == [2]
    assert micro.detail["replaced"][0]["message"]["content"][0]["content"] == long_a  # kept in the trace
    assert auto.detail["history_before"][:5] == three and auto.n_messages == 3
    calls = [s for s in trace.steps if s.stage == "call_model"]
    for call, recorded in zip(calls, raw["cycles"]):
        assert trace.request_at(call.index)["messages"] == recorded["request"]["messages"]
    assert trace.messages[0] == summary[0] and len(trace.threads) == 1


# -- Claude Code ------------------------------------------------------------------------------------------------------

def log_bytes(*logs: Log, order=None) -> bytes:
    records = [r for log in logs for r in log.records]
    records = order(records) if order else records
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_system_record_inside_the_chain_with_lines_out_of_order_does_not_cut_it():
    log = Log()
    first = log.add("user", None, "hi")
    answer = log.add("assistant", first, [{"type": "text", "text": "hello"}])
    log.records.append({"type": "system", "subtype": "turn_duration", "uuid": "sys1", "parentUuid": answer,
                        "timestamp": "2025-06-01T10:00:02.500Z", "content": "took 2 s"})  # no isSidechain
    again = log.add("user", "sys1", "and then?")
    log.add("assistant", again, [{"type": "text", "text": "the final answer"}])
    shuffled = lambda records: [records[3], records[4], records[2], records[0], records[1]]  # noqa: E731
    imported = import_bytes(log_bytes(log, order=shuffled))
    texts = [rules.blocks(m)[0]["text"] for m in imported.trace.messages]
    assert texts == ["hi", "hello", "and then?", "the final answer"]
    assert not any("abandoned" in w for w in imported.warnings)


def compacted_log() -> Log:
    """Two turns, a compact_boundary, the summary, then one more turn."""
    log = Log()
    end = log.history(TASK)
    log.records.append({"type": "system", "subtype": "compact_boundary", "uuid": "cb1", "parentUuid": None,
                        "logicalParentUuid": end, "isSidechain": False, "content": "Conversation compacted",
                        "compactMetadata": {"trigger": "auto", "preTokens": 155000},
                        "timestamp": "2025-06-01T11:00:00.000Z"})
    summary = log.add("user", "cb1", "This session is being continued from a previous conversation. Summary: "
                                     "a has 3 lines, b is missing.", isCompactSummary=True)
    ask = log.add("user", summary, "now count c")
    log.add("assistant", ask, [{"type": "text", "text": "c has 1 line."}])
    return log


def test_a_compact_boundary_is_a_compact_step_and_the_history_after_it_starts_with_the_summary():
    imported = import_bytes(log_bytes(compacted_log()), "session.jsonl")
    trace = imported.trace
    (step,) = [s for s in trace.steps if s.stage == "compact"]
    assert step.detail["kind"] == "auto" and step.detail["pre_tokens"] == 155000
    assert step.detail["history_before"] == TASK  # the messages before it, kept, not glued to the summary
    after = trace.messages_at(step.index)
    assert len(after) == 1 and after[0]["content"].startswith("This session is being continued")
    assert [m["content"] for m in trace.messages][1:] == ["now count c", [{"type": "text", "text": "c has 1 line."}]]
    last_call = [s for s in trace.steps if s.stage == "call_model"][-1]
    assert trace.request_at(last_call.index)["messages"] == trace.messages[:2]
    assert TASK[1] not in trace.request_at(last_call.index)["messages"]
    assert not any("compact_boundary" in w or "separate chains" in w for w in imported.warnings), imported.warnings


def session_with_agent(via_file: bool) -> tuple[Log, Log]:
    main = Log()
    ask = main.add("user", None, "look around, with a helper")
    task = main.add("assistant", ask, [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                                        "input": {"description": "find tests", "prompt": "find the tests"}}])
    side = Log(agent="a9" if via_file else None, sidechain=True)
    side.n = 500
    side.history([{"role": "user", "content": "find the tests"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_s1", "name": "Glob",
                                                     "input": {"pattern": "tests/*"}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s1", "content": "t.py"}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "tests/t.py"}]}])
    done = main.add("user", task, [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "tests/t.py"}],
                    toolUseResult={"status": "completed", **({"agentId": "a9"} if via_file else {})})
    main.add("assistant", done, [{"type": "text", "text": "The tests are in tests/t.py."}])
    return main, side


def check_linked(trace, child_id: str) -> None:
    child = trace.threads[child_id]
    assert (child.parent, child.parent_tool_use_id, child.label) == ("main", "toolu_task", "find tests")
    run_tool = trace.steps[trace.returned_at(child_id)]
    assert run_tool.detail["thread"] == child_id and run_tool.detail["output"] == "tests/t.py"
    assert trace.steps_of(child_id)[-1] == run_tool.index - 1  # the sub-agent's steps end right before it
    assert [m["content"] for m in child.messages][0] == "find the tests" and len(child.messages) == 4
    first = trace.steps[trace.steps_of(child_id)[0]]  # its request names the tool_use that started it
    assert first.stage == "user_request" and first.detail.started_by == "toolu_task"


def test_an_old_style_sidechain_is_linked_to_its_task_by_its_prompt():
    main, side = session_with_agent(via_file=False)
    records = main.records[:2] + side.records + main.records[2:]  # one file, sidechain lines in the middle
    imported = import_bytes("".join(json.dumps(r) + "\n" for r in records).encode(), "session.jsonl")
    (child_id,) = [t for t in imported.trace.threads if t != "main"]
    assert child_id.startswith("sidechain-")
    check_linked(imported.trace, child_id)
    assert imported.warnings == []


def test_subagent_files_join_their_session_as_files_a_folder_or_a_zip(tmp_path):
    main, side = session_with_agent(via_file=True)
    files = [("agent-a9.jsonl", log_bytes(side)), ("session.jsonl", log_bytes(main))]
    imported = import_files(files)
    check_linked(imported.trace, "agent-a9")
    assert imported.trace.meta["imported"]["source"] == "session.jsonl with 1 sub-agent log(s)"
    # a folder as Claude Code lays it out: <session>.jsonl, <session>/subagents/agent-<id>.jsonl
    (tmp_path / "sess" / "subagents").mkdir(parents=True)
    (tmp_path / "sess.jsonl").write_bytes(files[1][1])
    (tmp_path / "sess" / "subagents" / "agent-a9.jsonl").write_bytes(files[0][1])
    (tmp_path / "sess" / "subagents" / "agent-a9.meta.json").write_text('{"agentType": "general-purpose"}')
    check_linked(import_path(tmp_path / "sess.jsonl").trace, "agent-a9")  # the session file finds its sub-agents
    check_linked(import_path(tmp_path).trace, "agent-a9")  # the folder
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("sess.jsonl", files[1][1])
        z.writestr("sess/subagents/agent-a9.jsonl", files[0][1])
        z.writestr("sess/subagents/agent-a9.meta.json", "{}")
    check_linked(import_files([("sess.zip", zipped.getvalue())]).trace, "agent-a9")
    # the session alone still imports: its Task call's result is there, the sub-agent's steps are not
    alone = import_bytes(files[1][1], "session.jsonl")
    assert list(alone.trace.threads) == ["main"]


def test_a_session_with_a_compaction_and_a_sub_agent_replays_with_nothing_dropped():
    log = compacted_log()
    main, side = session_with_agent(via_file=True)
    # the session goes on after the compaction with a Task call whose sub-agent is in its own file
    last = log.records[-1]["uuid"]
    for record in main.records[1:]:
        record = dict(record, uuid="m" + record["uuid"])
        if record["parentUuid"] in {r["uuid"] for r in main.records}:
            record["parentUuid"] = "m" + record["parentUuid"]
        else:
            record["parentUuid"] = last
        if record["type"] == "user" and record["parentUuid"] == last:
            pass
        log.records.append(record)
    imported = import_files([("session.jsonl", log_bytes(log)), ("subagents/agent-a9.jsonl", log_bytes(side))])
    trace = imported.trace
    assert [s.detail["kind"] for s in trace.steps if s.stage == "compact"] == ["auto"]
    check_linked(trace, "agent-a9")
    # every message record of both files is in some history the trace shows
    seen = {json.dumps(m, sort_keys=True) for i in range(len(trace)) for m in trace.messages_at(i)}
    for record in log.records + side.records:
        if record.get("type") in ("user", "assistant"):
            content = record["message"]["content"]
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                assert any(json.dumps(block, sort_keys=True) in s or (isinstance(content, str) and content in s)
                           for s in seen), block
    assert transcript.violations(trace) == []
    back = transcript.loads(transcript.dumps(trace))
    assert all(back.messages_at(i) == trace.messages_at(i) for i in range(len(trace)))


def test_a_sub_agent_nobody_started_is_kept_after_the_main_thread_and_said():
    main = Log()
    main.history([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    side = Log(agent="zz", sidechain=True)
    side.n = 300
    side.history([{"role": "user", "content": "an orphan task"},
                  {"role": "assistant", "content": [{"type": "text", "text": "done"}]}])
    imported = import_files([("s.jsonl", log_bytes(main)), ("agent-zz.jsonl", log_bytes(side))])
    trace = imported.trace
    assert trace.steps[-1].thread == "agent-zz" and trace.threads["agent-zz"].parent_tool_use_id is None
    assert any(w.startswith("thread agent-zz: no tool_use of another thread started it") for w in imported.warnings)


@pytest.mark.parametrize("files, said", [
    ([("a.jsonl", b'{"type": "user", "isSidechain": false, "uuid": "1", "message": {"role": "user", "content": "x"}}'),
      ("b.jsonl", b'{"type": "user", "isSidechain": false, "uuid": "2", "message": {"role": "user", "content": "y"}}')],
     "a.jsonl, b.jsonl: several sessions' logs (a.jsonl, b.jsonl): give one session's log with its subagents/ files"),
    ([("a.jsonl", b'{"type": "user", "isSidechain": false, "uuid": "1", "message": {"role": "user", "content": "x"}}'),
      ("t.json", b'{"format": "loopscope-transcript"}')],
     "t.json is not a Claude Code log; several files are read together only as one Claude Code "
     "session and its sub-agents' logs"),
    ([("x.zip", b"PK\x03\x04 broken")], "x.zip: not a zip Loopscope can open (File is not a zip file)"),
    ([("a.jsonl", b"\xff\xfe{}"), ("b.jsonl", b"{}")],
     "a.jsonl: the file is UTF-16 text; Loopscope reads UTF-8 (save it again as UTF-8)"),
])
def test_what_cannot_be_read_together_is_refused_in_one_line(files, said):
    with pytest.raises(ImportFailed) as failed:
        import_files(files)
    assert str(failed.value) == said


def test_a_zip_that_would_unzip_past_the_limit_is_refused_before_it_is_expanded():
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("big.jsonl", b" " * 5_000_000)  # 5 MB of spaces: a few KB zipped
        z.writestr("small.jsonl", b"{}")
    data = zipped.getvalue()
    assert len(data) < 50_000
    with pytest.raises(ImportFailed) as failed:
        import_files([("bomb.zip", data)], max_bytes=1_000_000)
    assert "over the import limit of 1.0 MB; nothing was read" in str(failed.value) and "once unzipped" in str(failed.value)
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("notes.txt", "no logs here")
    with pytest.raises(ImportFailed) as failed:
        import_files([("e.zip", empty.getvalue())])
    assert str(failed.value) == "e.zip: the zip holds no .jsonl log"
