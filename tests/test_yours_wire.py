"""The recorder and the reading of the wire, outside any sandbox: a program's calls over a local HTTP endpoint are
answered and recorded (no header kept); OpenAI calls, a compaction, a command the program reported and a tool run
the model never asked for are read into the right steps; a lent key is counted before a real model is called."""

from __future__ import annotations

import anthropic
import openai

from loop.engine import server
from loop.engine.scenarios import SCENARIOS
from loop.yours import recording as rec
from loop.yours.reading import read
from loop.yours.recorder import Recorder
from loop.yours.recording import Exchange, Recording, ToolRun

BASH = {"name": "bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                         "required": ["command"]}}


def test_a_recorder_served_over_http_answers_both_apis_and_keeps_no_header():
    recording = Recording(source="", scenario="list-files", lang="en")
    running = server.serve(recorder=Recorder(recording))
    base = f"http://127.0.0.1:{running.server_address[1]}"
    try:
        task = SCENARIOS["list-files"].task
        first = anthropic.Anthropic(base_url=base, api_key="sk-secret-7f3a9", max_retries=0).messages.create(
            model="m", max_tokens=100, tools=[BASH], messages=[{"role": "user", "content": task}])
        chat = openai.OpenAI(base_url=base + "/v1", api_key="sk-secret-7f3a9", max_retries=0)
        second = chat.chat.completions.create(model="m", messages=[{"role": "user", "content": task}], tools=[
            {"type": "function", "function": {"name": "bash", "parameters": BASH["input_schema"]}}])
    finally:
        running.shutdown()
        running.server_close()
    assert first.stop_reason == "tool_use" and second.choices[0].finish_reason == "tool_calls"
    assert [e.dialect for e in recording.exchanges] == ["anthropic", "openai"]
    assert "7f3a9" not in repr(recording.to_dict())


def exchange(request: dict, response: dict, runs=()) -> Exchange:
    return Exchange(request=request, response=response, tool_runs=list(runs))


def asks(text: str, *commands: str, ids=("toolu_a", "toolu_b")) -> dict:
    return {"content": [{"type": "text", "text": text}] + [
        {"type": "tool_use", "id": i, "name": "bash", "input": {"command": c}} for i, c in zip(ids, commands)],
        "stop_reason": "tool_use" if commands else "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}


def test_a_reported_command_is_the_programs_and_a_run_nobody_asked_for_is_no_run_tool_step():
    task = {"role": "user", "content": "List the files."}
    first = asks("I'll look.", "ls -la")
    written = [task, {"role": "assistant", "content": first["content"]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "a.txt"}]}]
    recording = Recording(source="x", scenario="list-files", lang="en", exchanges=[
        exchange({"messages": [task], "max_tokens": 9}, first, [
            ToolRun("command", {"command": "clear"}, "", by=rec.BY_PROGRAM, line=3),
            ToolRun("command", {"command": "ls -la"}, "", by=rec.BY_PROGRAM, line=12)]),
        exchange({"messages": written, "max_tokens": 9}, asks("a.txt is there."))])
    trace = read(recording).trace
    runs = [s for s in trace.steps if s.stage == "run_tool"]
    assert [(s.detail.tool_use_id, s.detail["ran_by"], s.detail["reported"]["line"], s.detail.output)
            for s in runs] == [("toolu_a", "program", 12, "a.txt")]
    back = next(s for s in trace.steps if s.stage == "write_back")
    assert back.detail["also_ran"] == [{"name": "command", "input": {"command": "clear"}, "line": 3,
                                        "ran_by": "program"}]


def test_a_summary_call_and_a_shorter_history_are_a_compaction_and_an_openai_call_keeps_its_ids():
    task = {"role": "user", "content": "Read the parts."}
    first = asks("Part 1.", "cat part1.txt", ids=("toolu_a",))
    summary_call = {"messages": [{"role": "user", "content": "Summarize this conversation for continuity. ..."}],
                    "max_tokens": 2000}
    summarised = [{"role": "user", "content": "[Conversation compressed.]\n\nread part1"}]
    recording = Recording(source="x", scenario="compact", lang="en", exchanges=[
        exchange({"messages": [task], "max_tokens": 9, "tools": [BASH]}, first),
        exchange(summary_call, asks("read part1")),
        exchange({"messages": summarised, "max_tokens": 9, "tools": [BASH]}, asks("Done."))])
    stages = [s.stage for s in read(recording).trace.steps]
    assert stages[stages.index("write_back") + 1:stages.index("write_back") + 3] == ["summarize", "compact"]

    chat = Recording(source="x", scenario="list-files", lang="en", exchanges=[Exchange(
        request={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, dialect="openai",
        response={"id": "c", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [{"id": "call_9", "type": "function", "function": {
                "name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}}]},
        tool_runs=[ToolRun("command", {"command": "ls"}, "", by=rec.BY_PROGRAM, line=4)])])
    chat.outcome = rec.RETURNED
    trace = read(chat).trace
    assert [s.detail.tool_use_id for s in trace.steps if s.stage == "run_tool"] == ["call_9"]
    assert trace.meta["dialect"] == "openai"


def test_a_lent_key_is_counted_before_a_real_model_is_called():
    from loop.engine.keys import Allowance, Limits
    from loop.engine.model import ModelConfig
    from loop.yours.sandboxed import real_model

    heard = []

    class Listening(server.Handler):
        def do_POST(self):
            heard.append(self.path)
            super().do_POST()

    class Spent:
        def spend_call(self, owner, limits, now):
            return ("calls", limits.calls_an_hour)

        def spend_tokens(self, owner, tokens, now):
            raise AssertionError("nothing was sent")

    running = server.serve(handler=Listening)
    try:
        config = ModelConfig(model="claude-test", api_key="sk-lent", base_url=f"http://127.0.0.1:"
                             f"{running.server_address[1]}", allowance=Allowance(Spent(), "owner", Limits()))
        status, body = real_model(config)({"model": "m", "max_tokens": 9, "messages": [
            {"role": "user", "content": "hi"}]})
    finally:
        running.shutdown()
        running.server_close()
    assert status == 429 and "calls this hour" in body["error"]["message"] and heard == []
