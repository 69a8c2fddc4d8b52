"""The API key goes to the model's server and nowhere else a person could see or a file could keep.

A canary key is set both in the environment and in ModelConfig.api_key; a real
model run (against the fake server), a scripted run, failing runs and the CLI
are then searched for it everywhere Loopscope writes or shows something: the
transcript, the Raw view's request and response, the Markdown export, the
tables, the narration, error messages, the runs folder, the CLI's output, the
logs (the SDK's debug logging included) and what a tool prints. The fake
server must have received the key, or the search would prove nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import anthropic
import pytest

from loop.views import errors, parts as views
from loop.files import export, transcript
from loop.engine.model import MissingKey, Model, ModelConfig
from loop.views.narrate import describe
from loop.files.runs import RunsStore, owner_key
from loop.engine.runner import start

ROOT = Path(__file__).resolve().parent.parent
LOGGERS = ("anthropic", "httpx2", "httpcore2")
ENV_DUMP = "env; cat /proc/self/environ | tr '\\0' '\\n'"


@pytest.fixture
def canary(monkeypatch):
    key = f"sk-ant-CANARY-{secrets.token_hex(12)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    return key


@pytest.fixture
def logs(caplog):
    """Every log record of the run, the SDK's and the HTTP stack's at DEBUG included."""
    caplog.set_level(logging.DEBUG)
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


@pytest.fixture
def workspaces():
    """Folders of the user's under /tmp, readied for commands (as root, given to `nobody`)."""
    from loop.tools.workspace import sandbox_user

    made: list[Path] = []

    def new() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="loopscope-secrets-ws-")))
        if os.geteuid() == 0:
            os.chown(made[-1], *sandbox_user())
        return made[-1]

    yield new
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def real_config(fake_api, key: str) -> ModelConfig:
    return ModelConfig(model="claude-test", api_key=key, base_url=fake_api.url, max_retries=0)


def sent_the_key(fake_api, key: str) -> bool:
    return bool(fake_api.headers) and all(key in h.get("authorization", "") + h.get("x-api-key", "")
                                          for h in fake_api.headers)


def everything_shown_or_saved(trace, tmp_path: Path, settings: dict) -> dict[str, str]:
    """What a person can see of a run, or a file can keep, as text, by where it is."""
    shown = {"transcript": transcript.dumps(trace), "markdown": export.to_markdown(trace)}
    for i, step in enumerate(trace.steps):
        shown[f"narration {i}"] = describe(trace, i)
        shown[f"markdown at {i}"] = export.to_markdown(trace, i)
        shown[f"status {i}"] = views.status_line(trace, i) + views.what_happened(trace, i)
        if step.stage == "call_model":
            shown[f"raw request {i}"] = json.dumps(trace.request_at(i), ensure_ascii=False)
            shown[f"raw response {i}"] = json.dumps(trace.response_at(i), ensure_ascii=False)
        shown[f"step {i}"] = json.dumps(step.to_dict(), ensure_ascii=False, default=str)
        table = views.pairs_table(trace, i)
        shown[f"pairs table {i}"] = table.to_csv() + table.to_json()
        shown[f"state {i}"] = json.dumps(views.state_rows(trace, i))
    steps = views.steps_table(trace)
    shown["steps table"] = steps.to_csv() + steps.to_json()
    store, owner = RunsStore(tmp_path / "runs"), owner_key("browser:secrets-test")
    store.save(owner, "run-1", trace, settings, writer="tab")
    shown["runs store"] = "".join(p.read_bytes().decode("latin-1") for p in sorted((tmp_path / "runs").iterdir()))
    shown["runs store, as JSON lines"] = "\n".join(store.journal(owner, "run-1"))
    loaded, kept = store.load(owner, "run-1")
    shown["resumed run"] = transcript.dumps(loaded) + json.dumps(kept, default=str)
    shown["listing"] = repr(store.list(owner))
    return shown


def assert_nowhere(key: str, shown: dict[str, str]) -> None:
    leaks = [where for where, text in shown.items() if key in text]
    assert not leaks, f"the key is shown or saved in: {leaks}"


def tool_outputs(trace) -> list[str]:
    return [s.detail["output"] for s in trace.steps if s.stage == "run_tool"]


# -- runs ----------------------------------------------------------------------------

def test_a_real_model_run_keeps_the_key_out_of_everything_it_shows_and_saves(fake_api, canary, logs, tmp_path,
                                                                              workspaces):
    # The model's first answer asks for every variable and the process's own environment.
    fake_api.fail(200, body={"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                             "content": [{"type": "tool_use", "id": "toolu_env", "name": "bash",
                                          "input": {"command": ENV_DUMP}}],
                             "stop_reason": "tool_use", "stop_sequence": None,
                             "usage": {"input_tokens": 10, "output_tokens": 5}})
    config = real_config(fake_api, canary)
    run = start(scenario="list-files", config=config, workspace=workspaces(), tool_timeout=3)
    run.run_to_end()
    assert run.state.ended == "end_turn" and len(fake_api.requests) == 2
    assert sent_the_key(fake_api, canary)  # the key really was in use

    [output] = tool_outputs(run.trace)
    assert "PATH=" in output and "HOME=" in output  # the command did print the environment
    shown = everything_shown_or_saved(run.trace, tmp_path, dataclasses.asdict(config))
    shown["tool output"] = output
    shown["config repr"] = repr(config) + repr(run.model.config)
    shown["logs"] = logs.text + "".join(f"{r.getMessage()} {r.args!r}" for r in logs.records)
    assert logs.records  # the SDK did log, at DEBUG
    assert_nowhere(canary, shown)


def test_a_scripted_run_with_a_key_in_the_environment_keeps_it_out_too(canary, logs, tmp_path, workspaces):
    run = start(scenario="hello-py", workspace=workspaces(), tool_timeout=3)
    run.run_to_end()
    assert run.state.ended == "end_turn"
    shown = everything_shown_or_saved(run.trace, tmp_path, {"model": "scripted"})
    shown["logs"] = logs.text
    # and a command of its own in the same workspace, as the approval gate's "edit" could send
    output = run.tools.run("bash", {"command": ENV_DUMP})
    assert "HOME=" in output.content
    shown["tool output"] = output.content
    assert_nowhere(canary, shown)


# -- errors --------------------------------------------------------------------------

def _failure(run) -> BaseException:
    with pytest.raises(Exception) as failed:
        run.run_to_end()
    return failed.value


def error_texts(exc: BaseException) -> dict[str, str]:
    """What a page or a terminal shows of an error: the plain words, the exception and its traceback."""
    return {"explain": errors.explain(exc), "str": str(exc), "repr": repr(exc),
            "traceback": "".join(traceback.format_exception(exc))}


@pytest.mark.parametrize("status", [401, 400, 500])
def test_an_api_error_says_what_happened_without_the_key(status, fake_api, canary, workspaces):
    fake_api.fail(status)
    run = start(scenario="list-files", config=real_config(fake_api, canary), workspace=workspaces(), tool_timeout=3)
    exc = _failure(run)
    assert isinstance(exc, anthropic.APIStatusError) and exc.status_code == status
    assert sent_the_key(fake_api, canary)
    shown = error_texts(exc)
    assert_nowhere(canary, shown)
    if status == 401:
        assert shown["explain"] == "The API key was refused (401 authentication error). Check the key, then retry. fake 401"


def test_a_server_that_echoes_the_key_in_its_error_does_not_get_it_shown(fake_api, canary, workspaces):
    # Some proxies quote the key they refused; the plain-words message shows the server's own words.
    fake_api.fail(401, body={"type": "error", "error": {"type": "authentication_error",
                                                        "message": f"invalid x-api-key: {canary}"}})
    run = start(scenario="list-files", config=real_config(fake_api, canary), workspace=workspaces(), tool_timeout=3)
    said = errors.explain(_failure(run))
    assert canary not in said
    assert said.startswith("The API key was refused (401 authentication error). Check the key, then retry. "
                           "invalid x-api-key: sk-ant-")


def test_no_connection_and_no_key_are_said_without_the_key(canary, workspaces, monkeypatch):
    with __import__("socket").socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = ModelConfig(model="claude-test", api_key=canary, base_url=f"http://127.0.0.1:{port}", max_retries=0,
                         timeout=2)
    exc = _failure(start(scenario="list-files", config=config, workspace=workspaces(), tool_timeout=3))
    assert isinstance(exc, anthropic.APIConnectionError)
    assert_nowhere(canary, error_texts(exc))

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(MissingKey) as missing:
        Model(ModelConfig(model="claude-test"))
    assert errors.explain(missing.value).startswith("The model 'claude-test' needs an API key")


# -- the command line ------------------------------------------------------------------

def cli(fake_api, key: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_API_KEY=key, ANTHROPIC_BASE_URL=fake_api.url, ANTHROPIC_LOG="debug",
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "loop", "run", "--scenario", "list-files", "--model", "claude-test",
                           "--tool-timeout", "3", "--out",
                           str(tmp_path / "t.json"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_the_cli_with_the_sdks_debug_log_on_prints_no_key(fake_api, canary, tmp_path):
    done = cli(fake_api, canary, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ended: end_turn" in done.stdout
    assert "Request options" in done.stderr and "HTTP Request: POST" in done.stderr  # ANTHROPIC_LOG=debug is on
    assert sent_the_key(fake_api, canary)
    assert_nowhere(canary, {"stdout": done.stdout, "stderr": done.stderr,
                            "transcript": (tmp_path / "t.json").read_text()})


def test_the_cli_failing_on_a_refused_key_prints_no_key(fake_api, canary, tmp_path):
    fake_api.fail(401)
    done = cli(fake_api, canary, tmp_path=tmp_path)
    assert done.returncode == 1
    assert "error: The API key was refused (401 authentication error)" in done.stderr
    assert sent_the_key(fake_api, canary)
    assert_nowhere(canary, {"stdout": done.stdout, "stderr": done.stderr})

