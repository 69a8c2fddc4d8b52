"""The Replay page through AppTest: samples, uploads, warnings, a broken file, a long history."""

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from loop.files import transcript
from loop.importers import Imported, Note
from loop.importers.notes import on_line
from tests.apptest import app, click, download
from tests.synthetic import long_transcript
from tests.tables import history_indexes, history_text, table

ROOT = Path(__file__).resolve().parent.parent


def replay_page() -> AppTest:
    return app("pages/replay.py")


def upload(at: AppTest, name: str, data: bytes) -> None:
    at.file_uploader(key="replay-upload").set_value((name, data, "application/json")).run()
    assert not at.exception, at.exception


def test_a_sample_opens_first_and_steps_like_a_live_run():
    at = replay_page()
    replay = at.session_state["replay"]
    assert replay["name"] == "two-tools.json" and replay["format"] == "loopscope"
    trace = replay["trace"]
    assert trace.cursor == 0
    assert [b.label for b in at.button][:4] == ["First", "Back", "Step", "Run to end"]
    click(at, "replay-to-end")
    assert trace.cursor == len(trace) - 1
    assert list(table(at, "status")["status"]) == ["paired", "paired"]
    assert table(at, "stage").iloc[-1]["stop_reason"] == "end_turn"
    assert at.button(key="replay-step").disabled  # a replay has nothing more to run
    click(at, "replay-back")
    click(at, "replay-first")
    assert trace.cursor == 0 and len(trace) == 10


def test_picking_another_sample_replays_it():
    at = replay_page()
    at.selectbox(key="replay-sample").set_value("recover").run()
    replay = at.session_state["replay"]
    assert replay["name"] == "recover.json"
    click(at, "replay-to-end")
    pairs = table(at, "status")
    assert list(pairs["is_error"]) == ["true", "false"] and list(pairs["status"]) == ["paired", "paired"]
    assert "is_error" in history_text(at)  # the error badge in the history


def test_an_uploaded_transcript_replays_and_nothing_runs():
    from loop import start

    run = start(scenario="list-files")
    run.run_to_end()
    at = replay_page()
    assert at.selectbox(key="replay-sample").value == "two-tools"  # the sample the page opened on
    upload(at, "mine.json", transcript.dumps(run.trace).encode())
    replay = at.session_state["replay"]
    assert replay["name"] == "mine.json" and len(replay["trace"]) == len(run.trace)
    assert any("Replaying mine.json" in m.value for m in at.markdown)
    assert at.selectbox(key="replay-sample").value is None  # no sample is named while the file is replayed
    click(at, "replay-to-end")
    assert len(replay["trace"]) == len(run.trace)


def test_a_broken_upload_says_why_and_keeps_the_replay_and_the_session():
    at = app()
    click(at, "live-step")
    live = at.session_state["live-run"]
    at.switch_page("pages/replay.py").run()
    before = at.session_state["replay"]
    click(at, "replay-step")
    click(at, "replay-step")

    upload(at, "broken.json", b'{"format": "loopscope-transcript", "version": 1, "messages": [')
    assert not at.exception
    message = at.error[0].value
    assert "This file cannot be replayed" in message and "broken.json" in message and "not valid JSON" in message
    assert "The replay below is unchanged" in message
    assert at.session_state["replay"] is before and before["trace"].cursor == 2
    click(at, "replay-step")  # the page still works, the error stays while the file is there
    assert before["trace"].cursor == 3 and at.error

    at.switch_page("pages/step_through.py").run()
    assert at.session_state["live-run"] is live and len(live.trace) == 1


def test_import_warnings_are_shown_above_the_replay(monkeypatch):
    import pages.views.replay as opener

    trace = transcript.load(ROOT / "samples" / "list-files.json")
    monkeypatch.setattr(opener, "import_isolated", lambda data, name, **options: Imported(
        trace, "claude-code", [Note("{place}: a summary record was passed over", place=on_line(i)) for i in range(12)]))
    at = replay_page()
    upload(at, "session.jsonl", b"{}")
    warning = at.warning[0].value
    assert "12 warnings while importing" in warning
    assert "line 0: a summary record was passed over" in warning and "… and 2 more" in warning
    assert "format `claude-code`" in " ".join(m.value for m in at.markdown)


def test_a_long_history_draws_a_bounded_window():
    at = replay_page()
    upload(at, "long.json", long_transcript(120).encode())
    trace = at.session_state["replay"]["trace"]
    assert len(trace.messages) == 120
    click(at, "replay-to-end")
    assert history_indexes(at) == list(range(108, 120))  # the newest dozen: 108 is a multiple of the snap (4)
    assert any("108 earlier not drawn" in c.value for c in at.caption)
    click(at, "replay-earlier")
    assert history_indexes(at) == list(range(96, 108))
    click(at, "replay-later")
    assert history_indexes(at)[-1] == 119
    # The LoopState table draws the rows around the cursor, not all of them.
    steps = table(at, "stage")
    assert len(steps) < len(trace) and steps.iloc[-1]["now"] == "▶" and steps.iloc[-1]["step"] == str(len(trace))
    # The Pairs table draws the newest pairs; "Show all pairs" draws every one, in a grid.
    pairs = table(at, "status")
    total = 59  # one tool_use a turn: (120 messages - 1 request - 1 answer) / 2
    assert len(pairs) == 12 and pairs["id"].iloc[-1] == "toolu_000059"
    assert any("12 of 59 rows" in c.value for c in at.caption)
    at.toggle(key="replay-all-pairs").set_value(True).run()
    assert not at.exception
    grid = [d.value for d in at.dataframe if "status" in d.value.columns]
    assert len(grid) == 1 and len(grid[0]) == total and list(grid[0]["status"].unique()) == ["paired"]


def test_a_transcript_with_huge_numbers_where_the_loader_allows_them_replays_every_view():
    # Only a step's own counts are checked on loading; a response's usage, a duration or a count in a
    # step's detail may hold any number. 400 digits: more than any C integer or float holds.
    saved = json.loads((ROOT / "samples" / "two-tools.json").read_text())
    big = 10**399
    for i in (1, 7):  # the two calls
        saved["steps"][i]["detail"].update(duration_ms=big, retries=big)
        saved["steps"][i]["detail"]["response"]["usage"].update(input_tokens=big, output_tokens=-big)
    saved["steps"][4]["detail"]["duration_ms"] = big
    saved["steps"][6]["detail"]["results"] = big
    at = replay_page()
    upload(at, "huge.json", json.dumps(saved).encode())
    at.toggle(key="replay-growth").set_value(True)
    at.session_state["replay-raw"] = True
    at.session_state["replay-exports"] = True
    at.run()
    for _ in range(9):
        click(at, "replay-step")  # click() fails on any exception the page shows
    assert "Step 10 of 10" in " ".join(m.value for m in at.markdown)
    for key in ("replay-export-md", "replay-export-steps", "replay-export-pairs", "replay-save"):
        assert download(at, key)[1]
    assert transcript.loads(download(at, "replay-save")[1]).steps[1].detail["duration_ms"] == big
