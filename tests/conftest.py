"""Shared fixtures: a fake Anthropic-compatible server on 127.0.0.1."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fake_server import FakeAnthropic  # noqa: E402


@pytest.fixture
def fake_api():
    """A running fake Anthropic server; `fake_api.url` is its base URL."""
    with FakeAnthropic() as server:
        yield server
