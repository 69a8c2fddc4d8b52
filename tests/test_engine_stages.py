"""Each stage of the chapter's loop, each decision, and the trace's cursor.

Scenario runs use the scripted model behind the real SDK and real bash in a
tmp_path workspace; stop reasons the scripted model never gives (refusal,
pause_turn, ...) come from a tiny responder behind the same SDK client.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict

import anthropic
import httpx2
import pytest

from loop import Model, ModelConfig, Run, start
from loop.engine.rules import tool_uses
from loop.tools import ToolBox, ToolOutput
from loop.tools.base import Tool


# -- helpers ---------------------------------------------------------------

class Recorder(Tool):
    """A tool that remembers every run, so a test can tell whether it ran again."""

    name = "bash"
    description = "records its calls"
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

    def __init__(self):
        self.calls: list[dict] = []

    def run(self, tool_input, workspace):
        self.calls.append(tool_input)
        return ToolOutput(f"ran {tool_input['command']}")


def message(content: list, stop_reason: str) -> dict:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model", "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}


def use(n: int, command: str = "echo hi", name: str = "bash") -> dict:
    return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": {"command": command}}


def responder_model(answer) -> tuple[Model, list]:
    """A Model whose SDK client talks to `answer(body) -> response dict` in-process; also the bodies seen."""
    seen: list = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        return httpx2.Response(200, json=answer(body))

    client = anthropic.Anthropic(api_key="test-key", base_url="http://responder.invalid", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    return Model(ModelConfig(model="test-model", api_key="test-key", max_retries=0), client=client), seen


def scripted_run(scenario: str, tmp_path, **kw) -> Run:
    return start(scenario=scenario, tool_timeout=10, **kw)


def stages_of(run: Run) -> list[str]:
    return [s.stage for s in run.trace.steps]


# -- stage by stage ---------------------------------------------------------

def test_user_request_puts_the_task_into_messages(tmp_path):
    run = scripted_run("list-files", tmp_path)
    step = run.step()
    assert step.stage == "user_request"
    assert run.state.messages == [{"role": "user", "content": "List the files in the workspace."}]
    assert (step.turn_count, step.transition_reason, step.n_messages) == (1, None, 1)
    assert step.detail["task"] == "List the files in the workspace."


def test_call_model_sends_system_messages_tools_max_tokens_and_appends_nothing(tmp_path):
    run = scripted_run("list-files", tmp_path)
    run.step()
    step = run.step()
    assert step.stage == "call_model"
    request = step.detail["request"]
    assert request["system"] == run.model.config.system
    assert request["max_tokens"] == 8000
    assert [t["name"] for t in request["tools"]] == ["bash"]
    assert "messages" not in request  # kept once, in the trace's history
    response = step.detail["response"]
    assert response["stop_reason"] == "tool_use" == run.state.stop_reason
    assert step.n_messages == 1  # the response is not in messages until stage 3
    assert step.input_tokens == response["usage"]["input_tokens"] > 0
    assert step.output_tokens == response["usage"]["output_tokens"] > 0


def test_append_assistant_appends_the_response_itself_with_its_tool_use(tmp_path):
    run = scripted_run("list-files", tmp_path)
    for _ in range(3):
        step = run.step()
    assert step.stage == "append_assistant"
    response = run.trace.steps[1].detail["response"]
    assert run.state.messages[-1] == {"role": "assistant", "content": response["content"]}
    kinds = [b["type"] for b in run.state.messages[-1]["content"]]
    assert kinds == ["text", "tool_use"]  # not only the text: the next turn needs the tool_use
    assert step.n_messages == 2


def test_decide_goes_on_at_tool_use(tmp_path):
    run = scripted_run("list-files", tmp_path)
    for _ in range(4):
        step = run.step()
    assert step.stage == "decide"
    assert step.detail["continues"] is True
    assert "tool_use" in step.detail["why"]
    assert step.ended is None and run.next_stage() == "run_tool"


def test_end_turn_ends_with_transition_reason_none(tmp_path):
    run = scripted_run("list-files", tmp_path)
    run.run_to_end()
    last = run.trace.steps[-1]
    assert last.stage == "decide" and last.stop_reason == "end_turn"
    assert last.transition_reason is None and run.state.transition_reason is None
    assert last.ended == "end_turn" and last.detail["continues"] is False
    assert "end_turn" in last.detail["why"]
    assert run.done and run.next_stage() is None
    assert run.step() is None  # nothing left to execute
    assert len(run.trace) == 9


def test_max_tokens_ends_the_loop_and_says_so(tmp_path):
    run = scripted_run("max-tokens", tmp_path)
    run.run_to_end()
    last = run.trace.steps[-1]
    assert last.stage == "decide"
    assert run.state.ended == "max_tokens" and last.stop_reason == "max_tokens"
    assert last.transition_reason is None
    assert "max_tokens" in last.detail["why"] and "ends" in last.detail["why"]
    # It did not go on: the cut answer is the last message and no model call follows it.
    assert stages_of(run).count("call_model") == 2
    assert run.state.messages[-1]["role"] == "assistant"
    assert run.trace.steps[-3].detail["response"]["usage"]["output_tokens"] == 120  # the scenario's budget


@pytest.mark.parametrize("stop_reason, words", [
    ("refusal", "refused"),
    ("pause_turn", "paused"),
    ("stop_sequence", "stop sequence"),
    ("model_context_window_exceeded", "context window"),
])
def test_every_other_stop_reason_ends_the_loop(tmp_path, stop_reason, words):
    # Even with a tool_use block in it: only stop_reason "tool_use" means "run the tools".
    model, seen = responder_model(lambda body: message([{"type": "text", "text": "no"}, use(1)], stop_reason))
    tool = Recorder()
    run = Run("task", model, ToolBox([tool], tmp_path), max_turns=5)
    run.run_to_end()
    assert stages_of(run) == ["user_request", "call_model", "append_assistant", "decide"]
    assert run.state.ended == stop_reason and run.state.transition_reason is None
    assert words in run.trace.steps[-1].detail["why"]
    assert tool.calls == [] and len(seen) == 1


def test_tool_use_stop_reason_without_a_tool_use_block_ends(tmp_path):
    model, seen = responder_model(lambda body: message([{"type": "text", "text": "hm"}], "tool_use"))
    run = Run("task", model, ToolBox([Recorder()], tmp_path))
    run.run_to_end()
    assert run.state.ended == "tool_use without a tool_use block"
    assert stages_of(run)[-1] == "decide" and len(seen) == 1


def test_two_tools_run_in_order_then_one_write_back(tmp_path):
    run = scripted_run("two-tools", tmp_path)
    run.run_to_end()
    assert stages_of(run) == ["user_request", "call_model", "append_assistant", "decide", "run_tool", "run_tool",
                              "write_back", "call_model", "append_assistant", "decide"]
    uses = tool_uses(run.trace.steps[1].detail["response"])
    runs = [s for s in run.trace.steps if s.stage == "run_tool"]
    assert [s.detail["tool_use_id"] for s in runs] == [u["id"] for u in uses]
    assert [s.detail["input"] for s in runs] == [u["input"] for u in uses]
    # ONE user message answers both, in tool_use order, with what the tools printed.
    written = run.state.messages[2]
    assert written["role"] == "user"
    assert [b["type"] for b in written["content"]] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in written["content"]] == [u["id"] for u in uses]
    assert [b["content"] for b in written["content"]] == [s.detail["output"] for s in runs]
    assert runs[1].detail["output"].endswith(".")  # `du -sh .` really ran in the workspace
    assert run.trace.steps[6].detail["results"] == 2
    assert run.state.messages[3]["role"] == "assistant" and len(run.state.messages) == 4


def test_write_back_counts_the_turn_and_says_why_it_goes_on(tmp_path):
    run = scripted_run("list-files", tmp_path)
    while run.next_stage() != "write_back":
        run.step()
    before = run.trace.steps[-1]
    assert (before.turn_count, before.transition_reason) == (1, None)
    step = run.step()
    assert step.stage == "write_back"
    assert (step.turn_count, step.transition_reason) == (2, "tool_result")
    assert run.state.turn_count == 2 and run.state.transition_reason == "tool_result"
    assert run.state.messages[-1]["role"] == "user"
    assert run.state.messages[-1]["content"] == [run.trace.steps[-2].detail["tool_result"]]
    assert run.next_stage() == "call_model"


def test_a_failing_tool_gives_is_error_and_the_model_recovers(tmp_path):
    run = scripted_run("recover", tmp_path)
    run.run_to_end()
    first, second = [s for s in run.trace.steps if s.stage == "run_tool"]
    assert first.detail["is_error"] is True
    assert first.detail["tool_result"]["is_error"] is True
    assert "No such file" in first.detail["output"] and "exit status 1" in first.detail["output"]
    assert second.detail["is_error"] is False and "is_error" not in second.detail["tool_result"]
    assert second.detail["input"] == {"command": "find . -name notes.txt -type f"}  # it looks, it does not invent
    assert not (run.workspace / "notes.txt").exists()
    assert run.state.ended == "end_turn"
    assert "does not exist" in run.state.messages[-1]["content"][0]["text"]


def test_max_turns_stops_before_calling_again(tmp_path):
    calls = iter(range(1000))
    model, seen = responder_model(lambda body: message([use(next(calls))], "tool_use"))
    tool = Recorder()
    run = Run("keep going", model, ToolBox([tool], tmp_path), max_turns=2)
    run.run_to_end()
    assert run.state.ended == "max_turns"
    assert stages_of(run).count("call_model") == 2 == len(seen)
    assert len(tool.calls) == 2
    last = run.trace.steps[-1]
    assert last.stage == "stop" and last.ended == "max_turns"
    assert "max turns (2)" in last.detail["why"]
    assert run.state.turn_count == 3  # the third turn was never started


def test_an_unknown_tool_name_becomes_an_is_error_result(tmp_path):
    replies = iter([message([use(1, name="python")], "tool_use"), message([{"type": "text", "text": "ok"}], "end_turn")])
    model, seen = responder_model(lambda body: next(replies))
    run = Run("task", model, ToolBox([Recorder()], tmp_path))
    run.run_to_end()
    step = next(s for s in run.trace.steps if s.stage == "run_tool")
    assert step.detail["is_error"] is True
    assert "no tool named 'python'" in step.detail["output"] and "bash" in step.detail["output"]
    # The model is told so on the next call, as an is_error tool_result.
    sent = seen[1]["messages"][2]["content"][0]
    assert sent == {"type": "tool_result", "tool_use_id": "toolu_0001", "content": step.detail["output"],
                    "is_error": True}
    assert run.state.ended == "end_turn"


# -- the trace and its cursor ------------------------------------------------

def test_moving_the_cursor_never_executes(tmp_path):
    replies = iter([message([use(1), use(2)], "tool_use"), message([{"type": "text", "text": "done"}], "end_turn")])
    model, seen = responder_model(lambda body: next(replies))
    tool = Recorder()
    run = Run("task", model, ToolBox([tool], tmp_path))
    for _ in range(6):  # up to and including the second run_tool
        run.step()
    frozen = (len(run.trace), copy.deepcopy(run.state.messages), len(tool.calls), len(seen))
    assert run.trace.back() == 4
    assert run.trace.first() == 0
    assert run.trace.goto(3) == 3
    assert run.trace.goto(99) == 5 and run.trace.goto(-7) == 0
    run.trace.first()
    for expected in range(1, 6):  # Forward through recorded steps only moves the cursor
        assert run.step().index == expected
    assert (len(run.trace), run.state.messages, len(tool.calls), len(seen)) == frozen
    # At the end, Forward executes the next stage.
    step = run.step()
    assert step.stage == "write_back" and len(run.trace) == 7 and run.trace.cursor == 6


def test_an_api_error_at_call_model_changes_nothing_and_a_retry_succeeds(fake_api, tmp_path):
    run = start(scenario="list-files", tool_timeout=10,
                config=ModelConfig(model="claude-test", api_key="sk-test", base_url=fake_api.url, max_retries=0))
    for _ in range(6):  # user_request .. write_back of turn 1
        run.step()
    assert run.next_stage() == "call_model"
    state = asdict(run.state)
    steps = [s.to_dict() for s in run.trace.steps]
    messages = copy.deepcopy(run.trace.messages)
    cursor = run.trace.cursor
    fake_api.fail(500)
    with pytest.raises(anthropic.InternalServerError):
        run.step()
    assert asdict(run.state) == state
    assert [s.to_dict() for s in run.trace.steps] == steps
    assert run.trace.messages == messages and run.trace.cursor == cursor
    assert run.next_stage() == "call_model"
    fake_api.recover()
    step = run.step()
    assert step.stage == "call_model" and step.index == 6
    run.run_to_end()
    assert run.state.ended == "end_turn" and len(run.trace) == 9


def test_request_at_is_the_body_the_server_received(fake_api, tmp_path):
    run = start(scenario="hello-py", tool_timeout=10,
                config=ModelConfig(model="claude-test", api_key="sk-test", base_url=fake_api.url, max_retries=0))
    run.run_to_end()
    calls = [s.index for s in run.trace.steps if s.stage == "call_model"]
    assert len(calls) == len(fake_api.requests) == 3
    for index, received in zip(calls, fake_api.requests):
        assert json.loads(json.dumps(run.trace.request_at(index))) == received
    assert run.trace.request_at(0) is None  # only call_model steps sent anything


def test_messages_results_and_new_blocks_at_each_step(tmp_path):
    run = scripted_run("two-tools", tmp_path)
    run.run_to_end()
    trace = run.trace
    expected_new = {"user_request": 1, "call_model": 0, "append_assistant": 1, "decide": 0, "run_tool": 0,
                    "write_back": 1}
    seen = 0
    for i, step in enumerate(trace.steps):
        start_at, count = trace.new_blocks_at(i)
        assert (start_at, count) == (seen, expected_new[step.stage]), step.stage
        seen += count
        assert trace.messages_at(i) == run.state.messages[:seen]
    assert trace.messages_at(0) == [{"role": "user", "content": run.task}]
    assert trace.messages_at(3)[-1]["role"] == "assistant"
    r1, r2 = trace.steps[4].detail["tool_result"], trace.steps[5].detail["tool_result"]
    assert trace.results_at(3) == []
    assert trace.results_at(4) == [r1]
    assert trace.results_at(5) == [r1, r2]
    assert trace.results_at(6) == []  # written back: now they are in messages
    assert trace.messages_at(6)[-1]["content"] == [r1, r2]
    assert trace.messages_at(99) == [] and trace.messages_at(-1) == []
    assert trace.response_at(1)["stop_reason"] == "tool_use" and trace.response_at(2) is None


def test_a_run_records_its_settings_and_its_forks_keep_them(shared):
    from loop.engine.fork import fork_task, fork_tool_result
    from loop.engine.runner import Settings

    run = start(scenario="list-files", workspace=shared, tool_timeout=12, max_turns=7, toolset="s02")
    assert run.settings == Settings(max_turns=7, tool_timeout=12, toolset="s02")
    assert run.tools.tools["bash"].timeout == 12 and "write_file" in run.tools.tools
    run.run_to_end()
    tool_step = next(i for i, s in enumerate(run.trace.steps) if s.stage == "run_tool")
    for branch in (fork_tool_result(run, tool_step, "a.txt"), fork_task(run, "What Python version is installed?")):
        assert branch.settings == run.settings and branch.trace.meta["max_turns"] == 7


def test_a_fork_between_two_tools_keeps_the_result_already_collected(shared):
    from loop.engine.fork import fork_tool_result

    run = start(scenario="two-tools", workspace=shared)
    run.run_to_end()
    second = [i for i, s in enumerate(run.trace.steps) if s.stage == "run_tool"][1]
    branch = fork_tool_result(run, second, "12K\t.")
    branch.run_to_end()  # a result lost on the way would be a 400 at the next call
    assert branch.state.ended == "end_turn"
    written = branch.trace.messages[2]["content"]
    assert [b["content"] for b in written] == [run.trace.messages[2]["content"][0]["content"], "12K\t."]
