"""The Messages API's tool-use rules (loop/engine/rules.py), in the API's own words.

Each broken history is checked directly, then sent through the real SDK to
the scripted model, which must refuse it with the same words as a 400 the SDK
raises as BadRequestError — what a learner would meet from the real API.
"""

from __future__ import annotations

import anthropic
import pytest

from loop import Model, ModelConfig
from loop.views.errors import explain
from loop.engine.rules import check, pairs

TASK = {"role": "user", "content": "List the files in the workspace."}


def use(id_: str) -> dict:
    return {"type": "tool_use", "id": id_, "name": "bash", "input": {"command": "ls"}}


def result(id_: str, content: str = "README.txt", **extra) -> dict:
    return {"type": "tool_result", "tool_use_id": id_, "content": content, **extra}


def asks(*ids: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": "I'll look."}, *(use(i) for i in ids)]}


MISSING = ("`tool_use` ids were found without `tool_result` blocks immediately after: {}. "
           "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
UNEXPECTED = ("unexpected `tool_use_id` found in `tool_result` blocks: {}. "
              "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
NOT_FIRST = ("Did not find {} `tool_result` block(s) at the beginning of this message. "
             "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.")
EMPTY = "all messages must have non-empty content except for the optional final assistant message"

# (name, messages, [(where, message)]) — every violation check() must report, in order.
BROKEN = [
    ("result missing",
     [TASK, asks("toolu_A"), {"role": "user", "content": "and now?"}],
     [("messages.1", MISSING.format("toolu_A"))]),
    ("one of two results missing",
     [TASK, asks("toolu_A", "toolu_B"), {"role": "user", "content": [result("toolu_A")]}],
     [("messages.1", MISSING.format("toolu_B"))]),
    ("result with the wrong id",
     [TASK, asks("toolu_A"), {"role": "user", "content": [result("toolu_WRONG")]}],
     [("messages.1", MISSING.format("toolu_A")), ("messages.2.content.0", UNEXPECTED.format("toolu_WRONG"))]),
    ("text before the tool_result",
     [TASK, asks("toolu_A"), {"role": "user", "content": [{"type": "text", "text": "here:"}, result("toolu_A")]}],
     [("messages.2", NOT_FIRST.format(1))]),
    ("result not in the very next message",
     [TASK, asks("toolu_A"), {"role": "user", "content": "wait"}, {"role": "assistant", "content": "ok"},
      {"role": "user", "content": [result("toolu_A")]}],
     [("messages.1", MISSING.format("toolu_A")), ("messages.4.content.0", UNEXPECTED.format("toolu_A"))]),
    ("a result nobody asked for",
     [{"role": "user", "content": [result("toolu_X")]}],
     [("messages.0.content.0", UNEXPECTED.format("toolu_X"))]),
    ("empty user message",
     [TASK, {"role": "assistant", "content": "hi"}, {"role": "user", "content": ""}],
     [("messages.2", EMPTY)]),
    ("empty list content",
     [{"role": "user", "content": []}],
     [("messages.0", EMPTY)]),
    ("the next request without results",
     [TASK, asks("toolu_A")],
     [("messages.1", MISSING.format("toolu_A"))]),
]


@pytest.mark.parametrize("name, messages, expected", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_violation_in_the_apis_words_and_where(name, messages, expected):
    found = check(messages)
    assert [(v.where, v.message) for v in found] == expected
    assert [str(v) for v in found] == [f"{w}: {m}" for w, m in expected]
    for v in found:  # `index` points at the message to highlight
        assert v.where.startswith(f"messages.{v.index}")


@pytest.mark.parametrize("name, messages, expected", BROKEN, ids=[b[0] for b in BROKEN])
def test_the_scripted_model_answers_a_broken_history_with_the_apis_400(name, messages, expected):
    model = Model(ModelConfig())  # the scripted model, behind the real SDK
    with pytest.raises(anthropic.BadRequestError) as caught:
        model.create(messages=messages, tools=[])
    error = caught.value
    assert error.status_code == 400
    first = f"{expected[0][0]}: {expected[0][1]}"
    assert error.body == {"type": "error", "error": {"type": "invalid_request_error", "message": first}}
    assert first in explain(error) and "400" in explain(error)


def test_a_valid_history_passes_and_is_answered():
    messages = [TASK, asks("toolu_A", "toolu_B"),
                {"role": "user", "content": [result("toolu_A"), result("toolu_B", "x"), {"type": "text", "text": "?"}]}]
    assert check(messages) == []
    reply = Model(ModelConfig()).create(messages=messages, tools=[])
    assert reply.response["type"] == "message"


def test_a_final_assistant_message_may_be_empty_and_a_pending_tool_use_may_wait():
    assert check([TASK, {"role": "assistant", "content": []}]) == []
    paused = [TASK, asks("toolu_A")]
    assert check(paused, as_request=False) == []  # a paused run: its results are not written back yet
    assert check(paused, as_request=True) != []  # but sent as it is, the API would refuse it


def test_a_message_that_is_not_an_object():
    found = check([TASK, "hello"])
    assert [(v.where, v.message) for v in found] == [("messages.1", "Input should be a valid dictionary")]


def test_pairs_paired_waiting_and_orphan():
    messages = [
        TASK,
        asks("toolu_A", "toolu_B"),
        {"role": "user", "content": [result("toolu_A", "out A"), result("toolu_STRAY", "stray", is_error=True)]},
        asks("toolu_C"),
    ]
    rows = {p.tool_use_id: p for p in pairs(messages)}
    assert list(rows) == ["toolu_A", "toolu_B", "toolu_C", "toolu_STRAY"]
    a, b, c, stray = rows.values()
    assert (a.status, a.use_index, a.result_index, a.result, a.is_error) == ("paired", 1, 2, "out A", False)
    assert (a.name, a.input) == ("bash", {"command": "ls"})
    assert (b.status, b.result_index, b.result) == ("orphan", None, None)  # a later message never answered it
    assert (c.status, c.use_index, c.result_index) == ("waiting", 3, None)  # nothing after it yet
    assert (stray.status, stray.use_index, stray.result_index, stray.is_error) == ("orphan", None, 2, True)
    assert stray.name is None


def test_pairs_of_a_real_run_are_all_paired(tmp_path):
    from loop import start

    run = start(scenario="two-tools", tool_timeout=10)
    run.run_to_end()
    rows = pairs(run.state.messages)
    assert [p.status for p in rows] == ["paired", "paired"]
    assert [p.result for p in rows] == [s.detail["output"] for s in run.trace.steps if s.stage == "run_tool"]
    assert check(run.state.messages) == []


def test_ids_of_the_wrong_type_are_violations_not_crashes():
    # A hand-edited or foreign history may hold a list where an id belongs.
    messages = [TASK, {"role": "assistant", "content": [{"type": "tool_use", "id": ["x"], "name": "bash", "input": {}}]},
                {"role": "user", "content": [result(["y"])]}]
    found = check(messages)
    assert [v.where for v in found] == ["messages.1", "messages.2.content.0"]
    assert [p.status for p in pairs(messages)] == ["orphan", "orphan"]
    with pytest.raises(anthropic.BadRequestError):
        Model(ModelConfig()).create(messages=messages, tools=[])
    same = [TASK, messages[1], {"role": "user", "content": [result(["x"])]}]
    assert check(same) == [] and [p.status for p in pairs(same)] == ["paired"]
