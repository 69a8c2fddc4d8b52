"""A learner's run saved on Your loop and opened in Replay: their code is drawn beside the views, the step's line lit,
as Your loop draws it; a transcript whose learner's source is not a string, or too large, replays without it."""

import json

import pytest

from loop.yours.listing import CHAPTER_LOOP
from loop.yours.reading import read
from pages.views.yours import YOURS

from .apptest import app, download, run
from .learner import record

CALL = "        response = client.messages.create("


def html(at) -> str:
    return "".join(h.value for h in at.get("html"))


def saved_on_yours(source: str = CHAPTER_LOOP) -> bytes:
    """The transcript Save transcript on Your loop sends, as a learner's browser gets it."""
    at = app("pages/yours.py")
    at.session_state[YOURS] = read(record(source, scenario="recover"))
    run(at)
    name, data = download(at, "yours-save")
    assert name == "loopscope-yours-recover.json"
    return data


def replay(name: str, data: bytes):
    at = app("pages/replay.py")
    at.file_uploader(key="replay-upload").set_value((name, data, "application/json")).run()
    assert not at.exception, at.exception
    assert at.session_state["replay"]["name"] == name
    return at


def test_a_learners_saved_run_replays_with_their_code_beside_and_the_steps_line_lit():
    data = saved_on_yours()
    assert json.loads(data)["yours"] == {"source": CHAPTER_LOOP, "scenario": "recover"}
    at = replay("loopscope-yours-recover.json", data)
    assert 'id="ls-yours-code"' in html(at) and 'class="lit"' not in html(at)  # step 1: before any line of theirs
    assert "**Your code**" in [m.value for m in at.markdown]
    at.button(key="replay-step").click()
    run(at)
    line = CHAPTER_LOOP.splitlines().index(CALL) + 1
    assert f'<div class="lit" data-line="{line}">' in html(at)
    assert f"**Your code** · line {line}" in [m.value for m in at.markdown]


def test_a_sample_replays_without_a_learners_code():
    at = app("pages/replay.py")
    assert 'id="ls-yours-code"' not in html(at)


@pytest.mark.parametrize("source", [["not", "a", "string"], {"a": 1}, 12, "#" * (65 * 1024)])
def test_a_transcript_whose_learners_source_is_not_a_string_or_huge_replays_without_it(source):
    saved = json.loads(saved_on_yours())
    saved["yours"]["source"] = source
    at = replay("hostile.json", json.dumps(saved).encode())
    at.button(key="replay-step").click()
    run(at)
    assert 'id="ls-yours-code"' not in html(at) and len(at.session_state["replay"]["trace"]) > 1


@pytest.mark.parametrize("yours", ["a string", None, [1, 2]])
def test_a_transcript_whose_yours_is_not_a_mapping_replays_without_it(yours):
    saved = json.loads(saved_on_yours())
    saved["yours"] = yours
    at = replay("hostile.json", json.dumps(saved).encode())
    assert 'id="ls-yours-code"' not in html(at)
