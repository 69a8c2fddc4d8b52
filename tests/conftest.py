"""Shared fixtures: a fake Anthropic-compatible server on 127.0.0.1, and workspaces for the bash tool."""

import os
import shutil
import sys
import tempfile
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


def _shared_folder() -> Path:
    """A new folder under /tmp, like a real run's workspace: as root, commands run there as `nobody`."""
    from loop.tools.bash import unprivileged_user

    folder = Path(tempfile.mkdtemp(prefix="loopscope-test-ws-"))
    if os.geteuid() == 0:
        assert unprivileged_user(folder) is not None, "a folder under /tmp must be reachable by nobody"
    return folder


@pytest.fixture
def shared():
    """A workspace under /tmp: as root, commands run there as nobody."""
    folder = _shared_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["private", "shared"])
def workspace(request, tmp_path):
    """Each test twice: in pytest's private tmp_path (mode 700 above it: as root, commands run there as root)
    and in a folder under /tmp like a real run's (as root, commands run there as `nobody`)."""
    if request.param == "private":
        yield tmp_path
        return
    folder = _shared_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
