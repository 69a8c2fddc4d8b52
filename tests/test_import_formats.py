"""Anthropic, OpenAI, the course's recorded traces and Loopscope's own files, each told apart by its shape."""

import json
from pathlib import Path

from loop.engine import rules
from loop import start
from loop.files import transcript
from loop.importers import import_bytes
from loop.views.narrate import describe
from loop.files.runs import RunsStore, owner_key

DATA = Path(__file__).parent / "data"
BASH = {"name": "bash", "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
HISTORY = [
    {"role": "user", "content": "What is in the folder?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                      {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "README.txt"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Just README.txt."}]},
]


def dumps(value) -> bytes:
    return json.dumps(value).encode()


def stages(trace) -> list:
    return [s.stage for s in trace.steps]


LOOP = ["user_request", "call_model", "append_assistant", "decide", "run_tool", "write_back",
        "call_model", "append_assistant", "decide"]


# -- Anthropic -------------------------------------------------------------------------------------------------------

def test_a_bare_messages_list():
    imported = import_bytes(dumps(HISTORY), "history.json")
    assert (imported.format, imported.warnings) == ("anthropic-messages", [])
    assert imported.trace.messages == HISTORY and stages(imported.trace) == LOOP
    assert imported.trace.meta["task"] == "What is in the folder?"
    assert imported.trace.meta["imported"] == {"format": "anthropic-messages", "source": "history.json", "warnings": []}


def test_a_request_body_brings_its_settings_to_every_call():
    body = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": HISTORY, "tools": [BASH],
            "max_tokens": 8000, "temperature": 0}
    imported = import_bytes(dumps(body), "request.json")
    assert imported.format == "anthropic-request"
    trace = imported.trace
    assert (trace.meta["model"], trace.meta["system"], trace.meta["tools"], trace.meta["max_tokens"]) == \
           ("claude-sonnet-4-5", "Be brief.", [BASH], 8000)
    assert trace.meta["request_options"] == {"temperature": 0}
    call = trace.steps[1]
    assert trace.request_at(1) == {"model": "claude-sonnet-4-5", "system": "Be brief.", "tools": [BASH],
                                   "max_tokens": 8000, "messages": HISTORY[:1]}
    assert call.detail["response"]["stop_reason"] == "tool_use"


def test_response_objects_keep_their_stop_reason_and_usage():
    first = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": HISTORY[1]["content"],
             "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}}
    last = {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-x", "content": HISTORY[3]["content"],
            "stop_reason": "max_tokens", "stop_sequence": None, "usage": {"input_tokens": 150, "output_tokens": 30}}
    # As people log them: the request's messages with each response appended whole.
    imported = import_bytes(dumps([HISTORY[0], first, HISTORY[2], last]))
    assert imported.format == "anthropic-messages"
    assert imported.trace.messages == HISTORY  # the history keeps role and content only
    final = imported.trace.steps[-1]
    assert (final.ended, final.input_tokens, final.output_tokens) == ("max_tokens", 250, 50)
    assert imported.trace.steps[1].detail["response"]["id"] == "msg_1"


def test_a_list_of_responses_alone_says_what_was_not_recorded():
    first = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": HISTORY[1]["content"],
             "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 2}}
    imported = import_bytes(dumps([first]))
    assert imported.format == "anthropic-responses"
    assert imported.trace.meta["model"] == "claude-x"
    assert imported.warnings[0] == ("a list of responses holds no user messages: the request and the tool_results "
                                    "were not recorded, so its 1 tool_use block has no tool_result")
    assert imported.trace.steps[-1].stage == "run_tool" and imported.trace.steps[-1].detail["recorded"] is False


def test_broken_pairs_are_kept_as_they_are_and_the_rule_is_named():
    broken = [HISTORY[0], HISTORY[1], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_zzz", "content": "lost"}]}]
    imported = import_bytes(dumps(broken))
    assert imported.trace.messages == broken
    assert [p.status for p in rules.pairs(imported.trace.messages)] == ["orphan", "orphan"]
    assert "messages.2.content.0: breaks an API rule, kept as recorded: unexpected `tool_use_id` found in " \
           "`tool_result` blocks: toolu_zzz. Each `tool_result` block must have a corresponding `tool_use` block " \
           "in the previous message." in imported.warnings
    assert any(w.startswith("messages.1: breaks an API rule, kept as recorded: `tool_use` ids were found without")
               for w in imported.warnings)


def test_unknown_blocks_and_odd_messages_are_kept_or_named_never_dropped_silently():
    odd = [HISTORY[0], {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s1", "name": "web_search"},
                                                         "a bare string", 42]},
           "not a message", {"role": "model", "content": "x"}, {"role": "user"}]
    imported = import_bytes(dumps(odd))
    assert imported.trace.messages[1]["content"] == [
        {"type": "server_tool_use", "id": "s1", "name": "web_search"},
        {"type": "text", "text": "a bare string"}, {"type": "unknown", "raw": "42"}]
    assert imported.warnings == [
        "repaired content items that were bare strings into text blocks ×1: messages[1].content[1]",
        "kept content items that are not blocks as type 'unknown' ×1: messages[1].content[2]",
        "passed over messages that are not objects ×1: messages[2]",
        "messages[3]: role 'model' is neither 'user' nor 'assistant'; passed over",
        "messages[4]: the user message has no content (a string or a list of blocks); passed over",
        "kept blocks of type 'server_tool_use', which Loopscope shows raw ×1: messages.1",
        "kept blocks of type 'unknown', which Loopscope shows raw ×1: messages.1",
    ]


# -- OpenAI ------------------------------------------------------------------------------------------------------------

OPENAI = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Size of a and b?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"du a\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"du b"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "4 a"},
    {"role": "tool", "tool_call_id": "call_2", "content": "8 b"},
    {"role": "assistant", "content": "a is 4K, b is 8K."},
]


def test_openai_tool_calls_and_tool_messages_become_one_turn_of_the_loop():
    imported = import_bytes(dumps(OPENAI), "chat.json")
    assert imported.format == "openai-chat"
    messages = imported.trace.messages
    assert imported.trace.meta["system"] == "You are a coding agent."
    assert messages == [
        {"role": "user", "content": "Size of a and b?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "du a"}},
            {"type": "tool_use", "id": "call_2", "name": "bash", "input": "{\"command\": \"du b"}]},
        {"role": "user", "content": [  # consecutive tool messages: ONE user message, as stage 5 writes it
            {"type": "tool_result", "tool_use_id": "call_1", "content": "4 a"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "8 b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a is 4K, b is 8K."}]},
    ]
    assert stages(imported.trace).count("write_back") == 1
    assert [p.status for p in rules.pairs(messages)] == ["paired", "paired"]
    assert len(imported.warnings) == 1
    assert imported.warnings[0].startswith("messages[2].tool_calls[1]: the arguments of 'bash' are not valid JSON (")
    assert imported.warnings[0].endswith("); kept as the raw string")


def test_an_openai_request_body_gives_its_tools_the_messages_api_shape():
    body = {"model": "gpt-x", "max_completion_tokens": 500, "messages": OPENAI[1:],
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
                                                        "parameters": BASH["input_schema"]}}]}
    imported = import_bytes(dumps(body))
    assert imported.format == "openai-chat"
    assert imported.trace.meta["tools"] == [BASH]
    assert (imported.trace.meta["model"], imported.trace.meta["max_tokens"]) == ("gpt-x", 500)
    assert "system" not in imported.trace.meta


def test_a_system_message_in_the_middle_is_moved_to_meta_and_said():
    chat = OPENAI[1:2] + [{"role": "system", "content": "Now answer in French."}] + OPENAI[5:]
    imported = import_bytes(dumps(chat))
    assert imported.trace.meta["system"] == "Now answer in French."
    assert imported.warnings == ["messages[1]: a system message in the middle of the conversation; the Messages "
                                 "API keeps the system prompt outside the messages, so it joins meta.system"]


# -- the course's recorded traces ------------------------------------------------------------------------------------

def test_the_course_trace_keeps_usage_timing_and_unknown_blocks():
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    imported = import_bytes(dumps(raw), "s01.json")
    trace = imported.trace
    assert imported.format == "course-trace"
    assert trace.meta["task"] == raw["prompt"] and trace.meta["model"] == "MiniMax-M2.5"
    assert trace.meta["course_trace"]["total_cycles"] == 4
    calls = [s for s in trace.steps if s.stage == "call_model"]
    assert [c.detail["duration_ms"] for c in calls] == [c["elapsed_ms"] for c in raw["cycles"]]
    assert [c.detail["cycle"] for c in calls] == [1, 2, 3, 4]
    assert [c.detail["response"] for c in calls] == [c["response"] for c in raw["cycles"]]
    assert [c.detail["response"]["usage"] for c in calls] == [c["response"]["usage"] for c in raw["cycles"]]
    assert (trace.steps[-1].input_tokens, trace.steps[-1].output_tokens) == (2831, 551)
    # The recorder's unknown block is shown as recorded; the history holds what the next request really sent.
    assert calls[0].detail["response"]["content"][0]["type"] == "unknown"
    assert calls[0].detail["response"]["content"][0]["raw"].startswith("ThinkingBlock(")
    assert trace.messages[1]["content"][0]["type"] == "thinking"
    assert trace.messages == raw["cycles"][3]["request"]["messages"] + [
        {"role": "assistant", "content": raw["cycles"][3]["response"]["content"]}]
    assert trace.messages[-1]["content"][0]["type"] == "unknown"  # the last response: no request after it
    # Every request the trace shows is the one the course sent.
    for call, cycle in zip(calls, raw["cycles"]):
        assert trace.request_at(call.index) == cycle["request"]
    runs = [s for s in trace.steps if s.stage == "run_tool"]
    assert [r.detail["tool_execution"] for r in runs] == [c["tool_executions"][0] for c in raw["cycles"][:3]]
    assert [s.turn_count for s in trace.steps if s.stage == "write_back"] == [2, 3, 4]
    assert "kept blocks of type 'unknown', which Loopscope shows raw ×1: messages.7" in imported.warnings
    assert "cycle 1: the response as recorded (1 block recorded as type 'unknown') differs from the assistant " \
           "message the next request sent; call_model shows the response, the history (messages.1) what was sent" \
           in imported.warnings
    assert "[17] turn 4 · 2 · call the model: stop_reason=end_turn · content unknown, text · tokens in 1330 " \
           "out 155" == describe(trace, 16)


def test_a_course_trace_without_its_requests_is_rebuilt_from_responses_and_tool_executions():
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    for cycle in raw["cycles"]:
        del cycle["request"]["messages"]
    raw["total_output_tokens"] = 1
    imported = import_bytes(dumps(raw))
    trace = imported.trace
    assert [m["role"] for m in trace.messages] == ["user", "assistant"] * 4
    assert trace.messages[0] == {"role": "user", "content": raw["prompt"]}
    assert trace.messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "call_function_hf59q12b5vnc_1",
                                               "content": raw["cycles"][0]["tool_executions"][0]["output"]}
    assert rules.check(trace.messages, as_request=False) == []
    assert "total_output_tokens says 1, the cycles' usage adds up to 551" in imported.warnings


def test_a_course_cycle_of_two_tools_is_written_back_in_the_order_the_model_asked():
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    for cycle in raw["cycles"]:
        del cycle["request"]["messages"]  # rebuilt from the responses and the tool executions
    first = raw["cycles"][0]
    use = next(b for b in first["response"]["content"] if b["type"] == "tool_use")
    second = {"type": "tool_use", "id": "call_second", "name": "bash", "input": {"command": "wc -l hello.py"}}
    first["response"]["content"].append(second)
    first["tool_executions"].append({"name": "bash", "input": second["input"], "output": "3 hello.py"})
    trace = import_bytes(dumps(raw)).trace
    written = trace.messages[2]["content"]
    assert [r["tool_use_id"] for r in written] == [use["id"], "call_second"]
    assert [r["content"] for r in written] == [first["tool_executions"][0]["output"], "3 hello.py"]
    ran = [s.detail["tool_use_id"] for s in trace.steps if s.stage == "run_tool"][:2]
    assert ran == [use["id"], "call_second"]
    assert rules.check(trace.messages, as_request=False) == []

# -- Loopscope's own ----------------------------------------------------------------------------------------------------

def test_a_loopscope_transcript_comes_back_as_it_was(tmp_path):
    run = start(scenario="list-files")
    run.run_to_end()
    imported = import_bytes(transcript.dumps(run.trace).encode(), "run.json")
    assert (imported.format, imported.warnings) == ("loopscope", [])
    assert imported.trace.messages == run.trace.messages
    assert [s.to_dict() for s in imported.trace.steps] == json.loads(json.dumps([s.to_dict() for s in run.trace.steps]))


def test_messages_past_the_last_step_are_derived_or_said_never_dropped(shared):
    run = start(scenario="two-tools", workspace=shared)
    run.run_to_end()
    whole = json.loads(transcript.dumps(run.trace))
    cut = dict(whole, steps=whole["steps"][:6])  # the two tools ran; the write-back and the answer have no step
    imported = import_bytes(json.dumps(cut).encode(), "cut.json")
    assert imported.warnings == ["the last 2 messages (messages.2 to messages.3) had no step in the file: steps 7 "
                                 "to 10 were derived from the history by the chapter's rules"]
    assert [(s.stage, s.turn_count, s.n_messages, s.ended) for s in imported.trace.steps] == \
           [(s.stage, s.turn_count, s.n_messages, s.ended) for s in run.trace.steps]
    assert imported.trace.steps[6].detail == {"results": 2}
    # Steps the chapter's rules would not give: nothing is made up, the warning says where the replay ends.
    odd = dict(whole, steps=[dict(whole["steps"][0], stage="decide")])
    imported = import_bytes(json.dumps(odd).encode(), "odd.json")
    assert len(imported.trace) == 1 and imported.warnings == [
        "the last 3 messages (messages.1 to messages.3) are in the file, but no step reaches them and none could be "
        "derived: the replay ends before them"]


def test_a_saved_run_journal_imports_as_the_run(tmp_path):
    run = start(scenario="two-tools")
    run.run_to_end()
    store, owner = RunsStore(tmp_path / "runs"), owner_key("browser:import-test")
    store.save(owner, "r1", run.trace, writer="tab")
    exported = "\n".join(store.journal(owner, "r1")) + "\n"  # what `python -m loop runs export r1` writes
    imported = import_bytes(exported.encode(), "r1.jsonl")
    assert imported.format == "loopscope-journal"
    assert imported.trace.messages == run.trace.messages
    assert [(s.stage, s.turn_count, s.n_messages) for s in imported.trace.steps] == \
           [(s.stage, s.turn_count, s.n_messages) for s in run.trace.steps]
