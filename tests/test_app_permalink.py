"""Permalinks: ?scenario=NAME&step=K opens Step through at step K of that scenario, ?sample=NAME&step=K opens
a sample on Replay, and the URL follows the cursor."""

import pytest
from streamlit.testing.v1 import AppTest

from loop.engine.scenarios import SCENARIOS
from tests.apptest import app as opened, click, run
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


def sidebar(at: AppTest) -> tuple:
    """What the sidebar's Next run says: task, loop, toolset, model."""
    return (at.selectbox(key="set-scenario").value, at.radio(key="set-profile").value,
            at.selectbox(key="set-toolset").value, at.radio(key="set-model").value)


def new_run_restarts(at: AppTest):
    """New run, and the settings the new run has against the ones the link's run had."""
    linked = at.session_state["live-run"]
    click(at, "new-run")
    run = at.session_state["live-run"]
    assert run is not linked and run.model.config.scripted
    assert (run.task, run.settings) == (linked.task, linked.settings)
    return run


@pytest.mark.parametrize("query, shown", [
    (dict(scenario="recover", step="7", lang="ja"), ("recover", "minimal", "s01", "scripted")),
    (dict(scenario="overloaded", profile="complete", step="3"), ("overloaded", "complete", "s01", "scripted")),
    (dict(scenario="overloaded", step="3"), ("overloaded", "minimal", "s01", "scripted")),
    (dict(scenario="subagent", step="5"), ("subagent", "minimal", "s04", "scripted")),
    (dict(scenario="compact", step="12", lang="zh"), ("compact", "minimal", "s06", "scripted")),
])
def test_the_sidebar_says_what_a_link_opened_and_new_run_restarts_it(query, shown):
    at = opened(**query)
    assert sidebar(at) == shown
    run = new_run_restarts(at)
    assert run.task == SCENARIOS[shown[0]].task_in(query.get("lang", "en"))
    assert (run.profile.name, run.settings.toolset) == shown[1:3]
    if shown[2] == "s06":  # the compaction threshold is the scenario's, as the link ran it
        assert at.number_input(key="set-compact-at").value == SCENARIOS["compact"].compact_at


def test_a_link_wins_over_what_the_browser_had_set_and_the_learner_then_wins_over_the_link():
    at = opened()
    at.radio(key="set-model").set_value("anthropic").run()
    at.selectbox(key="set-scenario").set_value("list-files")
    at.selectbox(key="set-toolset").set_value("s02")
    at.radio(key="set-profile").set_value("complete").run()
    at.switch_page("pages/about.py").run()  # the settings are kept while another page is shown …
    at.switch_page("pages/step_through.py")
    at.query_params.update(scenario="recover", step="7")  # … and a link opened in this browser says what it runs
    run(at)
    assert sidebar(at) == ("recover", "minimal", "s01", "scripted")
    assert at.toggle(key="set-approve").value is False  # the scripted model's gate, as the link's run has it
    new_run_restarts(at)

    # The learner changes the sidebar after the link opened: the change stays, at every rerun, and New run uses it.
    at = opened(scenario="overloaded", profile="complete", step="3")
    at.selectbox(key="set-scenario").set_value("hello-py").run()
    at.radio(key="set-profile").set_value("minimal").run()
    at.selectbox(key="set-toolset").set_value("s02").run()
    at.button(key="live-step").click().run()
    assert sidebar(at) == ("hello-py", "minimal", "s02", "scripted")
    click(at, "new-run")
    mine = at.session_state["live-run"]
    assert mine.task == SCENARIOS["hello-py"].task and (mine.profile.name, mine.settings.toolset) == ("minimal", "s02")
    assert sidebar(at) == ("hello-py", "minimal", "s02", "scripted")
