"""The sidebar keeps what the learner chose: Step through → another page → Step through changes no setting.

Streamlit drops the state of widgets a page did not draw, and only Step through
draws the sidebar's settings; the language picker is on every page.
"""


import pytest
from streamlit.testing.v1 import AppTest

from loop.engine.runner import Settings
from loop.engine.scenarios import SCENARIOS
from tests.apptest import app, click, copied_link

pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def away_and_back(at: AppTest) -> AppTest:
    for page in ("pages/about.py", "pages/replay.py", "pages/step_through.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
    return at


def test_the_offline_settings_survive_a_visit_to_other_pages():
    at = app()
    at.selectbox(key="set-scenario").set_value("list-files")
    at.number_input(key="set-tool-timeout").set_value(12)
    at.number_input(key="set-max-turns").set_value(7)
    at.selectbox(key="set-toolset").set_value("s02")
    at.toggle(key="set-approve").set_value(True)
    at.run()
    away_and_back(at)
    assert at.radio(key="set-model").value == "scripted"
    assert at.selectbox(key="set-scenario").value == "list-files"
    assert at.number_input(key="set-tool-timeout").value == 12
    assert at.number_input(key="set-max-turns").value == 7
    assert at.selectbox(key="set-toolset").value == "s02"
    assert at.toggle(key="set-approve").value is True
    click(at, "new-run")  # and New run uses them
    run = at.session_state["live-run"]
    assert run.settings == Settings(max_turns=7, tool_timeout=12, toolset="s02")  # what the run says it is …
    assert run.max_turns == 7 and "write_file" in run.tools.tools and run.tools.tools["bash"].timeout == 12  # … is
    assert run.task == SCENARIOS["list-files"].task and at.selectbox(key="set-scenario").value == "list-files"


def test_the_real_model_settings_and_a_task_of_ones_own_survive_too():
    at = app()
    at.radio(key="set-model").set_value("anthropic").run()
    at.text_input(key="set-model-id").set_value("claude-test")
    at.text_input(key="set-api-key").set_value("sk-ant-typed-1")
    at.text_input(key="set-base-url").set_value("http://127.0.0.1:9")
    at.toggle(key="set-stream").set_value(True)
    at.toggle(key="set-approve").set_value(False)
    at.selectbox(key="set-scenario").set_value("free task").run()
    at.text_area(key="set-task").set_value("Count the files.").run()
    away_and_back(at)
    assert at.radio(key="set-model").value == "anthropic"
    assert at.text_input(key="set-model-id").value == "claude-test"
    assert at.text_input(key="set-api-key").value == "sk-ant-typed-1"
    assert at.text_input(key="set-base-url").value == "http://127.0.0.1:9"
    assert at.toggle(key="set-stream").value is True
    assert at.toggle(key="set-approve").value is False
    assert at.selectbox(key="set-scenario").value == "free task"
    assert at.text_area(key="set-task").value == "Count the files."


def test_a_field_hidden_on_the_same_page_comes_back_as_it_was():
    at = app()
    at.selectbox(key="set-scenario").set_value("free task").run()
    at.text_area(key="set-task").set_value("Count the files.").run()
    at.selectbox(key="set-scenario").set_value("list-files").run()  # the task field is not drawn now
    at.selectbox(key="set-scenario").set_value("free task").run()
    assert at.text_area(key="set-task").value == "Count the files."


def test_the_language_survives_too_from_the_url_and_from_the_sidebar():
    at = app(lang="ja")
    at.number_input(key="set-max-turns").set_value(3).run()
    away_and_back(at)
    assert at.segmented_control(key="lang").value == "ja" and at.button(key="live-step").label == "進む"
    assert at.number_input(key="set-max-turns").value == 3
    at.segmented_control(key="lang").set_value("zh").run()
    away_and_back(at)
    assert at.segmented_control(key="lang").value == "zh" and at.button(key="live-step").label == "下一步"
    assert at.query_params["lang"] in ("zh", ["zh"])
    assert at.number_input(key="set-max-turns").value == 3


def test_the_first_visit_still_gets_the_defaults_without_a_warning(caplog):
    at = app()
    assert at.radio(key="set-model").value == "scripted"
    assert at.selectbox(key="set-scenario").value == "two-tools"
    assert (at.number_input(key="set-tool-timeout").value, at.number_input(key="set-max-turns").value) == (30, 20)
    assert at.selectbox(key="set-toolset").value == "s01" and at.toggle(key="set-approve").value is False
    at.radio(key="set-model").set_value("anthropic").run()
    assert at.text_input(key="set-model-id").value == "claude-sonnet-4-5"
    assert at.text_input(key="set-api-key").value == "" and at.text_input(key="set-base-url").value == ""
    assert at.toggle(key="set-approve").value is True  # a real model turns the gate on
    assert "created with a default value but also had its value set" not in caplog.text


def test_presenter_mode_stays_on_after_a_look_at_another_page():
    at = app()
    at.toggle(key="present").set_value(True).run()
    assert not at.title  # the presenter's layout: the task in large type, no page title
    away_and_back(at)
    assert at.toggle(key="present").value is True and not at.title


def test_a_link_opens_presenter_mode_the_url_keeps_it_and_turning_it_off_sticks():
    at = app(scenario="hello-py", step="3", present="on")
    assert at.toggle(key="present").value is True and not at.title  # the projector's view from the first run
    assert copied_link(at) == "scenario=hello-py&step=3"  # Copy link is for the learners' screens: not presenting
    click(at, "live-step")
    assert at.query_params["present"] == "on" and at.query_params["step"] == "4"
    at.switch_page("pages/replay.py").run()  # Replay has no presenter mode: its address says none
    assert "present" not in at.query_params
    at.switch_page("pages/step_through.py").run()
    assert at.toggle(key="present").value is True and at.query_params["present"] == "on"
    at.toggle(key="present").set_value(False).run()
    assert "present" not in at.query_params and at.title
    at.query_params["present"] = "on"  # the link's parameter, still in the address the tab was opened with
    at.run()
    assert at.toggle(key="present").value is False and "present" not in at.query_params and at.title


def test_saved_runs_open_by_themselves_on_a_reload_never_after_new_run():
    """A reload lands on a fresh run, and the runs saved before are offered; New run asks for a fresh run to step
    through: the list stays closed, under it, and the steps stay on the first screen."""
    from tests.apptest import reload

    at = app()
    click(at, "live-step")  # saved, step by step
    click(at, "new-run")
    [saved] = [e for e in at.expander if e.label.startswith("Saved runs")]
    assert saved.label == "Saved runs · 1" and not saved.proto.expanded
    again = reload(at)
    [saved] = [e for e in again.expander if e.label.startswith("Saved runs")]
    assert saved.proto.expanded
