"""The model over real HTTP: the real `anthropic` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import socket
import sys

import anthropic
import httpx2
import pytest

from loop import Model, ModelConfig, start
from loop.files import transcript
from loop.views.errors import explain
from loop.engine.model import MissingKey, Observer
from tests.fake_server import FakeAnthropic

CANARY = "sk-ant-CANARY-123"
TASK = [{"role": "user", "content": "What is the date, and how much disk does the workspace use?"}]


@pytest.fixture(scope="module")
def shared_api():
    with FakeAnthropic() as server:
        report = server.server.handle_error

        def handle_error(request, client_address):
            # The timeout test's answer arrives after the client has gone: expected, not news.
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                report(request, client_address)

        server.server.handle_error = handle_error
        yield server


@pytest.fixture
def fake_api(shared_api):
    """conftest's fake server, started once for this module (stopping one takes half a second)."""
    shared_api.recover()
    shared_api.requests.clear()
    shared_api.headers.clear()
    yield shared_api
    shared_api.recover()


def config(fake_api, **kw) -> ModelConfig:
    return ModelConfig(**{"model": "claude-test", "api_key": "sk-test", "base_url": fake_api.url, "max_retries": 0,
                          **kw})


def test_tool_use_and_tool_result_round_trip(fake_api, tmp_path):
    run = start(scenario="list-files", tool_timeout=10, config=config(fake_api))
    run.run_to_end()
    assert run.state.ended == "end_turn"
    first, second = fake_api.requests
    assert first["model"] == "claude-test" and first["messages"] == [{"role": "user", "content": run.task}]
    asked = run.trace.steps[1].detail["response"]["content"][-1]
    assert asked["type"] == "tool_use"
    # The second request carries the assistant turn itself, then the real output as its tool_result.
    assert second["messages"][1] == {"role": "assistant", "content": run.trace.steps[1].detail["response"]["content"]}
    (answer,) = second["messages"][2]["content"]
    assert answer["tool_use_id"] == asked["id"] and answer["type"] == "tool_result"
    assert "README.txt" in answer["content"]
    assert "README.txt" in run.state.messages[-1]["content"][0]["text"]
    assert fake_api.headers[0]["authorization"] == "Bearer sk-test"


def test_streaming_sends_text_as_it_comes_and_ends_with_the_same_response(fake_api):
    plain = Model(config(fake_api)).create(messages=TASK, tools=[])
    model = Model(config(fake_api, stream=True))
    chunks: list[str] = []
    streamed = model.create(messages=TASK, tools=[], observer=Observer(on_text=chunks.append))
    assert fake_api.requests[1]["stream"] is True and "stream" not in fake_api.requests[0]
    assert "".join(chunks) == streamed.response["content"][0]["text"] == "I'll ask for both at once."
    # Same answer; the SDK's stream accumulator may add keys, but only empty ones.
    assert {k: streamed.response[k] for k in plain.response} == plain.response
    assert all(streamed.response[k] is None for k in set(streamed.response) - set(plain.response))
    assert streamed.request == dict(plain.request, stream=True)


def test_a_long_streamed_answer_arrives_in_several_chunks(fake_api, tmp_path):
    texts: list[str] = []
    run = start(scenario="max-tokens", tool_timeout=10,
                config=config(fake_api, stream=True, max_tokens=120))  # a real model keeps its own budget
    run.run_to_end(observer=Observer(on_text=texts.append))
    final = run.state.messages[-1]["content"][0]["text"]
    assert run.state.ended == "max_tokens"
    assert len(texts) > 5 and "".join(texts).endswith(final)


STATUSES = [
    (400, anthropic.BadRequestError, "invalid (400)"),
    (401, anthropic.AuthenticationError, "key was refused (401"),
    (403, anthropic.PermissionDeniedError, "(403 permission error)"),
    (404, anthropic.NotFoundError, "check the model id and the base URL"),
    (429, anthropic.RateLimitError, "Rate limited (429)"),
    (500, anthropic.InternalServerError, "internal error (500)"),
    (529, anthropic.OverloadedError, "overloaded (529)"),
]


@pytest.mark.parametrize("status, error, words", STATUSES, ids=[str(s[0]) for s in STATUSES])
def test_each_error_status_raises_the_sdks_class_with_a_clear_explanation(fake_api, tmp_path, status, error, words):
    fake_api.fail(status, headers={"retry-after-ms": "1"}, body={
        "type": "error", "error": {"type": "x", "message": f"the server's own words {status}"}})
    run = start(scenario="list-files", tool_timeout=10, config=config(fake_api))
    run.step()
    with pytest.raises(error) as caught:
        run.step()
    assert caught.value.status_code == status
    text = explain(caught.value)
    assert words in text and f"the server's own words {status}" in text
    assert len(run.trace) == 1 and run.next_stage() == "call_model"


def test_connection_refused(tmp_path):
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = Model(ModelConfig(model="claude-test", api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0))
    with pytest.raises(anthropic.APIConnectionError) as caught:
        model.create(messages=TASK, tools=[])
    assert not isinstance(caught.value, anthropic.APITimeoutError)
    assert "Could not reach the model's server" in explain(caught.value)


def test_timeout(fake_api):
    fake_api.fail("timeout", delay=2)
    model = Model(config(fake_api, timeout=0.3))
    with pytest.raises(anthropic.APITimeoutError) as caught:
        model.create(messages=TASK, tools=[])
    assert "did not answer in time" in explain(caught.value)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_retries_after_500s_are_counted(fake_api, stream):
    fake_api.fail(500, times=2, headers={"retry-after-ms": "1"})
    reply = Model(config(fake_api, max_retries=2, stream=stream)).create(messages=TASK, tools=[])
    assert reply.retries == 2 and reply.response["stop_reason"] == "tool_use"
    assert len(fake_api.requests) == 3


@pytest.mark.parametrize("body, words", [
    (b"[]", "Input should be a valid dictionary"),
    (b"5", "Input should be a valid dictionary"),
    (b'{"max_tokens": 10, "messages": [{"role": "user", "content": [5]}]}',
     "messages.0.content.0: Input should be a valid dictionary"),
    (b'{"max_tokens": 10, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}',
     "messages.0.content.0.text: Input should be a valid string"),
    (b'{"max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]}', "max_tokens: Input should be"),
    (b"not json", "the request body is not JSON"),
])
def test_the_scripted_server_answers_a_malformed_body_with_a_400(body, words):
    from loop.engine.server import serve

    server = serve(0)
    try:
        host, port = server.server_address[:2]
        reply = httpx2.post(f"http://{host}:{port}/v1/messages", content=body, headers={"content-type": "application/json"})
    finally:
        server.shutdown()
        server.server_close()
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and words in error["message"]


@pytest.mark.parametrize("fault", ["drop", "not-json"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_that_is_not_a_message_is_explained(fake_api, tmp_path, fault, stream):
    fake_api.fail(fault)
    run = start(scenario="list-files", tool_timeout=10, config=config(fake_api, stream=stream,
                                                                                          timeout=5))
    run.step()
    with pytest.raises(anthropic.APIResponseValidationError) as caught:
        run.step()
    assert explain(caught.value).startswith("The server's answer is not a valid Messages API response")
    assert len(run.trace) == 1 and len(run.state.messages) == 1  # nothing half-done
    run.step()  # the fault is over: the same step now works
    assert run.trace.steps[-1].stage == "call_model"


def test_the_api_key_is_never_saved(fake_api, tmp_path):
    run = start(scenario="hello-py", tool_timeout=10,
                config=ModelConfig(model="claude-test", api_key=CANARY, base_url=fake_api.url, max_retries=0))
    run.run_to_end()
    assert all(h["authorization"] == f"Bearer {CANARY}" for h in fake_api.headers)  # it was really used
    out = tmp_path / "t.json"
    transcript.save(run.trace, out)
    text = out.read_text()
    assert CANARY not in text and "CANARY" not in text
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()
    assert CANARY not in repr(run.model.config)
    assert CANARY not in str(fake_api.requests)  # nor in any request body


def test_the_api_key_is_not_saved_after_an_error_either(fake_api, tmp_path):
    fake_api.fail(401, body={"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    run = start(scenario="list-files", tool_timeout=10,
                config=ModelConfig(model="claude-test", api_key=CANARY, base_url=fake_api.url, max_retries=0))
    run.step()
    with pytest.raises(anthropic.AuthenticationError) as caught:
        run.step()
    assert CANARY not in explain(caught.value) and CANARY not in str(caught.value)
    assert CANARY not in transcript.dumps(run.trace)


def test_a_real_model_without_a_key_says_what_to_do(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(MissingKey) as caught:
        start(scenario="list-files", config=ModelConfig(model="claude-test"))
    assert "ANTHROPIC_API_KEY" in explain(caught.value) and "scripted model" in explain(caught.value)


def test_the_key_and_base_url_come_from_the_environment(fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    reply = Model(ModelConfig(model="claude-env", max_retries=0)).create(messages=TASK, tools=[])
    assert reply.request["model"] == "claude-env"
    assert fake_api.headers[0]["authorization"] == f"Bearer {CANARY}"


def test_a_long_retry_after_fails_at_once_instead_of_hanging_the_page(fake_api):
    fake_api.fail(429, headers={"retry-after": "3600"})
    model = Model(config(fake_api, max_retries=2))
    with pytest.raises(anthropic.RateLimitError) as raised:
        model.create(messages=TASK, tools=[])
    assert len(fake_api.requests) == 1  # no retry was slept for
    assert "3600 s" in explain(raised.value)


def test_a_short_retry_after_is_still_retried_by_the_sdk(fake_api):
    fake_api.fail(529, headers={"retry-after-ms": "10"})
    reply = Model(config(fake_api, max_retries=2)).create(messages=TASK, tools=[])
    assert reply.retries == 1 and len(fake_api.requests) == 2
