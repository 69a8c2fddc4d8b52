"""A failing model call on the Step through page: a clear message, the trace unchanged, Retry.

The model is a real Anthropic-compatible server on 127.0.0.1 (tests/fake_server.py),
chosen through the sidebar as a learner would.
"""

import json

import pytest

from tests.apptest import app, choose_server, click

pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def sent_key(headers: dict) -> str | None:
    """The key a request carried, in whichever header the SDK put it."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)


def test_401_shows_what_to_do_keeps_the_trace_and_retry_repeats_the_stage(fake_api):
    at = app()
    choose_server(at, fake_api.url)
    run = at.session_state["live-run"]
    assert run.model.config.base_url == fake_api.url and run.model.name == "claude-test"
    click(at, "live-step")  # stage 1 runs locally
    fake_api.fail(401, times=3)
    click(at, "live-step")  # stage 2 calls the model: refused
    assert len(run.trace) == 1 and len(run.trace.messages) == 1
    message = at.error[0].value
    assert "2 · call the model failed" in message
    assert "The API key was refused (401 authentication error). Check the key, then retry." in message
    assert "The trace is unchanged" in message
    assert "sk-test-123" not in message

    click(at, "live-retry")  # still refused: still one step
    assert len(run.trace) == 1 and at.error

    fake_api.recover()
    click(at, "live-retry")
    assert len(run.trace) == 2 and run.trace.steps[-1].stage == "call_model"
    assert not at.error
    assert not [b for b in at.button if b.key == "live-retry"]
    assert sent_key(fake_api.headers[-1]) == "sk-test-123"

    click(at, "live-to-end")
    assert run.state.ended == "end_turn"
    saved = json.dumps([run.trace.request_at(i) for i in range(len(run.trace)) if run.trace.request_at(i)])
    assert "sk-test-123" not in saved  # the key is in no request body the Raw view draws


def test_overloaded_during_run_to_end_keeps_the_steps_so_far(fake_api):
    at = app()
    choose_server(at, fake_api.url)
    run = at.session_state["live-run"]
    run.model.client = run.model.client.with_options(max_retries=0)  # no SDK back-off in a test
    fake_api.fail(529, times=1)
    click(at, "live-to-end")
    assert len(run.trace) == 1  # stage 1 ran, stage 2 was refused
    assert "The API is overloaded (529). Retry in a moment." in at.error[0].value
    assert "Stopped by an error" in at.status[0].label
    click(at, "live-retry")
    assert len(run.trace) == 2 and not at.error


def test_no_connection_says_so(fake_api, closed_port):
    at = app()
    choose_server(at, f"http://127.0.0.1:{closed_port}")  # nothing listens there
    run = at.session_state["live-run"]
    run.model.client = run.model.client.with_options(max_retries=0)
    click(at, "live-step")
    click(at, "live-step")
    assert "Could not reach the model's server (no connection)" in at.error[0].value
    assert len(run.trace) == 1


def test_missing_key_keeps_the_current_run_and_says_what_to_do():
    at = app()
    before = at.session_state["live-run"]
    at.radio(key="set-model").set_value("anthropic").run()
    at.button(key="new-run").click().run()
    assert not at.exception
    assert at.session_state["live-run"] is before
    assert "needs an API key" in at.sidebar.error[0].value


def test_a_key_from_the_environment_is_used_but_never_sent_to_the_page(monkeypatch, fake_api):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-secret-999")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)  # the server's key goes only to the server's base URL
    at = app()
    at.radio(key="set-model").set_value("anthropic").run()
    field = at.text_input(key="set-api-key")
    assert field.value == "" and "ANTHROPIC_API_KEY" in field.placeholder
    assert at.text_input(key="set-base-url").value == fake_api.url
    at.button(key="new-run").click().run()
    click(at, "live-step")
    click(at, "live-step")
    assert sent_key(fake_api.headers[-1]) == "sk-env-secret-999"
    page = " ".join(str(e.proto) for e in at.main) + " ".join(str(e.proto) for e in at.sidebar)
    assert "sk-env-secret-999" not in page


def test_the_key_can_come_from_secrets_toml_and_a_missing_or_broken_file_raises_nothing(tmp_path, monkeypatch):
    import os

    import streamlit as st
    from streamlit import config

    from pages.views.settings import default_key

    before = config.get_option("secrets.files")
    secrets = tmp_path / "secrets.toml"
    try:
        config.set_option("secrets.files", [str(tmp_path / "missing.toml")])
        st.secrets._reset()
        assert default_key() == (None, "")
        secrets.write_text("this is = not [toml\n")
        config.set_option("secrets.files", [str(secrets)])
        st.secrets._reset()
        assert default_key() == (None, "")
        secrets.write_text('ANTHROPIC_API_KEY = "sk-from-secrets"\n')
        st.secrets._reset()
        assert default_key() == ("sk-from-secrets", "secrets.toml")
    finally:
        config.set_option("secrets.files", before)
        st.secrets._reset()
        os.environ.pop("ANTHROPIC_API_KEY", None)  # Streamlit exports root-level secrets to the environment
