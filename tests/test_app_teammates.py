"""A course trace of an agent team on Replay: each teammate a thread of its own, reached and drawn."""

import json

from tests.test_app_replay import replay_page, upload
from tests.test_app_threads import status
from tests.test_import_teammates import team_trace


def test_replay_steps_into_each_teammate_s_thread():
    at = replay_page()
    upload(at, "s09.json", json.dumps(team_trace()).encode())
    trace = at.session_state["replay"]["trace"]
    assert sorted(trace.threads) == ["main", "teammate-alice", "teammate-bob"]
    for name in ("teammate-alice", "teammate-bob"):
        trace.goto(trace.opened_at(name))
        at.run()
        assert not at.exception, at.exception
        assert f" · {name} · " in status(at), status(at)
    trace.goto(len(trace.steps) - 1)
    at.run()
    assert not at.exception, at.exception
