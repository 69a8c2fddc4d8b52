"""Refresh loses nothing: a live run is saved after every step, and "Saved runs" brings it back after a reload.

A reload is a fresh AppTest (a new Streamlit session, nothing in session_state)
opened with the same URL, so the same `?session=` id; another browser has
another id and sees none of these runs.
"""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import app, choose_server, click

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def sent_key(headers: dict) -> str | None:
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)


def session_of(at: AppTest) -> str:
    sid = at.query_params["session"]
    return sid[0] if isinstance(sid, list) else sid


def test_a_reload_resumes_the_same_trace_and_cursor_and_stepping_goes_on(runs_folder):
    at = app()
    sid = session_of(at)
    assert len(sid) >= 16  # a random id, put into the URL on the first visit
    for _ in range(6):
        click(at, "live-step")
    click(at, "live-back")
    before = at.session_state["live-run"]
    assert (len(before.trace), before.trace.cursor) == (6, 4)
    messages = json.dumps(before.trace.messages)
    assert list((runs_folder / sid).glob("*.jsonl")), "the run is saved under this browser's id"

    again = app(session=sid)  # a reload: a new session, the same URL
    fresh = again.session_state["live-run"]
    assert fresh is not before and len(fresh.trace) == 0
    assert again.expander and "Saved runs · 1" in [e.label for e in again.expander]
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

    # The same journal went on: a second reload finds one run, ended, with all 10 steps.
    third = app(session=sid)
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
    other = app()  # no session in its URL: a browser of its own
    assert session_of(other) != session_of(at)
    assert "Saved runs · 0" in [e.label for e in other.expander]
    assert not [s for s in other.selectbox if s.key == "saved-run"]


def test_a_malformed_session_id_in_the_url_is_replaced():
    at = app(session="../../etc")
    sid = session_of(at)
    assert sid != "../../etc" and ".." not in sid


def test_delete_removes_a_saved_run(runs_folder):
    at = app()
    sid = session_of(at)
    click(at, "live-step")
    at.selectbox(key="set-scenario").set_value("list-files")
    click(at, "new-run")
    click(at, "live-step")
    click(at, "live-step")
    # The current run is not offered (it is the one being saved); the first is.
    box = at.selectbox(key="saved-run")
    assert len(box.options) == 1 and "1 steps" in box.format_func(box.value)
    click(at, "delete-run")
    assert "Saved runs · 0" in [e.label for e in at.expander]
    assert any("Deleted the saved run" in s.value for s in at.success)
    reload = app(session=sid)
    box = reload.selectbox(key="saved-run")
    assert len(box.options) == 1 and "2 steps" in box.format_func(box.value)  # only the list-files run
    assert len(list((runs_folder / sid).glob("*.jsonl"))) == 1


def test_a_real_model_run_is_saved_without_its_key_and_asks_for_it_again(fake_api, runs_folder):
    at = app()
    sid = session_of(at)
    choose_server(at, fake_api.url, "sk-ant-secret-key-42", gate=None)
    for _ in range(3):
        click(at, "live-step")
    saved = "".join(p.read_text() for p in (runs_folder / sid).iterdir() if p.is_file())
    assert "claude-test" in saved and fake_api.url in saved
    assert "sk-ant-secret-key-42" not in saved and "api_key" not in saved

    again = app(session=sid)  # a reload: the key typed before is gone with the old session
    key_field = again.text_input(key="resume-api-key")
    assert key_field.value == "" and "never saved" in key_field.help
    key_field.set_value("sk-ant-typed-again-7")
    click(again, "resume-run")
    run = again.session_state["live-run"]
    assert run.model.name == "claude-test" and run.model.config.base_url == fake_api.url
    assert len(run.trace) == 3
    asked = len(fake_api.requests)
    click(again, "live-to-end")  # the next model call goes out with the key typed again
    assert run.done and len(fake_api.requests) > asked
    assert sent_key(fake_api.headers[-1]) == "sk-ant-typed-again-7"


def test_reloading_a_permalink_does_not_save_the_same_run_again(runs_folder):
    at = app()
    sid = session_of(at)
    for _ in range(3):
        click(at, "live-step")
    assert len(list((runs_folder / sid).glob("*.jsonl"))) == 1
    for _ in range(2):  # two reloads of the URL the page wrote: ?session=…&scenario=two-tools&step=3
        again = AppTest.from_file(APP, default_timeout=60)
        again.query_params.update({"session": sid, "scenario": "two-tools", "step": "3"})
        again.run()
        assert not again.exception, again.exception
        assert len(again.session_state["live-run"].trace) == 3  # the link rebuilt it
        assert len(list((runs_folder / sid).glob("*.jsonl"))) == 1  # no copy saved
    click(again, "live-step")  # going further is new work: it is saved
    assert len(list((runs_folder / sid).glob("*.jsonl"))) == 2
    box = again.selectbox(key="saved-run")
    assert len(box.options) == 1 and "3 steps" in box.format_func(box.value)


def test_the_journal_keeps_the_last_cursor_and_a_cut_line_loses_only_itself(tmp_path):
    from loop.runs import RunsFolder
    from loop.transcript import loads

    trace = loads((ROOT / "samples" / "two-tools.json").read_text())
    folder = RunsFolder(tmp_path)
    trace.goto(5)
    folder.save_step("r1", trace)
    for k in (2, 7, 3):  # Back and forth: one short line each, nothing rewritten
        folder.save_cursor("r1", k)
    assert folder.load("r1")[0].cursor == 3
    assert [r.steps for r in folder.list()] == [len(trace)]  # cursor lines are not steps
    path = tmp_path / "r1.jsonl"
    path.write_bytes(path.read_bytes() + b'{"cursor": 8')  # a crash in the middle of the next move
    loaded, _ = folder.load("r1")
    assert (len(loaded), loaded.cursor) == (len(trace), 3)
    assert [r.steps for r in RunsFolder(tmp_path).list()] == [len(trace)]


def test_a_journal_saved_with_a_cursor_file_still_opens_at_its_cursor(tmp_path):
    from loop.runs import RunsFolder
    from loop.transcript import loads

    trace = loads((ROOT / "samples" / "two-tools.json").read_text())
    folder = RunsFolder(tmp_path)
    folder.save_step("old", trace)
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"".join(line for line in path.read_bytes().splitlines(keepends=True)
                              if not line.startswith(b'{"cursor"')))  # as journals were written before
    (tmp_path / "old.cursor").write_text("4")
    assert RunsFolder(tmp_path).load("old")[0].cursor == 4
