"""Each imported step names where it came from: a Claude Code record's file and line, a course trace's cycle."""

import json
from pathlib import Path

from loop.files import transcript
from loop.importers import import_bytes, import_files
from tests.test_import_claude_code import TASK, Log

COURSE = Path(__file__).resolve().parent / "data" / "course_s01_trace.json"


def test_a_claude_code_step_names_the_line_of_its_record():
    log = Log()
    log.history(TASK)
    trace = import_bytes(log.bytes(), "session.jsonl").trace
    lines = {i + 1: record for i, record in enumerate(log.records)}
    for step in trace.steps:
        origin = step.detail["origin"]
        record = lines[origin["line"]]
        if step.stage == "call_model":  # the response the call received: an assistant record
            assert record["type"] == "assistant"
        if step.stage == "run_tool":  # its tool_result's own line
            block = record["message"]["content"][0]
            assert block["tool_use_id"] == step.detail["tool_use_id"]
    first = trace.steps[0]
    assert first.stage == "user_request" and first.detail["origin"] == {"line": 1}


def test_a_session_with_a_sub_agent_file_names_the_file_too():
    log = Log()
    log.history(TASK)
    side = Log(agent="a1", sidechain=True)
    side.history([{"role": "user", "content": "look"}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    trace = import_files([("session.jsonl", log.bytes()), ("subagents/agent-a1.jsonl", side.bytes())]).trace
    files = {(step.thread, step.detail["origin"]["file"]) for step in trace.steps}
    assert files == {("main", "session.jsonl"), ("agent-a1", "subagents/agent-a1.jsonl")}
    first = next(step for step in trace.steps if step.thread == "agent-a1")
    assert first.detail["origin"] == {"file": "subagents/agent-a1.jsonl", "line": 1}


def test_a_course_step_names_its_cycle_and_the_origin_survives_a_save():
    trace = import_bytes(COURSE.read_bytes(), COURSE.name).trace
    calls = [s for s in trace.steps if s.stage == "call_model"]
    assert [c.detail["origin"] for c in calls] == [{"at": f"cycle {c.detail['cycle']}.response"} for c in calls]
    again = transcript.loads(transcript.dumps(trace))
    assert [s.detail.get("origin") for s in again.steps] == [s.detail.get("origin") for s in trace.steps]
