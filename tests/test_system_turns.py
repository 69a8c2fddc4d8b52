"""A harness's `role: "system"` turns among the messages (Claude Code 2.1's environment block): passed over by the
pairing rules, kept by the transcript (version 3, written only when a history holds one), drawn as the harness's."""

from __future__ import annotations

import json

import pytest

from loop.engine import rules, scripted
from loop.files import transcript
from loop.yours.reading import read
from loop.yours.recorder import Recorder
from loop.yours.recording import Recording

ENV = {"role": "system", "content": "# Environment\nPrimary working directory: /w"}
USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]}


def test_the_pairing_rules_pass_over_a_system_turn():
    task = {"role": "user", "content": "List the files"}
    assert rules.check([task, ENV, USE, RESULT]) == []
    assert rules.check([task, USE, ENV, RESULT]) == []  # between a tool_use and its result too
    assert [p.status for p in rules.pairs([task, USE, ENV, RESULT])] == ["paired"]
    broken = rules.check([task, ENV, USE, ENV, {"role": "user", "content": "go on"}])
    assert [v.where for v in broken] == ["messages.2"]  # the unanswered tool_use, named by its own index
    assert "tool_use` ids were found without `tool_result`" in broken[0].message
    # the scripted model, like the API, takes such a request
    status, _ = scripted.respond({"model": "m", "max_tokens": 100, "messages": [task, ENV, USE, ENV, RESULT]})
    assert status == 200


def _recorded(*requests: dict) -> Recording:
    recording = Recording(source="", scenario="", lang="en")
    recorder = Recorder(recording)
    for request in requests:
        recorder.call("POST", "/v1/messages", json.dumps(request).encode())
    return recording


TOOLS = [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                          "required": ["command"]}}]


def test_a_transcript_with_a_system_turn_is_version_3_and_older_ones_stay_2(tmp_path):
    first = {"model": "m", "max_tokens": 100, "tools": TOOLS,
             "messages": [{"role": "user", "content": "List the files"}, ENV]}
    recording = _recorded(first)
    answer = recording.exchanges[0].response
    use = next(b for b in answer["content"] if b["type"] == "tool_use")
    second = dict(first, messages=first["messages"] + [
        {"role": "assistant", "content": answer["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "a.txt"}]}])
    recording = _recorded(first, second)
    trace = read(recording, {"command": "agent", "upstream": False}).trace
    data = json.loads(transcript.dumps(trace))
    assert data["version"] == 3 and data["messages"][1] == ENV
    again = transcript.loads(transcript.dumps(trace))
    assert [s.stage for s in again.steps][:2] == ["user_request", "harness"]
    assert transcript.dumps(again) == transcript.dumps(trace)  # loaded and saved: the same file
    # a file of version 2 may not hold one (a reader of version 2 would not know it)
    data["version"] = 2
    with pytest.raises(transcript.TranscriptError, match=r"messages\[1\].role: must be 'user' or 'assistant'"):
        transcript.loads(json.dumps(data))
    # a run without one is written as it always was
    sample = transcript.load("samples/two-tools.json")
    assert json.loads(transcript.dumps(sample))["version"] == 2


def test_the_page_draws_a_system_turn_as_the_harness_s():
    from pages.views.history import message_html

    html = message_html(1, ENV)
    assert 'class="ls-msg ls-system"' in html and "a harness message inside messages" in html
    assert "Primary working directory: /w" in html  # its words, drawn as a text block is


def test_replay_draws_a_recorded_harness_s_run_step_by_step():
    """A recording with a system turn and a call beside the loop opens in Replay, and every step draws."""
    from tests.apptest import app, click
    from tests.tables import history_text, table

    task = {"role": "user", "content": "List the files"}
    first = {"model": "m", "max_tokens": 128000, "tools": TOOLS, "messages": [task, ENV]}
    title = {"model": "small", "max_tokens": 32, "messages": [task]}
    answer = _recorded(first).exchanges[0].response
    use = next(b for b in answer["content"] if b["type"] == "tool_use")
    second = dict(first, messages=[task, ENV, {"role": "assistant", "content": answer["content"]},
                                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                                                 "content": "a.txt"}]}])
    trace = read(_recorded(title, first, second), {"command": "claude", "upstream": False}).trace
    at = app("pages/replay.py")
    at.file_uploader(key="replay-upload").set_value(("t.json", transcript.dumps(trace).encode(),
                                                     "application/json")).run()
    assert not at.exception, at.exception
    replayed = at.session_state["replay"]["trace"]
    for _ in range(len(replayed) - 1):
        click(at, "replay-step")
        assert not at.exception, at.exception
    assert "a harness message inside messages" in history_text(at)
    statuses = list(table(at, "status")["status"])
    # the system turn between the tool_use and its result breaks no pair (the title call's answer, beside the
    # loop, holds a tool_use nobody runs: waiting)
    assert statuses.count("paired") == 1 and "orphan" not in statuses
