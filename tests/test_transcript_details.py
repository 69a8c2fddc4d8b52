"""A step's detail: its stage's type, checked once at load, and written back as it was read."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import pytest

from loop.engine import details
from loop.files import transcript
from loop.engine.details import CallModelDetail, DecideDetail, RefusedDetail, RunToolDetail
from loop.engine.trace import Step

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").rglob("*.json"))


def sample(name: str = "hello-py") -> dict:
    return json.loads((ROOT / "samples" / f"{name}.json").read_text(encoding="utf-8"))


def first(data: dict, stage: str) -> int:
    return next(i for i, s in enumerate(data["steps"]) if s["stage"] == stage)


@pytest.mark.parametrize("stage, key, value, said", [
    ("decide", "continues", "yes", "boolean expected, found 'yes'"),
    ("decide", "why", ["words"], "string expected, found ['words']"),
    ("run_tool", "is_error", 0, "boolean expected, found 0"),
    ("run_tool", "duration_ms", "fast", "integer or number expected, found 'fast'"),
    ("write_back", "results", True, "integer expected, found True"),
    ("user_request", "task", {"text": "hi"}, "string expected, found {'text': 'hi'}"),
    ("call_model", "retries", 1.5, "integer expected, found 1.5"),
])
def test_a_detail_key_of_the_wrong_type_is_refused_at_load_naming_the_step_and_key(stage, key, value, said):
    data = sample()
    i = first(data, stage)
    data["steps"][i]["detail"][key] = value
    with pytest.raises(transcript.TranscriptError) as caught:
        transcript.loads(json.dumps(data))
    assert str(caught.value) == f"steps[{i}].detail.{key}: {said}"


def test_a_key_no_stage_knows_survives_load_and_save_in_its_place():
    data = sample("parallel")
    i = first(data, "run_tool")
    detail = data["steps"][i]["detail"]
    keys = list(detail)
    # a later version's facts, between the known keys and at the end, of any JSON type
    data["steps"][i]["detail"] = {**{k: detail[k] for k in keys[:2]}, "sandbox": {"cpu_ms": 12, "net": None},
                                  **{k: detail[k] for k in keys[2:]}, "tags": ["slow", 3]}
    data["steps"][first(data, "decide")]["detail"]["confidence"] = 0.75
    text = json.dumps(data, ensure_ascii=False, indent=1)

    trace = transcript.loads(text)

    assert trace.steps[i].detail.extra == {"sandbox": {"cpu_ms": 12, "net": None}, "tags": ["slow", 3]}
    assert trace.steps[i].detail.name == detail["name"]  # the known keys are still fields
    assert transcript.dumps(trace) == text  # byte for byte
    again = transcript.loads(transcript.dumps(trace))
    assert again.steps[i].detail.to_dict() == data["steps"][i]["detail"]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT / "samples")))
def test_every_sample_is_written_back_byte_for_byte_and_each_detail_has_its_stage_type(path):
    text = path.read_text(encoding="utf-8")
    trace = transcript.loads(text)
    assert transcript.dumps(trace) == text
    for step in trace.steps:
        assert type(step.detail) is details.DETAILS[step.stage] and not step.detail.extra


def test_a_step_built_with_a_dict_holds_its_stage_type_and_still_answers_as_the_dict():
    raw = {"tool_use_id": "toolu_1", "name": "bash", "input": {"command": "ls"}, "output": "a\n", "is_error": False,
           "tool_result": {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\n"}, "given_by_user": False}
    step = Step(index=0, stage="run_tool", turn_count=1, transition_reason=None, stop_reason="tool_use", n_messages=2,
                input_tokens=0, output_tokens=0, ended=None, time=0.0, detail=dict(raw))
    d = step.detail
    assert isinstance(d, RunToolDetail) and d.name == "bash" and d.thread is None
    # as the JSON object it was: a test compares it with the file
    assert d["name"] == "bash" and d.given("is_error") and d == raw
    assert not d.given("thread") and d.get("thread", "none") == "none" and d.get("why") is None  # another stage's key
    with pytest.raises(KeyError):
        d["thread"]
    assert step.to_dict()["detail"] == raw


def test_a_detail_built_by_hand_writes_only_what_it_was_given_in_the_fields_order():
    assert DecideDetail(continues=True, why="go on").to_dict() == {"continues": True, "why": "go on"}
    call = CallModelDetail(request={"model": "m"}, response={"content": []}, duration_ms=3.0, retries=0)
    assert list(call.to_dict()) == ["request", "response", "duration_ms", "retries"]
    # a None given is a JSON null, written; a field not given is not
    assert RefusedDetail(stage="call_model", request=None).to_dict() == {"stage": "call_model", "request": None}
    # a layer that adds to it makes a new one: a key given a value later is written after the others
    again = replace(call, attempt=2, retries=1)
    assert list(again.to_dict()) == ["request", "response", "duration_ms", "retries", "attempt"]
    assert again.retries == 1 and again.attempt == 2
    assert call.attempt is None and call.retries == 0 and "attempt" not in call.to_dict()  # the first as it was


def test_nothing_writes_to_a_detail_once_it_is_made():
    """Frozen means frozen: not its fields, not as a dict, not the keys it does not know."""
    data = sample()
    i = first(data, "decide")
    data["steps"][i]["detail"]["confidence"] = 0.75  # a later version's key: kept in `extra`
    detail = transcript.loads(json.dumps(data)).steps[i].detail
    before = detail.to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        detail.why = "changed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        detail.written = ()
    with pytest.raises(TypeError):
        detail["why"] = "changed"
    with pytest.raises(TypeError):
        del detail["why"]
    with pytest.raises(TypeError):
        detail.extra["confidence"] = 1.0
    for method in ("update", "setdefault", "pop", "clear"):
        assert not hasattr(detail, method), method
    assert detail.to_dict() == before and detail.extra == {"confidence": 0.75}


def test_the_format_documents_every_field_of_every_stage():
    doc = (ROOT / "docs" / "transcript-format.md").read_text(encoding="utf-8")
    for stage, cls in details.DETAILS.items():
        assert f"`{stage}`" in doc
        for key in details.field_names(cls):
            assert f'"{key}"' in doc or f"`{key}`" in doc, f"{stage}.{key} is not in docs/transcript-format.md"
