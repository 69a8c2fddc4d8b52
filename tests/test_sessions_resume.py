"""Refresh loses nothing: a live run is saved after every step, and "Saved runs" brings it back after a reload.

A reload is a fresh AppTest (a new Streamlit session, nothing in session_state)
sending the cookie the first page handed out (tests/apptest.py: `reload`);
another browser sends none, or another, and sees none of these runs.
"""

import json
from pathlib import Path

import pytest

from loop.files import browser_id
from loop.files.runs import RunsStore
from tests.apptest import COOKIE, app, choose_server, click, copied_link, issued, reload

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def sent_key(headers: dict) -> str | None:
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)


def runs_of(folder: Path, cookie: str) -> list:
    """The runs the store keeps for the browser holding `cookie`."""
    store = RunsStore(folder)
    token = browser_id.verify(store.secret(), cookie)
    assert token is not None, "the page handed out an id the server did not sign"
    return store.list(browser_id.owner(token))


def labels(at) -> list[str]:
    return [e.label for e in at.expander]


def test_a_reload_resumes_the_same_trace_and_cursor_and_stepping_goes_on(runs_folder):
    at = app()
    cookie = issued(at)
    assert cookie and "." in cookie  # an id the server made and signed, handed to the browser in a cookie
    assert "session" not in at.query_params  # and never in the address bar
    for _ in range(6):
        click(at, "live-step")
    click(at, "live-back")
    before = at.session_state["live-run"]
    assert (len(before.trace), before.trace.cursor) == (6, 4)
    messages = json.dumps(before.trace.messages)
    assert [r.steps for r in runs_of(runs_folder, cookie)] == [6]  # saved under this browser's id

    again = reload(at)  # a new session, the same browser
    assert issued(again) is None  # its cookie was accepted: no new id
    fresh = again.session_state["live-run"]
    assert fresh is not before and len(fresh.trace) == 0
    assert "Saved runs · 1" in labels(again)
    label = again.selectbox(key="saved-run").format_func(again.selectbox(key="saved-run").value)
    assert "two-tools" not in label and "6 steps" in label and "not ended" in label
    assert "loopscope-scripted" in label
    click(again, "resume-run")
    run = again.session_state["live-run"]
    assert (len(run.trace), run.trace.cursor) == (6, 4)
    assert json.dumps(run.trace.messages) == messages
    assert any(h.value.lstrip("# ").startswith("Step 5 of 6") for h in again.markdown)
    assert any("Resumed: 6 steps, at step 5" in s.value for s in again.success)

    # Live again: Step moves the cursor to the end, then executes the next stages.
    click(again, "live-step")
    assert run.trace.cursor == 5 and len(run.trace) == 6
    click(again, "live-to-end")
    assert run.done and run.state.ended == "end_turn" and len(run.trace) == 10

    # The same run went on: a second reload finds one run, ended, with all 10 steps.
    third = reload(at)
    box = third.selectbox(key="saved-run")
    assert len(box.options) == 1
    assert "10 steps" in box.format_func(box.value) and "ended: end_turn" in box.format_func(box.value)
    click(third, "resume-run")
    resumed = third.session_state["live-run"]
    assert (len(resumed.trace), resumed.trace.cursor) == (10, 9) and resumed.done
    assert third.button(key="live-step").disabled


def test_another_browser_sees_none_of_these_runs():
    at = app()
    click(at, "live-step")
    other = app()  # no cookie: a browser of its own
    assert issued(other) != issued(at)
    assert "Saved runs · 0" in labels(other)
    assert not [s for s in other.selectbox if s.key == "saved-run"]


def test_an_old_link_with_session_opens_its_step_drops_the_parameter_and_grants_nothing(tmp_path, monkeypatch):
    # A runs folder as an older version left it: runs/<browser id>/<run id>.jsonl, the id from a ?session= link.
    from loop.files import journal
    from loop.files.transcript import loads

    sid = "OldBrowserId-0123456789ab"
    trace = loads((ROOT / "samples" / "two-tools.json").read_text())
    (tmp_path / sid).mkdir()
    (tmp_path / sid / "20250101-000000-abcdef.jsonl").write_text(
        "\n".join([journal.head_line(trace.meta, {}), *(journal.step_line(trace, i) for i in range(len(trace)))]) + "\n")
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))

    at = app(session=sid, scenario="two-tools", step="3")  # the teacher's old link, opened by a student
    assert "session" not in at.query_params  # dropped from the address bar
    assert dict(at.query_params) == {"scenario": "two-tools", "step": "3"}
    run = at.session_state["live-run"]
    assert (len(run.trace), run.trace.cursor) == (3, 2)  # the step still opens
    assert "Saved runs · 0" in labels(at)  # and nothing of the old browser's
    assert copied_link(at) == "scenario=two-tools&step=3"

    # The old run was imported into the store (once), filed under a hash of the old id, out of every browser's reach.
    store = RunsStore(tmp_path)
    [(owner, saved)] = store.everyone()
    assert saved.steps == len(trace) and sid not in owner
    assert not (tmp_path / sid).exists() and sid not in "".join(p.name for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("made_up", [
    "----------------",  # what an old link's id looked like
    "A" * 22 + "." + "B" * 43,  # the shape of an id, signed by no one
    "x" * 5000,
    "",
])
def test_a_made_up_browser_id_gets_nothing(made_up):
    owner = app()
    click(owner, "live-step")
    real = issued(owner)
    for cookie in (made_up, real[:-1] + ("A" if real[-1] != "A" else "B"), real.split(".")[0] + "." + real.split(".")[0]):
        at = app(cookies={COOKIE: cookie})
        assert "Saved runs · 0" in labels(at)
        new = issued(at)
        assert new is not None and new != cookie  # the page hands out an id of its own instead
    assert "Saved runs · 1" not in labels(app(cookies={COOKIE: made_up}))
    again = reload(owner)
    assert "Saved runs · 1" in labels(again)  # the real id still has its run


def test_delete_removes_a_saved_run(runs_folder):
    at = app()
    cookie = issued(at)
    click(at, "live-step")
    at.selectbox(key="set-scenario").set_value("list-files")
    click(at, "new-run")
    click(at, "live-step")
    click(at, "live-step")
    # The current run is not offered (it is the one being saved); the first is.
    box = at.selectbox(key="saved-run")
    assert len(box.options) == 1 and "1 steps" in box.format_func(box.value)
    click(at, "delete-run")
    assert "Saved runs · 0" in labels(at)
    assert any("Deleted the saved run" in s.value for s in at.success)
    again = reload(at)
    box = again.selectbox(key="saved-run")
    assert len(box.options) == 1 and "2 steps" in box.format_func(box.value)  # only the list-files run
    assert [r.steps for r in runs_of(runs_folder, cookie)] == [2]


def test_a_real_model_run_is_saved_without_its_key_and_asks_for_it_again(fake_api, runs_folder):
    at = app()
    cookie = issued(at)
    choose_server(at, fake_api.url, "sk-ant-secret-key-42", gate=None)
    for _ in range(3):
        click(at, "live-step")
    store = RunsStore(runs_folder)
    [saved] = runs_of(runs_folder, cookie)
    owner = browser_id.owner(browser_id.verify(store.secret(), cookie))
    lines = "\n".join(store.journal(owner, saved.id))
    assert "claude-test" in lines and fake_api.url in lines
    assert "api_key" not in lines
    files = b"".join(p.read_bytes() for p in runs_folder.rglob("*") if p.is_file())  # the database and its log
    assert b"sk-ant-secret-key-42" not in files

    again = reload(at)  # a reload: the key typed before is gone with the old session
    key_field = again.text_input(key="resume-api-key")
    assert key_field.value == "" and "never saved" in key_field.help
    key_field.set_value("sk-ant-typed-again-7")
    click(again, "resume-run")
    run = again.session_state["live-run"]
    assert run.model.name == "claude-test" and run.model.config.base_url == fake_api.url
    assert len(run.trace) == 3
    asked = len(fake_api.requests)
    click(again, "live-to-end")  # the gate is back on, as it was saved: each tool waits for Run
    while not run.done:  # the next model call goes out with the key typed again
        click(again, "live-approve" if [b for b in again.button if b.key == "live-approve"] else "live-step")
    assert run.done and len(fake_api.requests) > asked
    assert sent_key(fake_api.headers[-1]) == "sk-ant-typed-again-7"


def test_reloading_a_permalink_does_not_save_the_same_run_again(runs_folder):
    at = app()
    cookie = issued(at)
    for _ in range(3):
        click(at, "live-step")
    assert len(runs_of(runs_folder, cookie)) == 1
    assert copied_link(at) == "scenario=two-tools&step=3"
    for _ in range(2):  # two reloads of the URL the page wrote: ?scenario=two-tools&step=3
        again = reload(at, scenario="two-tools", step="3")
        assert len(again.session_state["live-run"].trace) == 3  # the link rebuilt it
        assert len(runs_of(runs_folder, cookie)) == 1  # no copy saved
    click(again, "live-step")  # going further is new work: it is saved
    assert len(runs_of(runs_folder, cookie)) == 2
    box = again.selectbox(key="saved-run")
    assert len(box.options) == 1 and "3 steps" in box.format_func(box.value)


def test_two_tabs_that_resume_one_run_never_mix_their_steps(runs_folder):
    at = app()
    cookie = issued(at)
    for _ in range(4):
        click(at, "live-step")
    first, second = reload(at), reload(at)  # two tabs of the same browser
    click(first, "resume-run")
    click(second, "resume-run")  # the second takes the run over
    click(first, "live-step")  # the first tab's next step cannot go into the run the second now writes
    assert any("resumed in another tab" in t.value for t in first.toast)
    click(second, "live-step")
    assert not second.toast
    for _ in range(2):
        click(first, "live-step")
        click(second, "live-step")
    runs = runs_of(runs_folder, cookie)
    assert sorted(r.steps for r in runs) == [7, 7]  # two runs of 7 steps: the second tab's, and the first's, new
    store = RunsStore(runs_folder)
    owner = browser_id.owner(browser_id.verify(store.secret(), cookie))
    reference = app()
    for _ in range(7):
        click(reference, "live-step")
    stages = [s.stage for s in reference.session_state["live-run"].trace.steps]
    for saved in runs:
        trace, _ = store.load(owner, saved.id)
        assert [s.stage for s in trace.steps] == stages  # each as one tab stepped it, never both mixed
    for tab in (first, second):
        assert [s.stage for s in tab.session_state["live-run"].trace.steps] == stages


def test_a_store_that_cannot_be_opened_says_so_and_the_lesson_goes_on(tmp_path, monkeypatch):
    import sqlite3

    db = sqlite3.connect(tmp_path / "runs.sqlite3")
    db.execute("PRAGMA user_version=99")  # written by a newer Loopscope
    db.close()
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))
    at = app()
    assert any("Saved runs are not available on this server" in e.value and "newer Loopscope" in e.value
               for e in at.error)
    for _ in range(2):
        click(at, "live-step")
    assert len(at.session_state["live-run"].trace) == 2


def test_copy_link_copies_only_what_a_permalink_holds():
    at = app(scenario="two-tools", step="2", lang="ja", ref="slides")
    assert copied_link(at) == "scenario=two-tools&step=2&lang=ja"  # in the permalink's order, nothing else
    click(at, "live-step")
    assert copied_link(at) == "scenario=two-tools&step=3&lang=ja"  # it follows the step
    at.toggle(key="present").set_value(True).run()
    assert copied_link(at) == "scenario=two-tools&step=3&lang=ja"  # and presenter mode has it too
    at.toggle(key="present").set_value(False).run()
    at.selectbox(key="set-scenario").set_value("free task").run()
    at.text_area(key="set-task").set_value("What Python version is installed?")
    click(at, "new-run")
    assert copied_link(at) is None  # a free task: no link can rebuild it, and the button says so
    from streamlit.testing.v1 import AppTest

    replay = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    replay.switch_page("pages/replay.py")
    replay.query_params.update({"sample": "two-tools", "step": "4"})
    replay.run()
    assert copied_link(replay) == "sample=two-tools&step=4"


def test_a_resumed_run_has_the_files_its_commands_wrote_and_may_change_them(runs_folder):
    at = app(scenario="hello-py")
    click(at, "live-to-end")
    before = at.session_state["live-run"]
    assert before.done and (Path(before.workspace) / "hello.py").is_file()
    again = reload(at)
    click(again, "resume-run")
    run = again.session_state["live-run"]
    assert run is not before and Path(run.workspace) != Path(before.workspace)  # a workspace of its own
    copied = Path(run.workspace) / "hello.py"
    assert copied.read_text() == (Path(before.workspace) / "hello.py").read_text()
    changed = run.tools.run("bash", {"command": "echo 'print(2)' > hello.py && python3 hello.py"})
    assert changed.content == "2" and not changed.is_error, changed.content  # the sandbox's user owns the copy


def _saved_with_the_gate_on(fake_api, runs_folder):
    """A real model's run with the gate on (a real model's default), saved at its first tool_use, and its owner."""
    at = app()
    cookie = issued(at)
    choose_server(at, fake_api.url, "sk-ant-gate-1", gate=None)
    assert at.toggle(key="set-approve").value
    click(at, "live-to-end")  # stops before the tool, waiting for Run or Deny
    assert at.button(key="live-approve")
    [saved] = runs_of(runs_folder, cookie)
    store = RunsStore(runs_folder)
    return at, store, browser_id.owner(browser_id.verify(store.secret(), cookie)), saved


def _resumed_waits_for_approval(at, fake_api) -> None:
    again = reload(at)  # a new session: the sidebar is back to the scripted model, whose gate is off
    assert again.radio(key="set-model").value == "scripted"
    again.text_input(key="resume-api-key").set_value("sk-ant-gate-2")
    click(again, "resume-run")
    run = again.session_state["live-run"]
    assert again.toggle(key="set-approve").value
    # The run was saved waiting at its tool_use: resumed, it waits again; nothing runs the tool but Run.
    assert run.trace.steps[-1].stage == "decide" and again.button(key="live-approve")
    assert again.button(key="live-step").disabled and again.button(key="live-to-end").disabled
    click(again, "live-approve")
    assert run.trace.steps[-1].stage == "run_tool"


def test_the_approval_gate_is_back_on_after_a_reload_and_resume(fake_api, runs_folder):
    at, store, owner, saved = _saved_with_the_gate_on(fake_api, runs_folder)
    assert '"approve": true' in store.journal(owner, saved.id)[0]
    _resumed_waits_for_approval(at, fake_api)


def test_a_real_model_run_saved_without_a_gate_setting_resumes_with_the_gate_on(fake_api, runs_folder):
    import sqlite3

    at, store, owner, saved = _saved_with_the_gate_on(fake_api, runs_folder)
    with sqlite3.connect(runs_folder / "runs.sqlite3") as db:  # as a version that did not save the gate left it
        db.execute("UPDATE runs SET settings = json_remove(settings, '$.approve') WHERE id = ?", (saved.id,))
    assert '"approve"' not in store.journal(owner, saved.id)[0]
    _resumed_waits_for_approval(at, fake_api)


def test_the_gate_turned_off_during_a_run_comes_back_off(fake_api, runs_folder):
    at, store, owner, saved = _saved_with_the_gate_on(fake_api, runs_folder)
    at.toggle(key="set-approve").set_value(False).run()
    click(at, "live-step")  # the tool runs without asking; the step is saved with the gate as it is now
    assert '"approve": false' in store.journal(owner, saved.id)[0]
    again = reload(at)
    again.text_input(key="resume-api-key").set_value("sk-ant-gate-2")
    click(again, "resume-run")
    assert again.session_state["live-run"].trace.steps[-1].stage == "run_tool"
    assert not again.toggle(key="set-approve").value
