"""The offline model speaks OpenAI Chat Completions too (loop/engine/chat.py, wire.py): the real `openai` SDK over
HTTP gets tool_calls, OpenAI's own 400 words for a broken history, a stream; and the model uses the tools a
request offers, reading the person's task rather than a harness's wrapping."""

import openai
import pytest

from loop.engine import rules, server
from loop.engine.scenarios import SCENARIOS, first_text
from loop.engine.scripted import respond

BASH = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


@pytest.fixture(scope="module")
def client():
    running = server.serve()
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{running.server_address[1]}/v1", api_key="placeholder",
                        max_retries=0)
    running.shutdown()
    running.server_close()


def asked(client, messages):
    return client.chat.completions.create(model="any", messages=messages, tools=BASH, max_tokens=8000)


def test_tool_calls_go_back_as_tool_messages_and_a_missing_one_gets_openais_words(client):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": SCENARIOS["two-tools"].task}]
    first = asked(client, messages)
    said = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and len(said.tool_calls) == 2
    assert all(call.id.startswith("call_") and call.function.name == "bash" for call in said.tool_calls)
    messages.append({"role": "assistant", "content": said.content, "tool_calls": said.tool_calls})
    with pytest.raises(openai.BadRequestError) as refused:
        asked(client, messages + [{"role": "tool", "tool_call_id": said.tool_calls[0].id, "content": "x"}])
    assert refused.value.message.endswith(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
        f"The following tool_call_ids did not have response messages: {said.tool_calls[1].id}")
    messages += [{"role": "tool", "tool_call_id": c.id, "content": out}
                 for c, out in zip(said.tool_calls, ["2026-01-02 03:04 UTC", "12K\t."])]
    stream = client.chat.completions.create(model="any", messages=messages, tools=BASH, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "the date is 2026-01-02 03:04 UTC" in text and "the workspace uses 12K" in text


@pytest.mark.parametrize("messages, words", [
    ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_x", "content": "x"}],
     rules.CHAT_NOT_A_RESPONSE),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_b", "content": "x"}],
     rules.CHAT_UNKNOWN_ID.format(id="call_b")),
])
def test_each_chat_rule_is_refused_in_openais_words(client, messages, words):
    with pytest.raises(openai.BadRequestError) as refused:
        asked(client, messages)
    assert words in refused.value.message


def test_the_offline_model_uses_the_tools_offered_and_says_why_when_none_fits():
    task = {"role": "user", "content": SCENARIOS["list-files"].task}
    claude_code = [{"name": "Bash", "input_schema": {"type": "object", "properties": {
        "command": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["command"]}},
        {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
    _, answer = respond({"max_tokens": 100, "messages": [task], "tools": claude_code})
    assert [(b["name"], b["input"]) for b in answer["content"] if b["type"] == "tool_use"] == [
        ("Bash", {"command": "ls -la"})]
    _, answer = respond({"max_tokens": 100, "messages": [task], "tools": [claude_code[1]]})
    assert answer["stop_reason"] == "end_turn"
    assert "None of the tools this request offers runs a command, so I cannot run `ls -la`" in \
        answer["content"][0]["text"] and "`Read`" in answer["content"][0]["text"]


def test_the_task_is_the_persons_words_not_the_harness_wrapping():
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nWhoami and the user's environment: ...\n</system-reminder>"},
        {"type": "text", "text": "List the files in this folder"}]},
        {"role": "system", "content": "env block"}]
    assert first_text(messages) == "List the files in this folder"
    _, answer = respond({"max_tokens": 100, "messages": messages[:1]})
    assert [b["input"]["command"] for b in answer["content"] if b["type"] == "tool_use"] == ["ls -la"]
