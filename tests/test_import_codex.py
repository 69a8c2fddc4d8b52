"""OpenAI Codex CLI rollouts: the same loop in the Responses API's words, one viewer for both agents.

tests/data/codex_rollout.jsonl has the shape Codex CLI writes (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl):
session_meta, turn_context, response_item (message, reasoning, function_call, function_call_output), event_msg
(user_message, agent_message, agent_reasoning, token_count, exec_command_end).
"""

import json
from pathlib import Path

from loop.engine import rules
from loop.files import transcript
from loop.importers import import_bytes
from loop.views.narrate import describe
from tests.cli import loop_main

DATA = Path(__file__).resolve().parent / "data" / "logs"


def wrap(kind: str, payload: dict, n: int = 0) -> dict:
    return {"timestamp": f"2026-01-05T09:00:{n:02d}.000Z", "type": kind, "payload": payload}


def lines(records: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_rollout_imports_with_each_call_paired_to_its_output_and_check_holds(tmp_path):
    imported = import_bytes((DATA / "codex_rollout.jsonl").read_bytes(), "rollout-2026-01-05.jsonl")
    assert imported.format == "codex-rollout"
    trace = imported.trace
    assert trace.meta["model"] == "gpt-5-codex" and trace.meta["task"] == "Why does the checkout test fail?"
    assert trace.meta["codex_version"] == "0.77.0" and trace.meta["cwd"] == "/home/dev/shop"
    assert [s.stage for s in trace.steps] == [
        "harness", "user_request", "call_model", "append_assistant", "decide", "run_tool", "run_tool", "write_back",
        "call_model", "append_assistant", "decide"]
    # One response: its reasoning summary, its two calls; one user message of both outputs, paired by call_id
    response = trace.messages[2]
    assert [b["type"] for b in response["content"]] == ["thinking", "tool_use", "tool_use"]
    assert response["content"][1]["input"]["command"] == ["bash", "-lc", "pytest -q tests/test_checkout.py"]
    runs = [s for s in trace.steps if s.stage == "run_tool"]
    assert [(s.detail.tool_use_id, s.detail.recorded) for s in runs] == [("call_A1", True), ("call_A2", True)]
    assert "1 failed" in runs[0].detail.output and runs[0].detail.get("codex_exec")["exit_code"] == 1
    assert all(p.status == "paired" for p in rules.pairs(trace.messages))
    # each call's usage is its token_count event's last_token_usage
    calls = [s for s in trace.steps if s.stage == "call_model"]
    assert [c.detail.response["usage"]["input_tokens"] for c in calls] == [5120, 5280]
    assert "SYNTHETIC" not in json.dumps(trace.messages) and "gAAAA" not in json.dumps(trace.messages)
    # Codex's own context is the harness's, not the person's request
    assert "Codex put this message" in describe(trace, 0)
    out = tmp_path / "t.json"
    (done,) = loop_main(["import", DATA / "codex_rollout.jsonl", "--out", out], env=None)
    assert done.returncode == 0 and "format: codex-rollout" in done.stdout, done.stdout + done.stderr
    (checked,) = loop_main(["check", out], env=None)
    assert checked.returncode == 0 and "2 tool_use/tool_result pair(s) hold the API's rules" in checked.stdout


def test_outputs_are_paired_by_call_id_not_by_their_order():
    records = [
        wrap("session_meta", {"id": "s", "cwd": "/w", "cli_version": "0.77.0"}),
        wrap("turn_context", {"model": "gpt-5-codex"}),
        wrap("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        wrap("response_item", {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"}),
        wrap("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c2"}),
        wrap("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"}),
        wrap("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
        wrap("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}),
    ]
    trace = import_bytes(lines(records), "r.jsonl").trace
    runs = {s.detail.tool_use_id: s.detail.output for s in trace.steps if s.stage == "run_tool"}
    assert runs == {"c1": "a.txt", "c2": "Done!"}
    assert rules.check(trace.messages, as_request=False) == []
    assert trace.messages[1]["content"][1]["input"] == {"input": "*** Begin Patch"}


def test_a_compacted_rollout_is_a_compact_step_with_its_summary():
    records = [
        wrap("session_meta", {"id": "s", "cwd": "/w", "cli_version": "0.77.0"}),
        wrap("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        wrap("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        wrap("compacted", {"message": "Summary: the user said go; it was done."}),
        wrap("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}),
        wrap("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done again"}]}),
    ]
    trace = import_bytes(lines(records), "r.jsonl").trace
    compact = next(s for s in trace.steps if s.stage == "compact")
    assert compact.detail.summary == "Summary: the user said go; it was done."
    assert trace.messages[0]["content"][0]["text"].startswith("Summary:") and trace.messages[-1]["content"][0]["text"] == "done again"
    again = transcript.loads(transcript.dumps(trace), strict=False)
    assert again.messages == trace.messages


def test_an_older_rollout_of_bare_items_is_read_the_same_way():
    records = [{"id": "4444", "timestamp": "2025-06-04T05:06:07.000Z", "instructions": "Be careful."},
               {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Open the session."}]},
               {"record_type": "state"},
               {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is open."}]}]
    imported = import_bytes(lines(records), "rollout-4444.jsonl")
    assert imported.format == "codex-rollout" and imported.trace.meta["system"] == "Be careful."
    assert [m["role"] for m in imported.trace.messages] == ["user", "assistant"]
