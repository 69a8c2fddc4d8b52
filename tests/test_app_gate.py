"""The approval gate, with a real model (the fake Anthropic server): the command is shown before it runs,
Deny writes the "denied by the user" is_error tool_result back, and the next model call is valid."""

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import app, click, slider
from tests.tables import history_text, note_text


pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def on_server(url: str) -> AppTest:
    at = app()
    at.selectbox(key="set-scenario").set_value("list-files")
    at.radio(key="set-model").set_value("anthropic").run()
    assert at.toggle(key="set-approve").value  # on by default with a real model
    at.text_input(key="set-model-id").set_value("claude-test")
    at.text_input(key="set-api-key").set_value("sk-test-123")
    at.text_input(key="set-base-url").set_value(url)
    at.button(key="new-run").click().run()
    assert not at.exception, at.exception
    return at


def test_deny_writes_back_an_error_and_the_loop_goes_on_without_a_400(fake_api):
    at = on_server(fake_api.url)
    run = at.session_state["live-run"]
    click(at, "live-to-end")  # stops before the tool, waiting for approval
    assert [s.stage for s in run.trace.steps] == ["user_request", "call_model", "append_assistant", "decide"]
    assert "ls -la" in [c.value for c in at.code]  # the exact command
    assert at.button(key="live-step").disabled and at.button(key="live-to-end").disabled
    assert "Stopped before a tool" in at.status[0].label

    click(at, "live-deny")
    result = run.trace.steps[-1].detail["tool_result"]
    assert result["is_error"] is True and "denied by the user" in result["content"]
    assert not [b for b in at.button if b.key == "live-deny"]
    assert "is_error" in history_text(at)  # the pending tool_result is drawn as an error

    click(at, "live-to-end")
    assert not at.error, at.error[0].value
    assert run.state.ended == "end_turn" and len(fake_api.requests) == 2
    sent = fake_api.requests[-1]["messages"]
    assert sent[-1]["content"][0]["is_error"] is True  # the second call carried the denial, and was accepted
    assert "ls` failed" in run.trace.messages[-1]["content"][0]["text"]

    # At the call that reads the denial, the page points at it: the model reads an error there.
    read = [i for i, step in enumerate(run.trace.steps) if step.stage == "call_model"][1]
    slider(at, "live").set_value(read + 1).run()
    assert "The model reads this error now." in history_text(at)
    assert "The model reads an error in this call" in note_text(at)


def test_run_really_runs_the_tool_and_the_toggle_turns_the_gate_off(fake_api):
    at = on_server(fake_api.url)
    run = at.session_state["live-run"]
    for _ in range(4):
        click(at, "live-step")
    assert at.button(key="live-approve")
    click(at, "live-approve")
    step = run.trace.steps[-1]
    assert step.stage == "run_tool" and not step.detail["is_error"] and "README.txt" in step.detail["output"]

    at.toggle(key="set-approve").set_value(False).run()
    click(at, "live-to-end")
    assert run.state.ended == "end_turn" and not [b for b in at.button if b.key == "live-approve"]


def test_the_offline_model_has_no_gate_by_default():
    at = app()
    assert at.toggle(key="set-approve").value is False
    click(at, "live-to-end")
    assert at.session_state["live-run"].done


def test_streaming_with_a_real_model_and_the_s02_toolset(fake_api):
    at = app()
    at.radio(key="set-model").set_value("anthropic").run()
    at.toggle(key="set-stream").set_value(True)
    at.toggle(key="set-approve").set_value(False)
    at.selectbox(key="set-toolset").set_value("s02")
    at.text_input(key="set-api-key").set_value("sk-test-123")
    at.text_input(key="set-base-url").set_value(fake_api.url)
    click(at, "new-run")
    run = at.session_state["live-run"]
    assert run.model.config.stream
    assert [s["name"] for s in run.trace.meta["tools"]] == ["bash", "read_file", "write_file", "edit_file"]
    click(at, "live-to-end")
    assert not at.error and run.state.ended == "end_turn"
    assert all(body.get("stream") is True for body in fake_api.requests)  # every call streamed
    assert [t["name"] for t in fake_api.requests[0]["tools"]] == ["bash", "read_file", "write_file", "edit_file"]
    final = run.trace.messages[-1]["content"][0]["text"]
    assert "Two tool calls in one turn" in final
    shown = history_text(at)  # the answer, rendered from the model's Markdown (a list: no "- " left)
    assert all(line.removeprefix("- ") in shown for line in final.splitlines())
