"""Claude Code logs as real sessions write them (2.0.76 to 2.1.x): nothing invented, nothing dropped.

The records are built in the shape Claude Code writes them (the record types and fields named in each test); the
2.1 log in tests/data/claude_code_2_1.jsonl has the shape of one Claude Code 2.1.328 wrote for a `claude -p` run.
"""

import hashlib
import json
from pathlib import Path

from loop.files import transcript
from loop.importers import import_bytes, import_files
from loop.views.narrate import describe
from loop.views.parts import sent_request
from tests.cli import loop_main

DATA = Path(__file__).resolve().parent / "data" / "logs"
ZERO = {"input_tokens": 0, "output_tokens": 0}


def at(n: int) -> str:
    return f"2025-12-01T10:{n // 60:02d}:{n % 60:02d}.000Z"


def record(kind: str, uuid: str, parent: str | None, content, n: int, *, model: str = "claude-sonnet-4-5",
           mid: str | None = None, stop: str | None = None, **extra) -> dict:
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"id": mid or f"msg_{uuid}", "type": "message", "role": "assistant", "model": model,
                   "content": content, "stop_reason": stop, "stop_sequence": None,
                   "usage": ZERO if model == "<synthetic>" else {"input_tokens": 900, "output_tokens": 30}}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
            "sessionId": "9e1f", "version": "2.0.76", "gitBranch": "main", "type": kind, "message": message,
            "uuid": uuid, "timestamp": at(n), **extra}


def use(id_: str, name: str = "Bash", **input_) -> list:
    return [{"type": "tool_use", "id": id_, "name": name, "input": input_ or {"command": "ls"}}]


def result(id_: str, output: str = "README.md", **extra) -> list:
    return [{"type": "tool_result", "tool_use_id": id_, "content": output, **extra}]


def text(words: str) -> list:
    return [{"type": "text", "text": words}]


def jsonl(records: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def stages(trace) -> list[str]:
    return [s.stage for s in trace.steps]


# -- 1. a message the model never got ------------------------------------------------------------------------------

def test_an_api_error_claude_code_wrote_is_a_failed_call_and_enters_no_request():
    records = [
        record("user", "u1", None, "Fix the failing test", 1),
        record("assistant", "a1", "u1", use("toolu_1", command="pytest -q"), 2, stop="tool_use"),
        record("user", "u2", "a1", result("toolu_1", "1 failed"), 3),
        record("assistant", "e1", "u2", text('API Error: 500 {"type":"error","error":{"type":"api_error"}}'), 4,
               model="<synthetic>", stop="stop_sequence", isApiErrorMessage=True),
        record("user", "u3", "e1", "continue", 5),
        record("assistant", "a2", "u3", text("I did not see your last message; the test fails on rounding."), 6,
               stop="end_turn"),
    ]
    trace = import_bytes(jsonl(records), "s.jsonl").trace
    assert not any("API Error" in json.dumps(m) for m in trace.messages)
    failed = next(s for s in trace.steps if s.stage == "retry")
    assert failed.detail.error["status"] == 500 and failed.detail.gave_up and failed.ended == "retries_exhausted"
    assert "the agent gave up on it" in describe(trace, failed.index)
    # The next call's request holds what the model got: no error text among the messages new since the last call.
    call = [s for s in trace.steps if s.stage == "call_model"][-1]
    sent = trace.request_at(call.index)["messages"]
    assert [m["content"] for m in sent[3:]] == ["continue"]
    new = [i for first, count in sent_request(trace, call.index)["new_since_last_call"] for i in range(first, first + count)]
    assert all("API Error" not in json.dumps(sent[i]) for i in new)
    assert stages(trace)[stages(trace).index("retry") + 1] == "user_request"


def test_claude_code_s_retries_in_progress_are_retry_steps_with_their_waits():
    records = [
        record("user", "u1", None, "hi", 1),
        {"type": "system", "subtype": "api_error", "level": "error", "uuid": "s1", "parentUuid": "u1",
         "isSidechain": False, "timestamp": at(2), "sessionId": "9e1f", "error": {"status": 529, "message": "Overloaded"},
         "retryInMs": 1200, "retryAttempt": 1, "maxRetries": 10},
        record("assistant", "a1", "s1", text("Hello."), 3, stop="end_turn"),
    ]
    trace = import_bytes(jsonl(records), "s.jsonl").trace
    retry = next(s for s in trace.steps if s.stage == "retry")
    assert (retry.detail.attempt, retry.detail.attempts, retry.detail.wait_s, retry.n_messages) == (1, 10, 1.2, 1)
    assert "wait 1.20 s" in describe(trace, retry.index)
    assert stages(trace)[-3:] == ["call_model", "append_assistant", "decide"] and trace.steps[-1].ended == "end_turn"


# -- 2. the compaction's own call ----------------------------------------------------------------------------------

def compacted_session() -> list[tuple[str, bytes]]:
    summary = "Summary: the user asked to fix the cart total; the rounding in cart.py was changed."
    main = [
        record("user", "u1", None, "Fix the cart total", 1),
        record("assistant", "a1", "u1", use("toolu_1", command="pytest"), 2, stop="tool_use"),
        record("user", "u2", "a1", result("toolu_1", "1 failed"), 3),
        record("assistant", "a2", "u2", text("Fixed."), 4, stop="end_turn"),
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "logicalParentUuid": "a2",
         "uuid": "b1", "isSidechain": False, "timestamp": at(20), "sessionId": "9e1f", "content": "Conversation compacted",
         "compactMetadata": {"trigger": "auto", "preTokens": 167094}},
        record("user", "c1", "b1", summary, 21, isCompactSummary=True, isVisibleInTranscriptOnly=True),
        record("user", "u3", "c1", "Now add a test", 22),
        record("assistant", "a3", "u3", text("Added."), 23, stop="end_turn"),
    ]
    call = [dict(record("user", "k1", None, "Your task is to create a detailed summary of the conversation so far.",
                        10), isSidechain=True, agentId="acompact-5d2e"),
            dict(record("assistant", "k2", "k1", text(summary), 11, stop="end_turn"), isSidechain=True,
                 agentId="acompact-5d2e")]
    return [("s.jsonl", jsonl(main)), ("s/subagents/agent-acompact-5d2e.jsonl", jsonl(call))]


def test_the_compaction_s_own_call_is_its_summarize_step_in_its_place():
    imported = import_files(compacted_session())
    trace = imported.trace
    assert [t.id for t in imported.threads] == ["main"]  # not a sub-agent
    at_compact = stages(trace).index("compact")
    summarize = trace.steps[at_compact - 1]
    assert summarize.stage == "summarize" and summarize.thread == "main"
    assert summarize.detail.summary.startswith("Summary: the user asked")
    assert summarize.detail.request["messages"][0]["content"].startswith("Your task is to create a detailed summary")
    compact = trace.steps[at_compact]
    assert compact.detail.summary.startswith("Summary: the user asked")
    assert compact.detail.tokens_before == 167094  # the log's own count (preTokens), not an estimate
    assert at_compact < len(trace.steps) - 3  # in its place, before the session's last steps


def test_the_sessions_list_counts_no_compaction_call_as_a_sub_agent(tmp_path):
    from loop.importers.sessions import sessions
    for name, data in compacted_session():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (listed,) = sessions(tmp_path)
    assert (listed.sub_agents, listed.compactions) == (0, 1)


# -- 3. Claude Code's notices --------------------------------------------------------------------------------------

def test_claude_code_s_notices_are_harness_steps_not_the_person_s_requests():
    notification = ("<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n<summary>Background "
                    "command \"npm test\" completed</summary>\n</task-notification>")
    records = [
        record("user", "u1", None, "Run the tests in the background", 1),
        record("assistant", "a1", "u1", use("toolu_1", command="npm test &"), 2, stop="tool_use"),
        record("user", "u2", "a1", result("toolu_1", "started b7"), 3),
        record("assistant", "a2", "u2", text("Started."), 4, stop="end_turn"),
        record("user", "n1", "a2", notification, 5),
        record("assistant", "a3", "n1", text("The tests passed."), 6, stop="end_turn"),
        record("user", "i1", "a3", text("[Request interrupted by user for tool use]"), 7),
        record("user", "l1", "i1", "<local-command-stdout>Set model to opus</local-command-stdout>", 8),
    ]
    trace = import_bytes(jsonl(records), "s.jsonl").trace
    assert [s.detail.task for s in trace.steps if s.stage == "user_request"] == ["Run the tests in the background"]
    harness = [s for s in trace.steps if s.stage == "harness"]
    assert len(harness) == 3 and all("notice" in s.detail.why for s in harness)
    # The notice starts the loop again: it is before turn 1 and the call it brings is turn 1, not turn 2.
    notice, call = harness[0], trace.steps[harness[0].index + 1]
    assert (notice.turn, call.stage, call.turn) == (0, "call_model", 1)  # 0: before turn 1


# -- 4. tool calls written as text ---------------------------------------------------------------------------------

def test_a_mini_swe_agent_trajectory_says_what_it_is():
    imported = import_bytes((DATA / "mini_swe_agent.traj.json").read_bytes(), "django-1234.traj.json")
    said = [w for w in imported.warnings if w.startswith("mini-swe-agent trajectory: its tool calls are written as text")]
    assert said and "```bash blocks" in said[0]
    assert imported.trace.meta["mini_swe_agent"]["info"]["exit_status"] == "Submitted"
    assert not any("request_options" in w for w in imported.warnings)


def test_tool_call_tags_in_text_are_said_too():
    messages = [{"role": "system", "content": "Call tools with <tool_call> tags."},
                {"role": "user", "content": "What is in /tmp?"},
                {"role": "assistant", "content": '<tool_call>\n{"name": "ls", "arguments": {"path": "/tmp"}}\n</tool_call>'},
                {"role": "user", "content": "<tool_response>a.txt</tool_response>"},
                {"role": "assistant", "content": "It holds a.txt."}]
    imported = import_bytes(json.dumps(messages).encode(), "chat.json")
    assert any(w.startswith("an agent's history: its tool calls are written as text in the messages (`<tool_call>` tags)")
               for w in imported.warnings)


# -- 5. a stop_reason filled in ------------------------------------------------------------------------------------

def test_a_stop_reason_the_log_did_not_record_is_said_to_be_inferred():
    records = [record("user", "u1", None, "hi", 1), record("assistant", "a1", "u1", text("Hello."), 2, stop=None)]
    trace = import_bytes(jsonl(records), "s.jsonl").trace
    call = next(s for s in trace.steps if s.stage == "call_model")
    assert call.detail.stop_reason_inferred
    assert describe(trace, call.index).endswith("stop_reason inferred from the content: the log recorded none")
    said = describe(trace, call.index, "ja")
    assert "stop_reason" in said and "the log recorded none" not in said  # said in the page's language


# -- 6. a sub-agent kept only in agent_progress records ------------------------------------------------------------

def test_a_sub_agent_kept_only_in_progress_records_is_read_from_them():
    task = [{"type": "tool_use", "id": "toolu_T", "name": "Task",
             "input": {"description": "Find the tests", "prompt": "Find where the cart is tested", "subagent_type": "Explore"}}]

    def progress(n: int, inner: dict) -> dict:
        return {"type": "progress", "parentUuid": "a1", "uuid": f"p{n}", "isSidechain": False, "sessionId": "9e1f",
                "timestamp": at(n), "toolUseID": f"agent_msg_{n}", "parentToolUseID": "toolu_T",
                "data": {"type": "agent_progress", "agentId": "f00d", "prompt": "Find where the cart is tested",
                         "message": inner}}

    inner = [
        {"type": "assistant", "uuid": "x1", "timestamp": at(3), "message": {
            "id": "msg_x1", "role": "assistant", "model": "claude-haiku-4-5", "content": use("toolu_g", "Grep", pattern="cart"),
            "stop_reason": "tool_use", "usage": {"input_tokens": 100, "output_tokens": 9}}},
        {"type": "user", "uuid": "x2", "timestamp": at(4), "message": {
            "role": "user", "content": result("toolu_g", "no such file", is_error=True)}},
        {"type": "assistant", "uuid": "x3", "timestamp": at(5), "message": {
            "id": "msg_x3", "role": "assistant", "model": "claude-haiku-4-5", "content": text("tests/test_cart.py"),
            "stop_reason": "end_turn", "usage": {"input_tokens": 120, "output_tokens": 7}}},
    ]
    records = [record("user", "u1", None, "Where is the cart tested?", 1),
               record("assistant", "a1", "u1", task, 2, stop="tool_use"),
               *[progress(3 + k, m) for k, m in enumerate(inner)],
               record("user", "u2", "p5", result("toolu_T", "tests/test_cart.py"), 7, toolUseResult={"agentId": "f00d"}),
               record("assistant", "a2", "u2", text("In tests/test_cart.py."), 8, stop="end_turn")]
    imported = import_bytes(jsonl(records), "s.jsonl")
    assert [t.id for t in imported.threads] == ["main", "agent-f00d"]
    trace = imported.trace
    sub = [s for s in trace.steps if s.thread == "agent-f00d"]
    assert sub[0].stage == "user_request" and sub[0].detail.task == "Find where the cart is tested"
    assert [s.stage for s in sub].count("call_model") == 2
    assert [s.detail.is_error for s in sub if s.stage == "run_tool"] == [True]
    parent_run = next(s for s in trace.steps if s.stage == "run_tool" and s.thread == "main")
    assert parent_run.detail.thread == "agent-f00d" and sub[0].index < parent_run.index  # inside its parent's run


# -- 7. prompts typed mid-turn -------------------------------------------------------------------------------------

def test_a_prompt_typed_while_the_model_worked_is_a_step_where_it_went_in():
    records = [
        {"type": "queue-operation", "operation": "enqueue", "timestamp": at(1), "sessionId": "9e1f",
         "content": "Fix the cart total"},
        {"type": "queue-operation", "operation": "dequeue", "timestamp": at(1), "sessionId": "9e1f"},
        record("user", "u1", None, "Fix the cart total", 2),
        record("assistant", "a1", "u1", use("toolu_1", command="pytest"), 3, stop="tool_use"),
        {"type": "queue-operation", "operation": "enqueue", "timestamp": at(4), "sessionId": "9e1f",
         "content": "and keep the old rounding for refunds"},
        record("user", "u2", "a1", result("toolu_1", "1 failed"), 5),
        {"type": "queue-operation", "operation": "remove", "timestamp": at(5), "sessionId": "9e1f"},
        record("assistant", "a2", "u2", text("Fixed, refunds keep the old rounding."), 6, stop="end_turn"),
    ]
    trace = import_bytes(jsonl(records), "s.jsonl").trace
    requests = [s for s in trace.steps if s.stage == "user_request"]
    assert [s.detail.task for s in requests] == ["Fix the cart total", "and keep the old rounding for refunds"]
    assert "queue-operation" in requests[1].detail.note
    # where it went in: after the write-back of that turn's results, before the call that read it
    assert stages(trace)[requests[1].index - 1: requests[1].index + 2] == ["write_back", "user_request", "call_model"]
    assert trace.messages[3] == {"role": "user", "content": "and keep the old rounding for refunds"}


# -- 8. two records on one line ------------------------------------------------------------------------------------

def test_two_records_glued_on_one_line_are_both_read():
    records = [record("user", "u1", None, "hi", 1), record("assistant", "a1", "u1", text("Hello."), 2, stop="end_turn"),
               record("user", "u2", "a1", "thanks", 3), record("assistant", "a2", "u2", text("Welcome."), 4,
                                                                stop="end_turn")]
    lines = [json.dumps(r) for r in records]
    data = (lines[0] + "\n" + lines[1] + lines[2] + "\n" + lines[3] + "\n").encode()
    imported = import_bytes(data, "s.jsonl")
    assert [m["role"] for m in imported.trace.messages] == ["user", "assistant", "user", "assistant"]
    assert "lines that hold two or more records written one after another; each record is read ×1: line 2" \
        in imported.warnings


# -- 9. what a file is, named --------------------------------------------------------------------------------------

def test_a_gemini_cli_session_is_named_not_read_as_another_format():
    from loop.importers import ImportFailed
    try:
        import_bytes((DATA / "gemini_cli_session.json").read_bytes(), "session-2025-10-18.json")
    except ImportFailed as exc:
        said = str(exc)
    assert said.startswith("session-2025-10-18.json: a Gemini CLI session") and "anthropic-request" not in said


def test_an_agent_tars_event_stream_is_named():
    from loop.importers import ImportFailed
    events = [{"id": "e1", "type": "user_message", "timestamp": 1760000000000, "content": "Open example.com"},
              {"id": "e2", "type": "assistant_message", "timestamp": 1760000001000, "content": "",
               "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "browser_navigate", "arguments": "{}"}}]},
              {"id": "e3", "type": "tool_call", "timestamp": 1760000001100, "toolCallId": "c1", "name": "browser_navigate"},
              {"id": "e4", "type": "tool_result", "timestamp": 1760000002000, "toolCallId": "c1", "content": "ok"}]
    try:
        import_bytes(json.dumps(events).encode(), "events.json")
    except ImportFailed as exc:
        said = str(exc)
    assert said.startswith("events.json: an Agent TARS event stream (events of type")


def test_a_web_export_of_a_log_s_records_is_read_as_the_log():
    records = [record("user", "u1", None, "hi", 1), record("assistant", "a1", "u1", text("Hello."), 2, stop="end_turn")]
    imported = import_bytes(json.dumps({"loglines": records}).encode(), "export.json")
    assert imported.format == "claude-code" and [m["role"] for m in imported.trace.messages] == ["user", "assistant"]


# -- 10. smaller ----------------------------------------------------------------------------------------------------

def test_stream_json_keeps_its_answer_and_cost_and_says_the_prompt_is_not_in_it(tmp_path):
    lines = [
        {"type": "system", "subtype": "init", "cwd": "/home/dev/shop", "session_id": "3b59", "model": "claude-opus-5-5",
         "tools": ["Task", "Bash"], "claude_code_version": "2.1.328", "permissionMode": "default"},
        {"type": "assistant", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                                          "content": use("toolu_1"), "stop_reason": None, "usage": {"input_tokens": 9, "output_tokens": 4}},
         "parent_tool_use_id": None, "session_id": "3b59", "uuid": "a1"},
        {"type": "user", "message": {"role": "user", "content": result("toolu_1")}, "parent_tool_use_id": None,
         "session_id": "3b59", "uuid": "u1"},
        {"type": "assistant", "message": {"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                                          "content": text("README.md only."), "stop_reason": "end_turn",
                                          "usage": {"input_tokens": 20, "output_tokens": 5}},
         "parent_tool_use_id": None, "session_id": "3b59", "uuid": "a2"},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 866, "num_turns": 2,
         "result": "README.md only.", "session_id": "3b59", "total_cost_usd": 0.1016},
    ]
    log, out = tmp_path / "stream.jsonl", tmp_path / "stream.json"
    log.write_bytes(jsonl(lines))
    trace = import_bytes(log.read_bytes(), "stream.jsonl").trace
    assert trace.meta["task"].startswith("(not recorded: Claude Code's stream-json output does not hold the prompt")
    assert trace.meta["result"]["result"] == "README.md only." and trace.meta["result"]["total_cost_usd"] == 0.1016
    assert trace.meta["cwd"] == "/home/dev/shop"


def test_a_header_never_says_none_and_a_control_character_in_a_label_stays_marked(tmp_path):
    log, out = tmp_path / "s.jsonl", tmp_path / "s.json"
    user = {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False, "sessionId": "9e1f",
            "message": {"role": "user", "content": "say\x1fhi"}}
    answer = {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": False, "sessionId": "9e1f",
              "message": {"role": "assistant", "content": text("hi")}}  # no model named anywhere
    log.write_bytes(jsonl([user, answer]))
    imported = import_bytes(log.read_bytes(), "s.jsonl")
    assert imported.threads[0].label == "main conversation: say\x1fhi"
    (done,) = loop_main(["import", log, "--out", out], env=None)
    (shown,) = loop_main(["replay", out], env=None)
    assert "model: (not recorded)" in shown.stdout and "None" not in shown.stdout
    assert "say\\x1fhi" in done.stdout  # shown as a mark, not dropped


# -- Claude Code 2.1: the request as it was sent ---------------------------------------------------------------------

def sha(message: dict) -> str:
    return hashlib.sha256(json.dumps(message, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def test_each_call_shows_the_request_claude_code_2_1_sent(tmp_path):
    data = (DATA / "claude_code_2_1.jsonl").read_bytes()
    imported = import_bytes(data, "session.jsonl")
    trace = imported.trace
    calls = [s for s in trace.steps if s.stage == "call_model"]
    first, second = calls
    # the system prompt and the tools as sent (api-request-shape), the call's own params (api-request)
    head = sent_request(trace, first.index)
    assert head["system"].startswith("You are a Claude agent, built on Anthropic's Claude Agent SDK.")
    assert head["tools"] == ["Bash"] and head["max_tokens"] == 32000
    assert first.detail.request["thinking"] == {"type": "adaptive", "display": "omitted"}
    # the messages as sent: the environment block as a system message, the date reminder before the prompt
    sent = first.detail.messages_sent
    assert [m["role"] for m in sent] == ["user", "system"]
    assert sent[0]["content"][1]["text"] == "List the files in this folder"
    assert sent[1]["content"][0]["text"].startswith("# Environment\nYou have been invoked")
    # the second request builds on the first (base, keep 2) and names the response and results by their hash:
    # the log writes no blob for a message it already holds
    assert [m["role"] for m in second.detail.messages_sent] == ["user", "system", "assistant", "user"]
    assert second.detail.messages_sent[2:] == trace.messages[1:3]
    lines = [json.loads(line) for line in data.splitlines()]
    assert [r["tail"] for r in lines if r["type"] == "api-request"][1] == [sha(trace.messages[1]), sha(trace.messages[2])]
    # the step's Raw JSON shows that body, as sent, at its call
    from loop.views.step import view
    shown = view(trace, first.index).call_request
    assert shown["messages"] == sent and shown["system"][0]["text"].startswith("You are a Claude agent")
    # what Claude Code attached to the first request, at that call
    assert [(a["type"], a["role"]) for a in first.detail.attachments] == [("environment", "system"), ("date", "user")]
    # the session's cost and last prompt kept; no such record passed over unsaid
    assert trace.meta["cost"]["totalCostUSD"] == 0.0213 and trace.meta["last_prompt"] == "List the files in this folder"
    assert not [w for w in imported.warnings if "api-request" in w or "cost-state" in w or "attachment" in w]
    # saved and read back, the request as sent is still there; the history breaks no rule
    out = tmp_path / "t.json"
    transcript.save(trace, out)
    assert transcript.load(out).steps[first.index].detail.messages_sent == sent
    (checked,) = loop_main(["check", out], env=None)
    assert checked.returncode == 0, checked.stdout


def test_a_request_whose_message_the_log_does_not_hold_is_marked_not_guessed():
    lines = [json.loads(line) for line in (DATA / "claude_code_2_1.jsonl").read_bytes().splitlines()]
    lines = [r for r in lines if not (r["type"] == "api-request-blob" and r["message"]["role"] == "system")]
    imported = import_bytes(jsonl(lines), "session.jsonl")
    first = next(s for s in imported.trace.steps if s.stage == "call_model")
    assert first.detail.messages_sent[1]["role"] == "unknown"
    assert "(not in the log:" in first.detail.messages_sent[1]["content"][0]["text"]
    assert any(w.startswith("requests whose messages the log does not hold in full") for w in imported.warnings)


def test_a_recorded_request_s_call_is_a_step_with_its_recorded_answer():
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is in /tmp?"}],
            "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]}
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
              "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                  "role": "assistant", "content": None,
                  "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}],
              "usage": {"prompt_tokens": 52, "completion_tokens": 14}}
    recorded = {"provider": "openai", "baseURL": "https://api.openai.com/v1", "request": body, "response": answer}
    trace = import_bytes(json.dumps(recorded).encode(), "call.json").trace
    call = next(s for s in trace.steps if s.stage == "call_model")
    assert call.detail.response["stop_reason"] == "tool_use" and not call.detail.stop_reason_inferred
    assert call.detail.response["usage"] == {"input_tokens": 52, "output_tokens": 14}
    assert trace.messages[-1]["content"][0]["name"] == "ls"
    alone = import_bytes(json.dumps(dict(recorded, response=None)).encode(), "call.json")
    assert "a recorded request with no response recorded beside it: the call it records is not a step" \
        in alone.warnings
