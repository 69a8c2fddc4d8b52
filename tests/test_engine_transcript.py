"""Transcripts (loop/files/transcript.py): a saved run loads as the same run; a broken file says what and where."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop import start
from loop.files import transcript
from loop.views.narrate import describe
from loop.engine.scenarios import SCENARIOS
from loop.files.transcript import TranscriptError
from tests.searches import examples
from tests.test_engine_threads import tool_uses_at


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every scenario run once, to the end."""
    done = {}
    for name in SCENARIOS:
        run = start(scenario=name, tool_timeout=10)
        run.run_to_end()
        done[name] = run
    return done


@pytest.fixture
def saved(runs) -> dict:
    """The two-tools transcript as plain JSON data, to break."""
    return json.loads(transcript.dumps(runs["two-tools"].trace))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_save_and_load_give_the_same_run(runs, name, tmp_path):
    trace = runs[name].trace
    path = tmp_path / "t.json"
    transcript.save(trace, path)
    loaded = transcript.load(path)
    assert [s.to_dict() for s in loaded.steps] == [s.to_dict() for s in trace.steps]
    assert loaded.messages == trace.messages
    assert loaded.meta == trace.meta
    assert [(t.id, t.parent, t.parent_tool_use_id, t.system, t.tools, t.messages) for t in loaded.threads.values()] \
        == [(t.id, t.parent, t.parent_tool_use_id, t.system, t.tools, t.messages) for t in trace.threads.values()]
    assert loaded.cursor == 0  # a replay starts at the first step
    for i in range(len(trace)):
        assert describe(loaded, i) == describe(trace, i)
        assert loaded.request_at(i) == trace.request_at(i)
        assert loaded.messages_at(i) == trace.messages_at(i)
        assert loaded.results_at(i) == trace.results_at(i)
        assert tool_uses_at(loaded, i) == tool_uses_at(trace, i)
        assert loaded.new_blocks_at(i) == trace.new_blocks_at(i)
    assert transcript.dumps(loaded) == transcript.dumps(trace)
    assert transcript.violations(loaded) == []


def test_the_file_is_the_documented_shape(runs):
    data = json.loads(transcript.dumps(runs["hello-py"].trace))
    assert data["format"] == "loopscope-transcript" and data["version"] == 2
    for key in ("model", "scripted", "system", "tools", "max_tokens", "task", "max_turns", "created"):
        assert key in data, key
    assert data["messages"][0] == {"role": "user", "content": data["task"]}
    assert [s["stage"] for s in data["steps"]][:4] == ["user_request", "call_model", "append_assistant", "decide"]
    for step in data["steps"]:
        assert set(step) == {"stage", "turn_count", "transition_reason", "stop_reason", "n_messages", "input_tokens",
                             "output_tokens", "ended", "time", "detail", "thread"}
        assert step["thread"] == "main"
    assert data["threads"] == [{"id": "main", "parent": None, "parent_tool_use_id": None, "system": data["system"],
                                "tools": data["tools"], "label": ""}]  # its messages are the top-level ones
    call = data["steps"][1]
    # The request at a call_model step is its `request` plus the history up to `n_messages`.
    assert "messages" not in call["detail"]["request"]
    assert {**call["detail"]["request"], "messages": data["messages"][:call["n_messages"]]} == \
        runs["hello-py"].trace.request_at(1)


def test_the_text_is_utf8_not_escaped(tmp_path):
    run = start("今日の日付は?", tool_timeout=10)
    run.run_to_end()
    transcript.save(run.trace, tmp_path / "t.json")
    raw = (tmp_path / "t.json").read_bytes()
    assert "今日の日付は?".encode() in raw
    assert transcript.load(tmp_path / "t.json").meta["task"] == "今日の日付は?"


def broken(data: dict, change) -> bytes:
    data = copy.deepcopy(data)
    change(data)
    return json.dumps(data).encode()


def load_error(raw: bytes | str) -> str:
    with pytest.raises(TranscriptError) as caught:
        transcript.loads(raw)
    return str(caught.value)


def test_bad_json_says_line_and_column():
    text = '{\n "format": "loopscope-transcript",\n "version": 1,\n oops\n}'
    assert load_error(text) == "not valid JSON: Expecting property name enclosed in double quotes at line 4, column 2"


def test_not_utf8():
    assert load_error(b'{"format": "\xff"}').startswith("not UTF-8 text (byte 12)")


def test_not_an_object():
    assert load_error("[1, 2]") == "top level: a transcript is a JSON object"


def test_wrong_format(saved):
    error = load_error(broken(saved, lambda d: d.update(format="something-else")))
    assert error == "format: expected 'loopscope-transcript', found 'something-else' (is this a Loopscope transcript?)"


def test_wrong_version(saved):
    assert load_error(broken(saved, lambda d: d.update(version=4))) == \
        "version: this Loopscope reads versions 1 to 3, the file is version 4"


@pytest.mark.parametrize("field", ["stage", "turn_count", "n_messages"])
def test_a_missing_step_field_is_named_with_its_step(saved, field):
    assert load_error(broken(saved, lambda d: d["steps"][3].pop(field))) == f"steps[3]: missing {field}"


def test_several_missing_fields_are_all_named(saved):
    def drop(d):
        del d["steps"][5]["stage"], d["steps"][5]["n_messages"]
    assert load_error(broken(saved, drop)) == "steps[5]: missing stage, n_messages"


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.pop("messages"), "messages: missing, or not a list"),
    (lambda d: d.pop("steps"), "steps: missing, or not a list"),
    (lambda d: d["messages"].__setitem__(1, "hi"), "messages[1]: not an object"),
    (lambda d: d["messages"][2].update(role="tool"), "messages[2].role: must be 'user' or 'assistant', found 'tool'"),
    (lambda d: d["messages"][0].pop("content"), "messages[0].content: missing, or not a string or list"),
    (lambda d: d["steps"][2].update(stage="think"), "steps[2].stage: unknown stage 'think'"),
    (lambda d: d["steps"][2].update(stage=["decide"]), "steps[2].stage: unknown stage ['decide']"),
    (lambda d: d["steps"][4].update(n_messages=1), "steps[4].n_messages: 1 does not fit a history of 4 messages (after 2)"),
    (lambda d: d["steps"][9].update(n_messages=5), "steps[9].n_messages: 5 does not fit a history of 4 messages (after 4)"),
    (lambda d: d["steps"][1].update(turn_count="one"), "steps[1].turn_count: not a whole number of at most 15 digits: 'one'"),
    (lambda d: d["steps"][1].update(turn_count=10**400),
     "steps[1].turn_count: not a whole number of at most 15 digits: a number of 401 digits"),
    (lambda d: d["steps"][1].update(input_tokens="many"),
     "steps[1].input_tokens: not a whole number of at most 15 digits: 'many'"),
    (lambda d: d["steps"][1].update(output_tokens=-1), "steps[1].output_tokens: not a whole number of at most 15 digits: -1"),
    (lambda d: d["steps"][1].update(input_tokens=10**399),
     "steps[1].input_tokens: not a whole number of at most 15 digits: a number of 400 digits"),
    (lambda d: d["steps"][1].update(time=[1]), "steps[1].time: not a number of seconds: [1]"),
    (lambda d: d["steps"][1].update(time=10**399), "steps[1].time: not a number of seconds: a number of 400 digits"),
    (lambda d: d["steps"][1].update(detail="x"), "steps[1].detail: not an object"),
    (lambda d: d["steps"][1]["detail"].pop("request"), "steps[1].detail: a call_model step needs its request and response"),
    (lambda d: d["steps"][4]["detail"].pop("tool_result"), "steps[4].detail: a run_tool step needs its tool_result"),
])
def test_each_broken_part_is_named(saved, change, expected):
    assert load_error(broken(saved, change)) == expected


def test_ids_that_do_not_pair(saved):
    def rename(d):
        d["messages"][2]["content"][1]["tool_use_id"] = "toolu_NOBODY"
    asked = saved["messages"][1]["content"][2]["id"]
    error = load_error(broken(saved, rename))
    assert error.startswith("messages: the tool_use/tool_result ids do not pair: ")
    assert f"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: {asked}." in error
    assert "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_NOBODY." in error
    # Not strict (importers, `check`): it loads, so the broken pair can be shown.
    trace = transcript.loads(broken(saved, rename), strict=False)
    assert len(trace.messages) == 4


def test_a_file_that_cannot_be_read(tmp_path):
    with pytest.raises(TranscriptError) as caught:
        transcript.load(tmp_path / "nothing.json")
    assert str(caught.value) == f"{tmp_path / 'nothing.json'}: cannot read it (No such file or directory)"


def test_json_nested_too_deeply():
    assert "nested too deeply" in load_error("[" * 100_000)


# Any one value of a real transcript replaced by any JSON value: the loader either
# loads it or says what is wrong; what loads can be narrated step by step.
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.integers(min_value=0), value=JSON | st.just("<delete>"))
def test_no_broken_file_gets_past_the_loader_unexplained(saved, where, value):
    paths = [p for p in _paths(saved) if p]
    path = paths[where % len(paths)]
    data = copy.deepcopy(saved)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if value == "<delete>":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    for strict in (True, False):
        try:
            trace = transcript.loads(json.dumps(data), strict=strict)
        except TranscriptError as exc:
            assert str(exc)
            continue
        for i in range(len(trace)):
            assert describe(trace, i).startswith((f"[{i + 1}] turn ", f"[{i + 1}] before turn 1 · "))
