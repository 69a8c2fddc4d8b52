"""A learner's loop, recorded from outside (tests/learner.py), read into the trace Step through draws, and the
first rule it broke named from what its requests show."""

from __future__ import annotations

import json

import pytest

from loop import start
from loop.engine import rules
from loop.files import transcript
from loop.importers.derive import trace_from_history
from loop.engine.mistakes import MISTAKES
from loop.views.step import view
from loop.yours import recording as rec
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.named import EXCEPTION, NEVER_ENDS, SYNTAX_ERROR, named
from loop.yours.reading import line_at, read
from loop.yours.recording import Recording
from tests.cli import loop_main
from tests.learner import record

# The chapter's agent_loop (s01), as a learner types it: its max_tokens is the scenario's (MAX_TOKENS, bound as
# the sandbox binds it), so that the max-tokens scenario cuts its answer
CHAPTER = CHAPTER_LOOP
CALL_LINE = CHAPTER.splitlines().index("        response = client.messages.create(") + 1
RUN_LINE = CHAPTER.splitlines().index("                output = run_tool(block)") + 1


def broken(old: str, new: str) -> str:
    assert CHAPTER.count(old) == 1, old
    return CHAPTER.replace(old, new)


# One loop a mistake, each looking right at a glance (the lines keep their numbers).
WRONG = {
    "no-assistant-append": broken('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })''', '''        answer = {
            "role": "assistant",
            "content": response.content,
        }'''),
    "no-write-back": broken('''        state["messages"].append({
            "role": "user",
            "content": results,
        })''', '''        print({
            "role": "user",
            "content": results,
        })'''),
    "wrong-id": broken('"tool_use_id": block.id,', '"tool_use_id": f"toolu_{len(results)}",'),
    "text-first": broken('"content": results,\n        })', '"content": [{"type": "text", "text": "Results:"}] + results,\n        })'),
    "results-as-assistant": broken('''            "role": "user",
            "content": results,''', '''            "role": "assistant",
            "content": results,'''),
    "max-tokens-go-on": broken('if response.stop_reason != "tool_use":',
                               'if response.stop_reason not in ("tool_use", "max_tokens"):'),
}
SCENARIO = {"max-tokens-go-on": "max-tokens"}


@pytest.fixture(scope="module")
def chapter() -> Recording:
    return record(CHAPTER, "list-files")


def test_the_chapters_loop_reads_as_step_through_records_it_and_check_holds(chapter, tmp_path):
    assert chapter.outcome == rec.RETURNED and named(chapter) is None
    yours = read(chapter)
    assert yours.kept_every_rule
    trace = yours.trace
    stages = [s.stage for s in trace.steps]
    assert stages == ["user_request", "call_model", "append_assistant", "decide", "run_tool", "write_back",
                      "call_model", "append_assistant", "decide"]
    # The same steps the importers derive from the final history by the chapter's rules.
    derived = trace_from_history(list(trace.messages), dict(trace.meta)).steps
    facts = lambda steps: [(s.stage, s.n_messages, s.turn_count, s.transition_reason, s.ended) for s in steps]  # noqa: E731
    assert facts(trace.steps) == facts(derived)
    # Each call shows what was really sent and answered, and the learner's line and own state.
    calls = [i for i, s in enumerate(trace.steps) if s.stage == "call_model"]
    for i, exchange in zip(calls, chapter.exchanges):
        assert trace.request_at(i)["messages"] == exchange.request["messages"]
        assert trace.response_at(i) == exchange.response
        assert trace.steps[i].detail.line == CALL_LINE
    assert [trace.steps[i].detail.learner for i in calls] == [
        {"turn_count": 1, "transition_reason": None}, {"turn_count": 2, "transition_reason": "tool_result"}]
    assert [line_at(trace, i) for i in range(len(trace))] == [None, CALL_LINE, CALL_LINE, CALL_LINE, RUN_LINE,
                                                              RUN_LINE, CALL_LINE, CALL_LINE, CALL_LINE]
    run = trace.steps[stages.index("run_tool")]
    assert run.detail.line == RUN_LINE and "README.txt" in run.detail.output
    assert run.detail.tool_result == chapter.exchanges[1].request["messages"][2]["content"][0]
    # Saved and loaded as a transcript, `python -m loop check` holds, and the source and scenario are kept.
    path = tmp_path / "yours.json"
    transcript.save(trace, path)
    loaded = transcript.loads(path.read_bytes(), strict=True)
    assert transcript.violations(loaded) == []
    assert loaded.meta["yours"] == {"source": CHAPTER, "scenario": "list-files"}
    assert [s.detail.get("line") for s in loaded.steps] == [s.detail.get("line") for s in trace.steps]
    (checked,) = loop_main(["check", str(path)])
    assert checked.returncode == 0 and checked.stdout.startswith("ok: 4 messages, 1 tool_use/tool_result pair(s)")


def test_yours_tokens_at_each_step_are_the_sum_of_every_call_so_far(chapter):
    """The steps table's tokens of a learner's run, as of a live one: each call's usage added to the calls before."""
    trace = read(chapter).trace
    usage = [exchange.response["usage"] for exchange in chapter.exchanges]
    calls = [step for step in trace.steps if step.stage == "call_model"]
    assert len(calls) == len(usage) >= 2 and all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in usage)
    for k, step in enumerate(calls):
        assert (step.input_tokens, step.output_tokens) == (sum(u["input_tokens"] for u in usage[:k + 1]),
                                                           sum(u["output_tokens"] for u in usage[:k + 1]))
    assert (trace.steps[-1].input_tokens, trace.steps[-1].output_tokens) == (calls[-1].input_tokens,
                                                                             calls[-1].output_tokens)


@pytest.mark.parametrize("scenario", ["hello-py", "recover", "two-tools", "max-tokens"])
def test_the_chapters_loop_keeps_every_rule_on_every_scenario_it_can_drive_and_each_step_draws(scenario):
    recorded = record(CHAPTER, scenario)
    yours = read(recorded)
    assert yours.kept_every_rule and recorded.exchanges
    trace = yours.trace
    assert transcript.violations(transcript.loads(transcript.dumps(trace))) == []
    derived = trace_from_history(list(trace.messages), dict(trace.meta)).steps
    assert [(s.stage, s.n_messages, s.turn_count) for s in trace.steps] == \
        [(s.stage, s.n_messages, s.turn_count) for s in derived]
    assert sum(s.stage == "run_tool" for s in trace.steps) == sum(len(e.tool_runs) for e in recorded.exchanges)
    for i in range(len(trace)):
        drawn = view(trace, i, "ja")
        assert drawn is not None


@pytest.mark.parametrize("scenario", ["list-files", "two-tools", "max-tokens"])
def test_the_learners_chapter_loop_has_the_steps_of_step_throughs_own_run(scenario):
    # (recover is left out: the chapter's listing writes no is_error back, so the model sees another run)
    with start(scenario=scenario) as run:
        run.run_to_end()
        live = run.trace.steps
    mine = read(record(CHAPTER, scenario)).trace.steps
    facts = lambda steps: [(s.stage, s.n_messages, s.turn_count, s.transition_reason, s.stop_reason, s.ended)  # noqa: E731
                           for s in steps]
    assert facts(mine) == facts(live)


def test_a_loop_whose_parameter_is_messages_gets_the_list():
    source = CHAPTER.replace("def agent_loop(state):", "def agent_loop(messages):").replace(
        'state["messages"]', "messages").replace('state["turn_count"] += 1', "pass").replace(
        'state["transition_reason"] = None', "pass").replace('state["transition_reason"] = "tool_result"', "pass")
    recorded = record(source, "list-files")
    assert recorded.outcome == rec.RETURNED and named(recorded) is None and len(recorded.exchanges) == 2


@pytest.mark.parametrize("mistake", sorted(WRONG))
def test_each_broken_loop_is_named_at_the_call_the_api_refused_with_the_learners_line(mistake):
    recorded = record(WRONG[mistake], SCENARIO.get(mistake, "list-files"))
    assert recorded.outcome == rec.REFUSED
    refused = next(k for k, e in enumerate(recorded.exchanges) if e.error)
    found = named(recorded)
    assert found.name == mistake and found.is_mistake
    assert found.call == refused == (2 if mistake == "max-tokens-go-on" else 1)
    assert found.line == found.made.line != CALL_LINE  # named where the message was made (tests/test_yours_lines.py)
    assert found.error["status"] == 400 and found.error["type"] == "invalid_request_error"
    assert found.error == recorded.exchanges[refused].error
    assert f"call {refused + 1}" in found.render("en")
    assert found.render("ja") != found.render("en") and found.render("zh") != found.render("en")
    # The trace ends at the refused call, which carries the mistake, the request sent and the line.
    trace = read(recorded).trace
    last = trace.steps[-1]
    assert last.stage == "refused" and last.ended == "invalid_request"
    assert last.detail["mistake"] == mistake and last.detail.line == CALL_LINE
    assert trace.request_at(last.index)["messages"] == recorded.exchanges[refused].request["messages"]
    assert [s.stage for s in trace.steps[:2]] == ["user_request", "call_model"]
    # Saved, it loads as Step through's broken branch does: the history the API refused is kept, to be seen.
    loaded = transcript.loads(transcript.dumps(trace))
    assert loaded.steps[-1].stage == "refused" and loaded.meta["yours"]["source"] == WRONG[mistake]
    for i in range(len(trace)):  # every step draws in Step through's views
        assert view(trace, i, "zh") is not None


def test_a_missing_append_and_a_wrong_id_are_told_apart_although_the_api_words_alike():
    missing = record(WRONG["no-assistant-append"], "list-files")
    wrong = record(WRONG["wrong-id"], "list-files")
    words = [r.exchanges[1].error["message"] for r in (missing, wrong)]
    assert all("tool_use" in w for w in words)
    assert "unexpected `tool_use_id`" in words[0]
    assert (named(missing).name, named(wrong).name) == ("no-assistant-append", "wrong-id")
    # What the requests show: the missing append sent no assistant message; the wrong id sent it, with other ids.
    assert [m["role"] for m in missing.exchanges[1].request["messages"]] == ["user", "user"]
    assert [m["role"] for m in wrong.exchanges[1].request["messages"]] == ["user", "assistant", "user"]
    steps = read(missing).trace.steps
    append = next(s for s in steps if s.stage == "append_assistant")
    assert append.n_messages == 1 and append.detail["appended"] is False


def test_a_write_back_missing_and_one_with_a_wrong_id_are_told_apart():
    lost = record(WRONG["no-write-back"], "list-files")
    wrong = record(WRONG["wrong-id"], "list-files")
    assert (named(lost).name, named(wrong).name) == ("no-write-back", "wrong-id")
    assert lost.exchanges[0].tool_runs and wrong.exchanges[0].tool_runs  # both ran the tool


def test_no_loop_is_named_when_the_loop_returns_with_a_tool_use_unanswered():
    source = '''\
def agent_loop(state):
    response = client.messages.create(
        model=MODEL, system=SYSTEM, messages=state["messages"], tools=TOOLS, max_tokens=MAX_TOKENS,
    )
    state["messages"].append({"role": "assistant", "content": response.content})
    print(response.content)
'''
    recorded = record(source, "list-files")
    assert recorded.outcome == rec.RETURNED and recorded.exchanges[0].response["stop_reason"] == "tool_use"
    found = named(recorded)
    assert (found.name, found.call, found.line, found.error) == ("no-loop", 0, 6, None)  # where its loop returned
    assert found.made.how == "returned"
    yours = read(recorded)
    assert not yours.kept_every_rule
    last = yours.trace.steps[-1]
    assert last.stage == "decide" and last.detail.continues is False and last.ended == "tool_use"


def test_max_tokens_go_on_on_the_max_tokens_scenario():
    right = record(CHAPTER, "max-tokens")
    assert named(right) is None and right.exchanges[-1].response["stop_reason"] == "max_tokens"
    wrong = record(WRONG["max-tokens-go-on"], "max-tokens")
    assert named(wrong).name == "max-tokens-go-on"
    assert wrong.exchanges[0].response["stop_reason"] == "tool_use"  # it broke after the cut answer, not before
    assert wrong.exchanges[1].response["stop_reason"] == "max_tokens"
    found = named(wrong)
    assert found.call == 2 and found.line == WRONG["max-tokens-go-on"].splitlines().index(
        '        state["messages"].append({', 20) + 1  # the write-back of no results after the cut answer


def test_a_loop_that_never_ends_is_stopped_and_said_so_with_the_count():
    source = broken('''            state["transition_reason"] = None
            return''', '''            state["messages"].append({"role": "user", "content": "Go on."})
            continue''')
    recorded = record(source, "list-files", max_calls=5)
    assert recorded.outcome == rec.TOO_MANY_CALLS and len(recorded.exchanges) == 5
    found = named(recorded)
    assert found.name == NEVER_ENDS and "5" in found.render("en") and "5" in found.render("ja")
    assert read(recorded).trace.steps[-1].ended == rec.TOO_MANY_CALLS


def test_an_exception_is_named_with_the_learners_own_traceback():
    recorded = record(broken('output = run_tool(block)', 'output = run_bash(block.input["cmd"])'), "list-files")
    assert recorded.outcome == rec.EXCEPTION
    found = named(recorded)
    assert found.name == EXCEPTION and found.line == RUN_LINE and "KeyError" in found.render("en")
    assert f'your_loop.py", line {RUN_LINE}' in recorded.traceback and 'block.input["cmd"]' in recorded.traceback
    assert "loop/" not in recorded.traceback and "anthropic" not in recorded.traceback


def test_a_syntax_error_is_named_with_its_line_and_column():
    recorded = record(CHAPTER.replace("while True:", "while True"), "list-files")
    found = named(recorded)
    assert found.name == SYNTAX_ERROR and found.call is None and found.line == 2
    assert recorded.error_column and "line 2" in found.render("en")
    assert read(recorded).trace.steps[0].stage == "user_request"  # a trace still, with the request


def test_only_a_learners_loop_refused_by_the_api_loads_with_a_broken_history():
    trace = read(record(WRONG["wrong-id"], "list-files")).trace
    data = json.loads(transcript.dumps(trace))
    for edit in (lambda d: d.pop("yours"), lambda d: d["steps"].pop()):
        changed = json.loads(json.dumps(data))
        edit(changed)
        with pytest.raises(transcript.TranscriptError, match="do not pair"):
            transcript.loads(json.dumps(changed))


def test_a_recording_read_from_json_reads_the_same():
    recorded = record(WRONG["wrong-id"], "list-files")
    again = Recording.from_dict(json.loads(json.dumps(recorded.to_dict())))
    assert named(again) == named(recorded)
    assert [s.to_dict() for s in read(again).trace.steps] == [s.to_dict() for s in read(recorded).trace.steps]


def test_the_mistakes_named_are_the_labs():
    assert set(WRONG) | {"no-loop"} == set(MISTAKES)
    assert rules  # the rules the offline model checks are the ones `check` uses
