"""Real sessions read as they were: a zipped session on the command line, a recorded OpenAI request with its
options, a sidechain linked by its agentId, and the words the CLI uses for what a log does not say."""

import io
import json
import random
import re
import zipfile

from loop.importers import import_bytes, import_files, import_path
from tests.cli import loop_main
from tests.synthetic import _Log, claude_code_session


def loop(*args):
    (done,) = loop_main([str(a) for a in args], env=None)
    return done


def _zipped(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


def test_import_reads_a_zipped_session_as_the_page_upload_does(tmp_path):
    log, agents = claude_code_session(records=400, compactions=1, agents=2)
    files = {"5e6f7a8b.jsonl": log, **{f"5e6f7a8b/{name}": data for name, data in agents.items()}}
    path = tmp_path / "session.zip"
    path.write_bytes(_zipped(files))
    uploaded = import_files([("session.zip", path.read_bytes())])
    out = tmp_path / "t.json"
    done = loop("import", path, "--out", out)
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    assert said[0] == "format: claude-code"
    assert sum(line.startswith("thread: ") for line in said) == len(uploaded.threads) == 3
    assert f"{len(uploaded.trace.messages)} messages, {len(uploaded.trace)} steps" in said
    assert import_path(path).trace.messages == uploaded.trace.messages
    assert loop("check", out).returncode == 0


OPENAI_BODY = {
    "model": "gpt-4o-mini", "temperature": 0.2, "stream": True, "thinking": {"type": "enabled", "budget_tokens": 1024},
    "messages": [
        {"role": "system", "content": "You run shell commands."},
        {"role": "user", "content": "How many files are here?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls | wc -l\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "assistant", "content": "There are 3 files."}],
    "tools": [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
}


def test_a_recorded_openai_request_in_its_envelope_imports_with_its_options_kept_and_named(tmp_path):
    wrapped = {"provider": "openai", "request": OPENAI_BODY, "baseURL": "https://api.openai.com/v1"}
    imported = import_bytes(json.dumps(wrapped).encode(), "request.json")
    assert imported.format == "openai-chat"
    meta = imported.trace.meta
    assert meta["model"] == "gpt-4o-mini" and meta["system"] == "You run shell commands."
    assert meta["request_options"] == {"temperature": 0.2, "stream": True,
                                       "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert meta["recorded_with"] == {"provider": "openai", "baseURL": "https://api.openai.com/v1"}
    said = imported.warnings
    assert any("temperature, stream, thinking" in w and "(`request_options`)" in w for w in said), said
    assert any("provider, baseURL" in w for w in said), said
    assert [m["role"] for m in imported.trace.messages] == ["user", "assistant", "user", "assistant"]
    # unwrapped, the same body says the same about its options
    bare = import_bytes(json.dumps(OPENAI_BODY).encode(), "body.json")
    assert bare.trace.meta["request_options"] == meta["request_options"]
    assert any("temperature, stream, thinking" in w for w in bare.warnings)
    path = tmp_path / "request.json"
    path.write_text(json.dumps(wrapped))
    out = tmp_path / "t.json"
    assert loop("import", path, "--out", out).returncode == 0
    assert json.loads(out.read_text())["request_options"]["temperature"] == 0.2
    assert loop("check", out).returncode == 0


def agent_id_log() -> bytes:
    """A Task whose sidechain is named only by the agentId of its records and of the Task's result record."""
    log = _Log(random.Random(7), "3c2b1a00-0000-4000-8000-00000000beef")
    node = log.ask(None)
    tid = "toolu_01TaskAgentIdOnly000001"
    node = log.record("assistant", node, {
        "id": "msg_task", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": tid, "name": "Task",
                     "input": {"description": "survey tests", "prompt": "Survey the tests folder",
                               "subagent_type": "Explore"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 40}})
    agent = "a5f3c1d2"
    # the sub-agent's first record: no agentId yet, and its prompt is not the Task's word for word
    sub = log.record("user", None, {"role": "user", "content": "Survey the tests folder.\n\nBe thorough."}, side=None,
                     isSidechain=True)
    for _ in range(2):
        sub, _ = log.turn(sub, agent, 1)
    log.answer(sub, agent)
    node = log.record("user", node, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": "Tests live in tests/."}]}]},
        agentId=agent, toolUseResult={"status": "completed", "totalToolUseCount": 2})
    log.answer(node)
    return ("\n".join(log.lines) + "\n").encode()


def test_a_sidechain_named_by_the_agentid_of_the_task_result_record_is_one_thread_inside_its_task(tmp_path):
    imported = import_bytes(agent_id_log(), "session.jsonl")
    assert [t.id for t in imported.threads] == ["main", "agent-a5f3c1d2"]
    sub = imported.trace.threads["agent-a5f3c1d2"]
    assert (sub.parent, sub.parent_tool_use_id) == ("main", "toolu_01TaskAgentIdOnly000001")
    assert sub.messages[0] == {"role": "user", "content": "Survey the tests folder.\n\nBe thorough."}
    assert not any("no tool_use of another thread started it" in w for w in imported.warnings), imported.warnings
    # its steps come inside the Task's run_tool step, not after the main thread's
    threads = [s.thread for s in imported.trace.steps]
    last = len(threads) - threads[::-1].index("agent-a5f3c1d2")
    assert "main" in threads[last:]  # the main thread goes on after its sub-agent answered
    path = tmp_path / "session.jsonl"
    path.write_bytes(agent_id_log())
    out = tmp_path / "t.json"
    done = loop("import", path, "--out", out)
    assert "thread: agent-a5f3c1d2 · 10 records · sub-agent a5f3c1d2: Survey the tests folder. Be thorough. · " \
           "started by toolu_01TaskAgentIdOnly000001" in done.stdout.splitlines()
    assert loop("check", out).returncode == 0


def compacted_after_an_answer() -> bytes:
    """A session that ends its loop, is compacted (auto), then asked again."""
    from tests.synthetic import _compaction

    log = _Log(random.Random(3), "11111111-2222-4333-8444-555555555555")
    node = log.ask(None)
    node, _ = log.turn(node, None, 1)
    node = log.answer(node)
    node = _compaction(log, node, 1)
    node = log.ask(node)
    log.answer(node)
    return ("\n".join(log.lines) + "\n").encode()


def test_a_compact_step_and_the_request_after_it_do_not_carry_the_loop_s_earlier_ending():
    trace = import_bytes(compacted_after_an_answer(), "s.jsonl").trace
    stages = [s.stage for s in trace.steps]
    at = stages.index("compact")
    assert trace.steps[at - 1].stage == "decide" and trace.steps[at - 1].ended == "end_turn"
    assert trace.steps[at].ended is None
    assert trace.steps[at + 1].stage == "user_request" and trace.steps[at + 1].ended is None
    assert trace.steps[-1].ended == "end_turn"


def test_the_words_say_what_was_not_recorded_and_show_no_python_values():
    from loop.views.narrate import describe

    trace = import_bytes(json.dumps(OPENAI_BODY).encode(), "body.json").trace
    lines = [describe(trace, k) for k in range(len(trace.steps))]
    calls = [line for line in lines if "call the model" in line]
    assert calls and all("· tokens not recorded ·" in line for line in calls), calls
    # nor a stop_reason: the one shown was filled in, and the line says so
    assert all(line.endswith("· stop_reason inferred from the content: the log recorded none") for line in calls)
    assert not any("None" in line for line in lines)
    odd = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": [{"type": ["text", "tool_use"], "text": "x"}, {"text": "no type"}]}]
    warnings = import_bytes(json.dumps(odd).encode(), "odd.json").warnings
    assert any('kept blocks of type ["text", "tool_use"]' in w for w in warnings), warnings
    assert any("kept blocks of type null" in w for w in warnings), warnings
    assert not any("None" in w or "['" in w for w in warnings), warnings


def test_two_sub_agents_whose_ids_share_their_start_are_named_apart_in_headings_and_tables():
    from loop.engine.trace import Thread
    from loop.views.parts import thread_name
    from pages.views.tables import thread_cell

    ids = ["toolu_sc_showcase_parallel_reader_0001", "toolu_sc_showcase_parallel_reader_0002"]
    names = [thread_name(Thread(f"agent-{n}", parent="main", parent_tool_use_id=i)) for n, i in enumerate(ids)]
    assert len(set(names)) == 2
    cells = [thread_cell(name, 1) for name in names]
    shown = [re.sub(r"<[^>]*>", "", c) for c in cells]  # what the cell draws, its tooltip left out
    assert len(set(shown)) == 2 and all("0001" in s or "0002" in s for s in shown), shown
    logs = ["agent-" + "a1b2c3d4e5f6" * 3 + "01", "agent-" + "a1b2c3d4e5f6" * 3 + "02"]
    assert len({thread_name(Thread(i, parent="main")) for i in logs}) == 2


def test_an_auto_compaction_without_its_summary_imports_and_says_so():
    from loop.views.narrate import describe

    log = _Log(random.Random(3), "11111111-2222-4333-8444-555555555556")
    node = log.ask(None)
    node = log.answer(node)
    boundary = log.uuid()
    log.write({"parentUuid": None, "logicalParentUuid": node, "isSidechain": False, "type": "system",
               "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info", "uuid": boundary,
               "sessionId": log.session, "compactMetadata": {"trigger": "auto", "preTokens": 160_000}})
    log.answer(log.ask(boundary))
    imported = import_bytes(("\n".join(log.lines) + "\n").encode(), "s.jsonl")
    assert "compact_boundary (line 3): a compaction (auto) with no summary after it (no `isCompactSummary` record); " \
           "imported as the log has it" in imported.warnings
    trace = imported.trace
    at = [s.stage for s in trace.steps].index("compact")
    said = describe(trace, at)
    assert "no summary" in said and "sees the summary" not in said, said
    assert describe(trace, at, "ja") != said


def test_values_of_the_wrong_type_are_said_as_the_file_holds_them():
    history = [{"role": "user", "content": "hi"},
               {"id": "m1", "type": "message", "role": "assistant", "model": "x",
                "content": [{"type": "text", "text": "yo"}], "stop_reason": ["end_turn"]},
               {"role": None, "content": "x"}]
    warnings = import_bytes(json.dumps(history).encode(), "h.json").warnings
    assert "messages[2]: role null is neither 'user' nor 'assistant'; passed over" in warnings, warnings
    assert 'messages.1: the recorded stop_reason ["end_turn"] is not a string; inferred from the content instead' \
           in warnings, warnings
