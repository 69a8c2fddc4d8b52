"""The server's API key goes only to the server's own base URL, and only within the limits the operator set.

A canary key is the server's (ANTHROPIC_API_KEY). A student who types a Base
URL of their own (here: the fake server, which records every request and its
headers) and leaves the key empty must get a clear refusal, and the fake
server must receive nothing. With the server's own ANTHROPIC_BASE_URL the key
goes there, counted for the browser and for the server as a whole.
"""

from __future__ import annotations

import secrets

import anthropic
import pytest

from loop.engine import keys
from loop.views.errors import explain
from loop.engine.model import Model, ModelConfig
from loop.files.runs import RunsStore, owner_key
from tests.apptest import app, click

TASK = [{"role": "user", "content": "list the files"}]


@pytest.fixture
def canary(monkeypatch, tmp_path):
    """The server's key, a spending ledger of this test's own, and no limits set but the defaults."""
    key = f"sk-ant-CANARY-{secrets.token_hex(12)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path / "runs"))  # spending counted in this test's store only
    for name in (keys.SETTING, keys.CALLS_AN_HOUR, keys.TOKENS_A_DAY, keys.TOKENS_A_DAY_ALL):
        monkeypatch.delenv(name, raising=False)
    return key


def anywhere(fake_api, key: str) -> bool:
    return any(key in value for headers in fake_api.headers for value in headers.values())


def carried(headers: dict) -> str:
    """The key a request carried, in whichever header the SDK put it."""
    return headers.get("x-api-key", "") + headers.get("authorization", "")


def real_model(at, base_url: str | None = None, key: str = ""):
    """The sidebar set to a real model, the key field as given (empty: the server's), then New run."""
    at.radio(key="set-model").set_value("anthropic").run()
    at.text_input(key="set-model-id").set_value("claude-test")
    at.text_input(key="set-api-key").set_value(key)
    if base_url is not None:
        at.text_input(key="set-base-url").set_value(base_url)
    at.toggle(key="set-approve").set_value(False)
    return click(at, "new-run")


# -- the rule ----------------------------------------------------------------------

def test_a_typed_base_url_with_no_typed_key_is_refused_and_nothing_is_sent(fake_api, canary):
    at = app()
    before = at.session_state["live-run"]
    at.radio(key="set-model").set_value("anthropic").run()
    at.text_input(key="set-base-url").set_value(fake_api.url + "/").run()
    beside = [c.value for c in at.sidebar.caption]
    assert any("A Base URL of your own needs an API key of your own" in c for c in beside)  # said beside the field
    assert "needs an API key of your own" in at.text_input(key="set-base-url").help
    real_model(at, fake_api.url)
    assert at.session_state["live-run"] is before  # no run was started
    assert "A Base URL of your own needs an API key of your own" in at.sidebar.error[0].value
    click(at, "live-to-end")  # the scripted run that stayed: nothing of it goes out either
    assert fake_api.requests == [] and fake_api.headers == []
    assert not anywhere(fake_api, canary)


def test_the_servers_own_base_url_gets_the_servers_key(fake_api, canary, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    at = app()
    real_model(at)  # the field starts with the server's base URL
    assert not at.sidebar.error
    run = at.session_state["live-run"]
    assert run.model.config.base_url == fake_api.url
    click(at, "live-to-end")
    assert run.done and fake_api.headers
    assert all(canary in carried(h) for h in fake_api.headers)


def test_a_typed_key_goes_to_a_typed_base_url(fake_api, canary):
    at = app()
    real_model(at, fake_api.url, key="sk-ant-students-own-1")
    assert not at.sidebar.error
    click(at, "live-to-end")
    assert at.session_state["live-run"].done
    assert fake_api.headers and not anywhere(fake_api, canary)
    assert all("sk-ant-students-own-1" in carried(h) for h in fake_api.headers)


def test_make_client_sends_the_environments_key_only_to_the_environments_base_url(fake_api, canary, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
    Model(ModelConfig(model="claude-test", base_url=fake_api.url, max_retries=0)).create(TASK, [])
    monkeypatch.delenv("ANTHROPIC_BASE_URL")  # the API's default is the server's: the fake server is not
    Model(ModelConfig(model="claude-test", base_url=fake_api.url, max_retries=0)).create(TASK, [])
    assert len(fake_api.headers) == 2 and not anywhere(fake_api, canary)

    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url + "/")  # the same server, written another way
    Model(ModelConfig(model="claude-test", base_url=fake_api.url, max_retries=0)).create(TASK, [])
    assert canary in carried(fake_api.headers[-1])


@pytest.mark.parametrize("typed, same", [
    (None, True), ("", True), ("https://api.anthropic.com", True), ("HTTPS://API.anthropic.com:443/", True),
    ("https://api.anthropic.com/v2", False), ("http://api.anthropic.com", False),
    ("https://api.anthropic.com.evil.example", False), ("https://api.anthropic.com@evil.example", False),
    ("https://evil.example/?https://api.anthropic.com", False), ("https://api.anthropic.com:8443", False),
])
def test_what_counts_as_the_servers_own_base_url(typed, same):
    assert keys.is_server_url(typed, {}) is same


def test_lending_off_refuses_the_servers_key_and_says_so_at_the_field(fake_api, canary, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("LOOPSCOPE_SERVER_KEY", "off")
    at = app()
    before = at.session_state["live-run"]
    real_model(at)
    assert at.session_state["live-run"] is before
    assert "This server does not lend its API key (LOOPSCOPE_SERVER_KEY=off)" in at.sidebar.error[0].value
    assert any("does not lend its API key" in c.value for c in at.sidebar.caption)
    assert "ANTHROPIC_API_KEY" not in at.text_input(key="set-api-key").placeholder
    assert fake_api.requests == []


def test_bad_settings_are_logged_and_the_defaults_used(caplog):
    env = {keys.SETTING: "maybe", keys.CALLS_AN_HOUR: "-3", keys.TOKENS_A_DAY: "lots", keys.TOKENS_A_DAY_ALL: "5,000"}
    assert keys.lending(env) is True
    assert keys.limits(env) == keys.Limits(calls_an_hour=120, tokens_a_day=1_000_000, tokens_a_day_all=5000)
    said = caplog.text
    assert "LOOPSCOPE_SERVER_KEY='maybe' is not a valid value" in said and "LOOPSCOPE_KEY_CALLS_AN_HOUR='-3'" in said
    assert "LOOPSCOPE_KEY_TOKENS_A_DAY='lots'" in said


# -- the limits ----------------------------------------------------------------------

def test_the_call_limit_of_a_browser_gives_the_message_and_sends_nothing_more(fake_api, canary, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("LOOPSCOPE_KEY_CALLS_AN_HOUR", "1")
    at = app()
    real_model(at)
    run = at.session_state["live-run"]
    click(at, "live-to-end")  # the first call goes; the second is refused before it is sent
    assert len(fake_api.requests) == 1 and not run.done
    message = at.error[0].value
    assert "This browser has made 1 calls this hour with the server's API key" in message
    assert "LOOPSCOPE_KEY_CALLS_AN_HOUR" in message and "UTC" in message and "Nothing was sent" in message
    click(at, "live-to-end")  # trying again sends nothing either
    assert len(fake_api.requests) == 1


def test_a_new_cookie_is_still_bound_by_the_servers_total(fake_api, canary, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    monkeypatch.setenv("LOOPSCOPE_KEY_TOKENS_A_DAY_ALL", "1")  # one call of anyone's spends it
    first = app()
    real_model(first)
    click(first, "live-step")
    click(first, "live-step")
    assert len(fake_api.requests) == 1

    other = app()  # another browser: no cookie, a new id
    real_model(other)
    click(other, "live-to-end")
    assert len(fake_api.requests) == 1
    assert "All browsers together have used" in other.error[0].value and "LOOPSCOPE_KEY_TOKENS_A_DAY_ALL" in \
        other.error[0].value


def test_every_sdk_retry_is_checked_before_it_is_sent(fake_api, tmp_path):
    fake_api.fail(529, headers={"retry-after-ms": "10"})
    allowance = keys.Allowance(RunsStore(tmp_path), owner_key("browser:retries"), keys.Limits(calls_an_hour=1))
    model = Model(ModelConfig(model="claude-test", api_key="sk-server", base_url=fake_api.url, max_retries=2,
                              allowance=allowance))
    with pytest.raises(keys.KeyRefused) as refused:
        model.create(TASK, [])
    assert len(fake_api.requests) == 1  # the 529 was answered; its retry was never sent
    assert "made 1 calls this hour" in explain(refused.value)
    assert "この1時間" in explain(refused.value, "ja")


def test_tokens_are_charged_with_cache_tokens_and_a_browsers_day_limit_holds(fake_api, tmp_path):
    store = RunsStore(tmp_path)
    owner = owner_key("browser:tokens")
    allowance = keys.Allowance(store, owner, keys.Limits(tokens_a_day=1))
    assert keys.used_tokens({"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": 5,
                             "cache_read_input_tokens": 6, "server_tool_use": None}) == 18
    model = Model(ModelConfig(model="claude-test", api_key="sk-server", base_url=fake_api.url, max_retries=0,
                              allowance=allowance))
    model.create(TASK, [])
    with pytest.raises(keys.KeyRefused) as refused:
        model.create(TASK, [])
    assert len(fake_api.requests) == 1
    assert "This browser has used" in str(refused.value) and "LOOPSCOPE_KEY_TOKENS_A_DAY)" in str(refused.value)


def test_a_store_that_cannot_be_opened_refuses_the_servers_key(fake_api, tmp_path):
    (tmp_path / "runs.sqlite3").write_bytes(b"not a database" * 100)
    allowance = keys.Allowance(RunsStore(tmp_path), owner_key("browser:no-store"), keys.Limits())
    model = Model(ModelConfig(model="claude-test", api_key="sk-server", base_url=fake_api.url, max_retries=0,
                              allowance=allowance))
    with pytest.raises(keys.KeyRefused) as refused:
        model.create(TASK, [])
    assert fake_api.requests == [] and "cannot be counted" in str(refused.value)
    with pytest.raises(anthropic.AnthropicError):  # a typed key has no allowance: the store does not matter
        Model(ModelConfig(model="claude-test", api_key="sk-own", base_url="http://127.0.0.1:9", max_retries=0,
                          timeout=2)).create(TASK, [])
