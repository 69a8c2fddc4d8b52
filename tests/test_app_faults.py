"""Faults from the model's side, on the Step through page with a real model chosen in the sidebar.

The model is tests/fake_server.py on 127.0.0.1, told to fail. For each fault the
page says what happened and what to do, the trace and the messages are exactly
as they were before the failed stage, and Retry takes the step once the server
has recovered. Retries follow the SDK's rules; a server's `retry-after-ms: 10`
keeps them fast here.
"""

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import app, choose_server, click

FAST = {"retry-after-ms": "10"}  # the SDK waits what the server asks: 10 ms instead of its back-off
NO_ID = {"id": "msg_no_id", "type": "message", "role": "assistant", "model": "claude-test",
         "content": [{"type": "text", "text": "Let me look."},
                     {"type": "tool_use", "name": "bash", "input": {"command": "ls"}}],
         "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 5}}


pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def on_fake_server(url: str) -> AppTest:
    """The app with the sidebar set to a real model on `url`, and stage 1 taken (it runs locally)."""
    at = app()
    choose_server(at, url, "sk-ant-fault-test-key")  # no approval gate: these tests are about the model's errors
    return click(at, "live-step")


def snapshot(run) -> str:
    return json.dumps({"steps": [s.to_dict() for s in run.trace.steps], "messages": run.trace.messages,
                       "cursor": run.trace.cursor, "stage": run.state.stage}, default=str)


def page_text(at: AppTest) -> str:
    return " ".join(str(e.proto) for e in at.main) + " ".join(str(e.proto) for e in at.sidebar)


# (fault, how fake_api.fail is told, how the run's client is set, what the message says)
FAULTS = [
    pytest.param(401, {}, {}, "The API key was refused (401 authentication error). Check the key, then retry.",
                 id="401"),
    pytest.param(403, {}, {}, "This key may not use this model or feature (403 permission error). Check the key's "
                 "permissions, or choose another model.", id="403"),
    pytest.param(404, {"body": {"type": "error", "error": {"type": "not_found_error",
                                                            "message": "model: claude-test"}}}, {},
                 "Not found (404): check the model id and the base URL. model: claude-test", id="404-unknown-model"),
    pytest.param(429, {"times": 3, "headers": {"retry-after-ms": "10"}}, {},
                 "Rate limited (429): too many requests. Wait a little, then retry. The server asked to wait "
                 "0.01 s (retry-after).", id="429-retry-after"),
    pytest.param(500, {"times": 3, "headers": FAST}, {}, "The API had an internal error (500). Retry in a moment.",
                 id="500"),
    pytest.param(529, {"times": 3, "headers": FAST}, {}, "The API is overloaded (529). Retry in a moment.",
                 id="529"),
    pytest.param("timeout", {"delay": 1.5}, {"timeout": 0.3, "max_retries": 0},
                 "The model did not answer in time (timeout). Try again, or raise the timeout.", id="read-timeout"),
    pytest.param("drop", {}, {"stream": True}, "the stream ended before message_stop, so the answer is incomplete (the connection was cut",
                 id="dropped-mid-stream"),
    pytest.param("not-json", {}, {}, "The server's answer is not a valid Messages API response: the body is not "
                 "JSON", id="not-json"),
    pytest.param(200, {"body": NO_ID}, {}, "The response's content.1 is a tool_use block without id, so no "
                 "tool_result could answer it; the step was not taken. Retry, or try another model.",
                 id="tool_use-without-id"),
]


@pytest.mark.parametrize("fault, how, client, says", FAULTS)
def test_a_fault_says_what_to_do_keeps_the_trace_and_retry_works_after_recovery(fake_api, fault, how, client, says):
    at = on_fake_server(fake_api.url)
    run = at.session_state["live-run"]
    if client.pop("stream", False):
        run.model.config.stream = True
    if client:
        run.model.client = run.model.client.with_options(**client)
    before = snapshot(run)
    fake_api.fail(fault, **how)
    click(at, "live-step")  # stage 2 calls the model, which fails

    assert snapshot(run) == before  # not a step, not a message more
    assert at.error, "no error shown"
    message = at.error[0].value
    assert message.startswith("**2 · call the model failed.**")
    assert says in message
    assert "The trace is unchanged: nothing was added. **Retry** repeats this stage." in message
    assert "sk-ant-fault-test-key" not in page_text(at)
    if fault in (429, 500, 529):  # retried by the SDK, and the page says how often
        assert len(fake_api.requests) == 3
        assert "The call was tried 3 times (the SDK retries at most 2 times)." in message
    elif fault != "timeout":
        assert len(fake_api.requests) == 1  # 4xx (but 429) are not retried; a bad answer is not either

    fake_api.recover()
    click(at, "live-retry")
    assert not at.error
    assert len(run.trace) == 2 and run.trace.steps[-1].stage == "call_model"
    assert run.trace.steps[-1].detail["response"]["stop_reason"] == "tool_use"
    assert at.button(key="live-step").disabled is False
    click(at, "live-to-end")
    assert run.done and run.state.ended == "end_turn"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_529s_then_success_show_the_attempts_and_the_step_records_the_retries(fake_api, stream):
    at = on_fake_server(fake_api.url)
    run = at.session_state["live-run"]
    run.model.config.stream = stream
    assert run.model.config.max_retries == 2
    fake_api.fail(529, times=2, headers=FAST)
    click(at, "live-step")
    assert not at.error  # the SDK's retries got through
    assert len(fake_api.requests) == 3 and fake_api.requests[-1].get("stream", False) is stream
    assert [h["x-stainless-retry-count"] for h in fake_api.headers] == ["0", "1", "2"]
    step = run.trace.steps[-1]
    assert step.stage == "call_model" and step.detail["retries"] == 2
    captions = [c.value for c in at.caption]
    assert any("2 attempt(s) retried by the SDK; the last call took 3 of at most 3 attempts and succeeded." in c
               for c in captions), captions

    # A call that needs no retry leaves no such line.
    for _ in range(3):
        click(at, "live-step")  # append, decide, run a tool: no model call
    assert not any("retried by the SDK" in c.value for c in at.caption)


def test_attempts_are_shown_while_the_sdk_retries():
    """The placeholder says "Attempt k of n" on each retry, as the SDK reports it (k counted from its header)."""
    from loop.engine.model import Model, ModelConfig
    from pages.views import attempts

    shown = []

    class Slot:
        def warning(self, text, **_):
            shown.append(text)

        def caption(self, text, **_):
            shown.append(text)

        def empty(self):
            pass

    class FakeRun:
        model = Model(ModelConfig(model="claude-test", api_key="sk-ant-x", base_url="http://127.0.0.1:9"))

    original = attempts.st.empty
    attempts.st.empty = lambda: Slot()
    try:
        with attempts.attempts_shown(FakeRun) as (seen, on_attempt):
            for k in (1, 2, 3):
                on_attempt(k, 3)
    finally:
        attempts.st.empty = original
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert shown[0].startswith("**Attempt 2 of 3.**") and shown[1].startswith("**Attempt 3 of 3.**")
    assert "2 attempt(s) retried by the SDK" in shown[2]
