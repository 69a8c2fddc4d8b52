"""The Step through page, driven through Streamlit's AppTest: pages load, a run steps to its end,
moving the cursor runs nothing, and the tables say what happened."""


from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from loop.files import transcript
from tests.apptest import app, click, download, slider
from tests.tables import history_roles, page_text, table, words

ROOT = Path(__file__).resolve().parent.parent


def step_to_end(at: AppTest, limit: int = 60) -> None:
    for _ in range(limit):
        if at.button(key="live-step").disabled:
            return
        click(at, "live-step")
    raise AssertionError("Step never reached the end")


@pytest.mark.parametrize("page", ["pages/step_through.py", "pages/replay.py", "pages/about.py"])
def test_each_page_loads_without_exception(page):
    at = app()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert at.title, page


def test_first_page_is_step_through_on_the_offline_model_with_a_scenario():
    at = app()
    assert at.title[0].value == "Step through the loop"
    assert at.radio(key="set-model").value == "scripted"
    assert at.selectbox(key="set-scenario").value == "two-tools"
    run = at.session_state["live-run"]
    assert len(run.trace) == 0 and run.model.config.scripted
    step_buttons = [b.label for b in at.button if b.key and b.key.startswith("live-")]
    assert step_buttons[:5] == ["First", "Back", "Step", "Go to last step", "Run to end"]
    assert at.button(key="classroom-start").label == "Start a class"  # beside the title
    click(at, "live-step")  # the first click works with no key
    assert len(run.trace) == 1 and run.trace.steps[0].stage == "user_request"
    assert "Step 1 of 1 · before turn 1 · 1 · user request into messages" in [m.value.lstrip("# ") for m in at.markdown]


def test_step_through_two_tools_to_the_end():
    at = app()
    step_to_end(at)
    run = at.session_state["live-run"]
    assert run.done and run.state.ended == "end_turn"

    pairs = table(at, "status")
    assert list(pairs["status"]) == ["paired", "paired"]
    ids = [b["id"] for b in run.trace.messages[1]["content"] if b["type"] == "tool_use"]
    assert list(pairs["id"]) == ids
    assert list(pairs["tool"]) == ["bash", "bash"]

    steps = table(at, "stage")
    assert len(steps) == len(run.trace) == 10
    last = steps.iloc[-1]
    assert (last["now"], last["stage"], last["stop_reason"], last["turn_count"]) == ("▶", "decide", "end_turn", "2")
    assert last["transition_reason"] == ""  # None: the loop ended with no reason to go on
    now = table(at, "messages (count)")  # the LoopState now: one row
    assert now.iloc[0].to_dict() == {"messages (count)": "4", "turn_count": "2", "transition_reason": "None"}
    assert words(at) == "The loop has ended. The model finished its answer (end_turn)."
    assert at.button(key="live-to-end").disabled

    # The history draws one card per message, and every tool_use id is on the page.
    assert history_roles(at) == ["user", "assistant", "user", "assistant"]
    text = page_text(at)
    for tool_use_id in ids:
        assert text.count(tool_use_id) == 3  # its tool_use and its tool_result in the history, its row in Pairs


def test_back_first_and_the_slider_only_move_the_cursor():
    at = app()
    step_to_end(at)
    run = at.session_state["live-run"]
    n, messages = len(run.trace), len(run.trace.messages)
    click(at, "live-back")
    assert run.trace.cursor == n - 2
    click(at, "live-first")
    assert run.trace.cursor == 0
    assert at.button(key="live-first").disabled and at.button(key="live-back").disabled
    assert table(at, "stage").iloc[0]["now"] == "▶"
    slider(at, "live").set_value(5).run()
    assert run.trace.cursor == 4
    assert (len(run.trace), len(run.trace.messages)) == (n, messages)  # nothing ran
    # Step in the middle of the trace moves the cursor too, and runs nothing.
    click(at, "live-step")
    assert run.trace.cursor == 5 and len(run.trace) == n
    assert slider(at, "live").value == 6


def test_run_to_end_shows_progress_and_stops_at_max_turns():
    at = app()
    at.number_input(key="set-max-turns").set_value(1)
    at.selectbox(key="set-scenario").set_value("hello-py")
    click(at, "new-run")
    click(at, "live-to-end")
    run = at.session_state["live-run"]
    assert run.state.ended == "max_turns"
    assert run.trace.steps[-1].stage == "stop"
    assert at.status and "Ran to the end" in at.status[0].label
    assert len(table(at, "stage")) == len(run.trace)


def test_new_run_gets_a_fresh_workspace_and_clears_the_old_one():
    at = app()
    old = at.session_state["live-run"]
    assert old.workspace.is_dir()
    at.selectbox(key="set-scenario").set_value("list-files")
    click(at, "new-run")
    new = at.session_state["live-run"]
    assert new is not old and new.workspace != old.workspace
    assert new.task.startswith("List the files") and not old.workspace.exists()


def test_free_task_on_the_scripted_model():
    at = app()
    at.selectbox(key="set-scenario").set_value("free task").run()
    click(at, "new-run")
    assert "Type a task first" in at.sidebar.error[0].value  # an empty task keeps the old run
    at.text_area(key="set-task").set_value("What Python version is installed?")
    click(at, "new-run")
    click(at, "live-to-end")
    run = at.session_state["live-run"]
    assert run.task == "What Python version is installed?" and run.done
    assert "python3 --version" in str(run.trace.messages[1]["content"])


def test_raw_json_is_drawn_when_opened_and_holds_no_key():
    at = app()
    for _ in range(2):
        click(at, "live-step")
    at.session_state["live-raw"] = True  # open the expander
    at.run()
    codes = [c.value for c in at.code]
    assert any('"max_tokens": 8000' in c for c in codes)  # the request body
    assert any('"stop_reason": "tool_use"' in c for c in codes)  # the response
    assert not any("scripted-offline-no-key" in c for c in codes)  # the SDK's key is a header, never drawn


def test_save_sends_the_whole_run_as_a_transcript():
    at = app()
    assert at.get("download_button")[0].proto.disabled  # nothing to save yet
    click(at, "live-to-end")
    click(at, "live-first")  # Save writes the whole run wherever the cursor is
    button = at.get("download_button")[0]
    assert button.proto.label == "Save transcript"
    name, data = download(at, "live-save")
    saved = transcript.loads(data)  # the file reads back, strictly
    run = at.session_state["live-run"]
    assert name == "loopscope-what-is-the-date-and-how-much-disk-does.json"
    assert [s.stage for s in saved.steps] == [s.stage for s in run.trace.steps] and len(saved) == 10
    assert saved.messages == run.trace.messages and saved.meta["task"] == run.task
    assert "Two tool calls in one turn" in saved.messages[-1]["content"][0]["text"]
    assert not saved.branches


def shortcuts(at: AppTest) -> dict[str, str]:
    """The key each button of the controls answers to ("" for none), as Streamlit binds it in the browser."""
    return {b.key.removeprefix("live-"): b.proto.shortcut for b in at.button if b.key.startswith("live-")}


def test_keys_only_move_the_cursor_as_the_page_and_the_readme_say():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert ("The keys only move the cursor and never execute anything: Home is First, ← is Back, → is Step while a "
            "recorded step follows (at the end of the trace → does nothing: a stage runs only at a click), End is "
            "Go to last step.") in readme
    assert "Alt+↓ and Alt+↑ (**Next match**, **Previous match**) jump to the next and the previous step it finds" \
        in readme
    at = app(scenario="two-tools", step="3")
    run = at.session_state["live-run"]
    # At the end of the trace Step executes, so no key is bound to it; nor to Run to end. (No error in it: Previous
    # and Next match, Alt+↑ and Alt+↓, are not drawn; see test_app_find.py.)
    assert shortcuts(at) == {"first": "home", "back": "left", "step": "", "last": "end", "to-end": ""}
    assert words(at) == "Next, a click on Step executes stop_reason: go on or end?; the keys only move over recorded steps."
    click(at, "live-back")
    assert shortcuts(at) == {"first": "home", "back": "left", "step": "right", "last": "end", "to-end": ""}
    assert words(at) == "Moving the cursor runs nothing: every step is already recorded."
    click(at, "live-last")  # End: the last recorded step, nothing executed
    assert run.trace.cursor == 2 and len(run.trace) == 3 and at.button(key="live-last").disabled
