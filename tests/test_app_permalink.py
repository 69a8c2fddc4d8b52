"""Permalinks: ?scenario=NAME&step=K opens Step through at step K of that scenario, ?sample=NAME&step=K opens
a sample on Replay, and the URL follows the cursor."""

from streamlit.testing.v1 import AppTest

from tests.apptest import app as opened
from tests.tables import history_roles


def status(at: AppTest) -> str:
    return next(m.value[4:] for m in at.markdown if m.value.startswith("### "))


def param(at: AppTest, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_a_scenario_link_opens_that_step():
    at = opened(scenario="hello-py", step="6")
    run = at.session_state["live-run"]
    assert run.task.startswith("Create hello.py")
    assert status(at) == "Step 6 of 6 · turn 1 · 5 · write tool_results back"  # the turn it ends
    assert history_roles(at) == ["user", "assistant", "user"]  # the tool_result written back

    # The URL follows the cursor, and following it does not rebuild the run.
    at.button(key="live-step").click().run()
    assert param(at, "step") == "7" and param(at, "scenario") == "hello-py"
    at.button(key="live-first").click().run()
    assert param(at, "step") == "1" and at.session_state["live-run"] is run
    assert status(at) == "Step 1 of 7 · before turn 1 · 1 · user request into messages"


def test_a_link_with_a_language_opens_in_that_language():
    at = opened(scenario="two-tools", step="3", lang="ja")
    assert status(at) == "ステップ 3 / 3 · turn 1 · 3 · assistant response を append"
    assert at.button(key="live-step").label == "進む"


def test_a_link_past_the_end_stops_at_the_end_and_a_bad_link_is_ignored():
    at = opened(scenario="list-files", step="99")
    assert status(at) == "Step 9 of 9 · turn 2 · stop_reason: go on or end?"
    at = opened(scenario="no-such-thing", step="3")
    assert status(at) == "Step 0 of 0 · not started"


def test_a_sample_link_opens_the_sample_on_replay_at_that_step():
    at = opened("pages/replay.py", sample="two-tools", step="4")
    assert at.session_state["replay"]["name"] == "two-tools.json"
    assert status(at) == "Step 4 of 10 · turn 1 · stop_reason: go on or end?"
    at.button(key="replay-step").click().run()
    assert param(at, "step") == "5" and param(at, "sample") == "two-tools"
