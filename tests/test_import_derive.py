"""An imported history is stepped through exactly as a live run of it was."""

import json

import pytest

from loop import start
from loop.engine.fork import state_at
from loop.importers import import_bytes, trace_from_history
from loop.importers.derive import LOG_ENDS, NOT_RECORDED
from loop.views.narrate import describe
from loop.engine.scenarios import SCENARIOS

SHAPE = ("stage", "turn_count", "transition_reason", "n_messages")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """Every built-in scenario, run live once with the scripted model."""
    traces = {}
    for name in SCENARIOS:
        run = start(scenario=name)
        run.run_to_end()
        traces[name] = run.trace
    return traces


# A run with a sub-agent or a compaction is not one history that only grew, so no single `messages` list can
# give its steps back; those runs are read back from their transcript instead (tests/test_engine_transcript.py).
# Nor can the complete loop's steps that its history does not show, so those runs are read back that way too:
NOT_IN_MESSAGES = {"overloaded": "a failed call and its retries leave nothing in messages",
                   "long-answer": "the recovery's continue is, in messages alone, a user's message like any other"}
ONE_HISTORY = [name for name, s in SCENARIOS.items() if s.toolset is None and name not in NOT_IN_MESSAGES]


def shape(trace, fields=SHAPE):
    return [tuple(getattr(step, f) for f in fields) for step in trace.steps]


@pytest.mark.parametrize("name", ONE_HISTORY)
def test_steps_derived_from_the_messages_alone_are_the_live_runs(live, name):
    derived = trace_from_history(live[name].messages, {})
    assert shape(derived) == shape(live[name])


@pytest.mark.parametrize("name", ONE_HISTORY)
def test_with_the_recorded_responses_the_state_of_every_step_is_the_live_runs(live, name):
    trace = live[name]
    responses = {s.n_messages: s.detail["response"] for s in trace.steps if s.stage == "call_model"}
    derived = trace_from_history(trace.messages, dict(trace.meta), responses)
    fields = SHAPE + ("stop_reason", "ended", "input_tokens", "output_tokens")
    assert shape(derived, fields) == shape(trace, fields)
    for i in range(len(trace)):
        mine, theirs = state_at(derived, i), state_at(trace, i)
        assert (mine.messages, mine.turn_count, mine.transition_reason, mine.results, mine.ended) == \
               (theirs.messages, theirs.turn_count, theirs.transition_reason, theirs.results, theirs.ended)
    ran = [(s.detail["tool_use_id"], s.detail["output"], s.detail["is_error"]) for s in derived.steps if s.stage == "run_tool"]
    assert ran == [(s.detail["tool_use_id"], s.detail["output"], s.detail["is_error"])
                   for s in trace.steps if s.stage == "run_tool"]


def test_a_saved_messages_list_replays_like_the_run(live):
    trace = live["two-tools"]
    imported = import_bytes(json.dumps(trace.messages).encode(), "messages.json")
    assert imported.warnings == []
    assert shape(imported.trace) == shape(trace)
    # The narration a learner reads is the live run's, tool outputs and all.
    lines = [describe(imported.trace, i) for i in range(len(imported.trace))]
    assert lines[6].startswith("[7] turn 1 · 5 · write tool_results back: messages ← user: 2 tool_result block(s); "
                               "turn 1 ends, turn_count 1 → 2")  # the write-back belongs to the turn it ends
    assert [line.split(" → ")[1] for line in lines if " run a tool_use" in line] == \
           [describe(trace, i).split(" → ")[1] for i in range(len(trace)) if trace.steps[i].stage == "run_tool"]


def test_the_max_tokens_ending_is_kept_when_the_response_was_recorded(live):
    trace = live["max-tokens"]
    responses = {s.n_messages: s.detail["response"] for s in trace.steps if s.stage == "call_model"}
    derived = trace_from_history(trace.messages, {}, responses)
    assert derived.steps[-1].ended == "max_tokens"
    assert "cut at max_tokens" in derived.steps[-1].detail["why"]
    # Without it, the API's own rule fills it in: no tool_use block means end_turn.
    guessed = trace_from_history(trace.messages, {})
    assert guessed.steps[-1].ended == "end_turn"
    assert guessed.steps[-3].stage == "call_model" and guessed.steps[-3].detail["stop_reason_inferred"] is True


def test_a_tool_use_left_without_a_result_gets_a_step_that_says_so():
    messages = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
    ]
    warnings = []
    trace = trace_from_history(messages, {}, warnings=warnings)
    step = trace.steps[-1]
    assert step.stage == "run_tool" and step.n_messages == 2
    # the log ends there: its result may still be coming (a session being written) or never came; not a failed run
    assert step.detail["recorded"] is False and step.detail["is_error"] is False
    assert step.detail["output"] == LOG_ENDS
    assert [w.render() for w in warnings] == ["messages.1: tool_use t1 (bash) has no tool_result (the history ends here)"]
    messages.append({"role": "user", "content": "go on"})  # a next message without it: the result was not recorded
    step = next(s for s in trace_from_history(messages, {}).steps if s.stage == "run_tool")
    assert step.detail["is_error"] is True and step.detail["output"] == NOT_RECORDED


def test_a_person_interrupting_and_asking_again():
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "out"}]},
        {"role": "user", "content": "wait, also this"},  # typed before the next call
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": "second task"},  # a new request after the answer
        {"role": "assistant", "content": [{"type": "text", "text": "done too"}]},
    ]
    trace = trace_from_history(messages, {})
    assert [(s.stage, s.turn_count, s.transition_reason, s.n_messages) for s in trace.steps] == [
        ("user_request", 1, None, 1),
        ("call_model", 1, None, 1), ("append_assistant", 1, None, 2), ("decide", 1, None, 2),
        ("run_tool", 1, None, 2), ("write_back", 2, "tool_result", 3),
        ("user_request", 2, "tool_result", 4),
        ("call_model", 2, "tool_result", 4), ("append_assistant", 2, "tool_result", 5), ("decide", 2, None, 5),
        ("user_request", 1, None, 6),
        ("call_model", 1, None, 6), ("append_assistant", 1, None, 7), ("decide", 1, None, 7),
    ]
    assert trace.steps[6].detail["task"] == "wait, also this" and "not a write-back" in trace.steps[6].detail["note"]
    assert "new request" in trace.steps[10].detail["note"]
    assert trace.steps[9].ended == "end_turn" and trace.steps[10].ended is None
