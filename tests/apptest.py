"""Open the app in AppTest and click as a learner would; each step fails at once if the page shows an exception."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def app(**query: str | None) -> AppTest:
    """The app opened at a URL with `query` (None leaves a parameter out), after its first run."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({k: v for k, v in query.items() if v is not None})
    at.run()
    assert not at.exception, at.exception
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def slider(at: AppTest, key: str):
    """The step slider of the `key` views (live or replay); it is a new widget at each cursor."""
    return next(s for s in at.slider if (s.key or "").startswith(f"{key}-slider-"))


def choose_server(at: AppTest, url: str, key: str = "sk-test-123", *, gate: bool | None = False) -> AppTest:
    """The sidebar set to a real model (`claude-test`) on the Anthropic-compatible server at `url`, then New run.

    `gate` sets the approval gate's toggle; None leaves it as a real model has it by default (on).
    """
    at.radio(key="set-model").set_value("anthropic").run()
    if gate is not None:
        at.toggle(key="set-approve").set_value(gate)
    at.text_input(key="set-model-id").set_value("claude-test")
    at.text_input(key="set-api-key").set_value(key)
    at.text_input(key="set-base-url").set_value(url)
    return click(at, "new-run")
