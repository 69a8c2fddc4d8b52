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
