"""Shared fixtures: a fake Anthropic-compatible server on 127.0.0.1."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fake_server import FakeAnthropic  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def runs_folder(tmp_path_factory):
    """Saved runs go to a temporary folder, never the project's runs/ (the app reads LOOPSCOPE_RUNS)."""
    import os

    folder = tmp_path_factory.mktemp("runs")
    before = os.environ.get("LOOPSCOPE_RUNS")
    os.environ["LOOPSCOPE_RUNS"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("LOOPSCOPE_RUNS", None)
    else:
        os.environ["LOOPSCOPE_RUNS"] = before


@pytest.fixture
def fake_api():
    """A running fake Anthropic server; `fake_api.url` is its base URL."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def no_key_in_environment(monkeypatch):
    """No key or base URL from the machine's environment: the test gives the page its own."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
