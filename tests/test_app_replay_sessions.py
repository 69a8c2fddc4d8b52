"""Replay's sessions list is drawn only on the user's own machine; elsewhere the page says why it is not."""

import contextlib
import os
from unittest import mock

from streamlit.testing.v1 import AppTest

from tests.apptest import app, click
from tests.test_sessions_folder import folder


@contextlib.contextmanager
def listening(env: dict, address: str | None):
    """The environment `env`, and a server that listens on `address` (Streamlit's server.address)."""
    with mock.patch.dict(os.environ, env), mock.patch("pages.views.replay.st.get_option",
                                                      side_effect=lambda name, real=__import__("streamlit").get_option:
                                                      address if name == "server.address" else real(name)):
        yield


def replay_page(env: dict, address: str | None) -> AppTest:
    with listening(env, address):
        return app("pages/replay.py")


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_off_unless_the_variable_is_set(tmp_path):
    at = replay_page({}, "127.0.0.1")
    assert "sessions" not in captions(at).lower() and not [e for e in at.expander if "Your sessions" in e.label]


def test_refused_unless_the_operator_says_so_on_a_server_others_reach_or_serving_a_class(tmp_path):
    projects = folder(tmp_path)
    at = replay_page({"LOOPSCOPE_SESSIONS_DIR": str(projects)}, "127.0.0.1")  # loopback alone proves nothing
    assert "`LOOPSCOPE_LIST_SESSIONS` is not set to 1" in captions(at)
    assert not [e for e in at.expander if "Your sessions" in e.label]
    said = {"LOOPSCOPE_SESSIONS_DIR": str(projects), "LOOPSCOPE_LIST_SESSIONS": "1"}
    at = replay_page(said, None)  # Streamlit's default: every interface
    assert "this server listens on `0.0.0.0`, beyond this machine" in captions(at)
    assert not [e for e in at.expander if "Your sessions" in e.label]
    at = replay_page({**said, "LOOPSCOPE_CLASSROOM": "1"}, "127.0.0.1")
    assert "serves a class through the balancer" in captions(at)


def test_listed_on_loopback_and_opened_with_its_sub_agents(tmp_path):
    projects = folder(tmp_path)
    with listening({"LOOPSCOPE_SESSIONS_DIR": str(projects), "LOOPSCOPE_LIST_SESSIONS": "1"}, "127.0.0.1"):
        at = app("pages/replay.py")
        [listed] = [e for e in at.expander if "Your sessions" in e.label]
        choice = at.selectbox(key="replay-session-choice")
        assert choice.options[0].startswith("2025-10-09 08:53 UTC · -home-ada-parser · review the parser")
        click(at, "replay-session-open")
        replay = at.session_state["replay"]
        assert replay["name"] == "new.jsonl" and replay["sub_agent_logs"] == 1 and replay["source"] == "session"
        assert "Follow" in [t.label for t in at.toggle]
