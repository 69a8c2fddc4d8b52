"""Forks: edit a past tool_result (or the task) and continue in a new branch; the old branch is kept,
can be switched back to, and Save writes both."""

from streamlit.testing.v1 import AppTest

from loop.files import transcript
from tests.apptest import app, click, download, slider
from tests.tables import history_text


def status(at: AppTest) -> str:
    return next(m.value[4:] for m in at.markdown if m.value.startswith("### "))


def test_edit_a_tool_result_continue_switch_back_and_save_both():
    at = app(scenario="list-files", step="9")
    original = at.session_state["live-run"]
    assert original.done and "README.txt" in original.trace.messages[-1]["content"][0]["text"]
    slider(at, "live").set_value(5).run()  # step 5 ran `ls -la`
    assert status(at).endswith("4 · run a tool_use")
    assert not at.text_area  # the form is drawn once its expander is opened
    at.session_state["live-fork-4"] = True  # the learner opens "Edit this tool_result…"
    at.run()
    ran = original.trace.steps[4].detail  # the form starts from what the tool gave
    assert at.text_area(key="live-fork-text-4").value == ran.output and "README.txt" in ran.output
    assert at.checkbox(key="live-fork-err-4").value is False
    at.text_area(key="live-fork-text-4").set_value("notes.md\nplan.txt")
    click(at, "live-fork-go-4")

    branch = at.session_state["live-run"]
    assert branch is not original and len(branch.trace) == 5 and status(at) == "Step 5 of 5 · turn 1 · 4 · run a tool_use"
    assert branch.trace.steps[-1].detail["given_by_user"]
    click(at, "live-to-end")
    answer = branch.trace.messages[-1]["content"][0]["text"]
    assert "`notes.md`, `plan.txt`" in answer  # the model saw the edited result, not the real one
    assert len(original.trace) == 9 and "README.txt" in original.trace.messages[-1]["content"][0]["text"]

    picker = at.selectbox(key="live-branch")
    assert picker.options == ["Branch 1 · the original", "Branch 2 · step 5, edited tool_result"]
    picker.set_value(0).run()
    assert at.session_state["live-run"] is original and status(at).startswith("Step 5 of 9")  # where we forked

    name, data = download(at, "live-save")  # what Save sends: the branch shown, the other one beside it
    saved = transcript.loads(data)
    assert name.endswith(".json") and len(saved) == 9 and len(saved.branches) == 1
    assert "README.txt" in saved.messages[-1]["content"][0]["text"]
    assert len(saved.branches[0]) == 9 and saved.branches[0].steps[4].detail["given_by_user"]
    assert "`notes.md`, `plan.txt`" in saved.branches[0].messages[-1]["content"][0]["text"]
    assert not original.trace.branches  # saving changed nothing in the session


def test_edit_the_task_at_step_one():
    at = app()
    click(at, "live-step")
    at.session_state["live-fork-0"] = True  # "Edit the task…"
    at.run()
    at.text_area(key="live-fork-task").set_value("What Python version is installed?")
    click(at, "live-fork-go-0")
    run = at.session_state["live-run"]
    assert run.task == "What Python version is installed?" and len(run.trace) == 1
    assert "What Python version is installed?" in at.caption[0].value
    click(at, "live-to-end")
    assert "python3 --version" in str(run.trace.messages[1]["content"])
    assert len(at.selectbox(key="live-branch").options) == 2


def test_a_saved_run_with_branches_replays_each_branch():
    at = app(scenario="list-files", step="5")
    at.session_state["live-fork-4"] = True
    at.run()
    at.text_area(key="live-fork-text-4").set_value("only.txt")
    click(at, "live-fork-go-4")
    click(at, "live-to-end")
    _, data = download(at, "live-save")

    at.switch_page("pages/replay.py").run()
    at.file_uploader(key="replay-upload").upload("forked.json", data, "application/json").run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="replay-branch")
    assert picker.options == ["Branch 1 · step 5, edited tool_result", "Branch 2 · the original"]
    at.button(key="replay-to-end").click().run()
    assert "only.txt" in history_text(at).split("messages[3]")[-1]  # the last message: the answer
    at.selectbox(key="replay-branch").set_value(1).run()  # the page as it is now
    assert " of 5 · " in status(at)  # the original: the five steps it had when the fork was made
    assert "only.txt" not in history_text(at)


def test_an_empty_task_is_refused_and_the_run_stays():
    at = app()
    click(at, "live-step")
    before = at.session_state["live-run"]
    at.session_state["live-fork-0"] = True
    at.run()
    at.text_area(key="live-fork-task").set_value("  ")
    click(at, "live-fork-go-0")
    assert [e.value for e in at.error] == ["the task is empty"]
    assert at.session_state["live-run"] is before
