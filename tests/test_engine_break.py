"""Break it here, in the engine: a run forked at a step with the loop broken one of the Mistakes lab's ways.

What a learner relies on: the steps up to the one they chose stay as they were;
the broken loop runs on live against the offline model and stops at the very
call the API refuses, with the API's 400 and its words (checked here against
the request that call sent, through the one place the rules live); without a
loop, it stops with the tool_use never run. `mistakes_from` offers only the
mistakes that break from that step, and says why the others do not.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from loop.engine import rules
from loop.engine.broken import OFFLINE, break_at, mistakes_from, taken_on, why_not
from loop.engine.layer_mistake import NAMES, NOT_RUN
from loop.engine.runner import start
from loop.files import transcript
from loop.views.breaks import calls_after
from loop.engine.mistakes import MISTAKES
from loop.views.narrate import describe
from tests.cli import loop_main

_RUNS: dict = {}


@pytest.fixture(scope="module")
def scenario_run():
    """A finished run of a built-in scenario, made once a test module (its tools are the branches' too)."""
    def get(name: str):
        if name not in _RUNS:
            run = start(scenario=name)
            run.run_to_end()
            _RUNS[name] = run
        return _RUNS[name]
    yield get
    for run in _RUNS.values():
        run.close()
    _RUNS.clear()


def every_step(trace, mistake: str) -> list[int]:
    """Every step from which `mistake` can happen."""
    return [i for i in range(len(trace.steps)) if mistake in mistakes_from(trace, i)]


def assert_kept(original, broken, at: int) -> None:
    """Steps 0 to `at` of the branch, and the history at each, are the original's."""
    for i in range(at + 1):
        assert broken.trace.steps[i].to_dict() == original.steps[i].to_dict()
        assert broken.trace.messages_at(i) == original.messages_at(i)


def assert_stops_as_it_breaks(original, broken, at: int) -> None:
    trace, last = broken.trace, broken.trace.steps[-1]
    kept = broken.kept
    assert broken.at == at and kept in (at, at - 1)
    assert broken.broke and broken.stopped_at == len(trace.steps) - 1 > kept
    assert_kept(original, broken, kept)
    if kept < at:  # the step broken at is a stage the mistake changes: made anew, broken, in its place
        assert trace.steps[at].stage == original.steps[at].stage and trace.steps[at].detail.get("mistake")
    assert trace.meta["forked_from"] == {"step": at, "edit": "mistake", "mistake": broken.mistake,
                                         **({"kept": kept} if kept < at else {})}
    calls = [i for i in range(kept + 1, len(trace.steps)) if trace.steps[i].stage in ("call_model", "refused")]
    for i in calls[:-1]:  # every call before the last went through: its request held the rules
        assert trace.steps[i].stage == "call_model" and not rules.check(trace.request_at(i)["messages"])
    if broken.mistake == "no-loop":
        assert last.stage == "decide" and last.ended == NOT_RUN and not last.detail.continues
        call = max(i for i in trace.steps_of(last.thread) if i < last.index and trace.steps[i].stage == "call_model")
        asked = [b["id"] for b in rules.tool_uses(trace.response_at(call))]
        answered = {b["tool_use_id"] for m in trace.messages_at(last.index) for b in rules.tool_results(m)}
        assert asked and not set(asked) & answered  # asked for, and nothing ran it
        return
    assert last.stage == "refused" and last.detail.stage == "call_model" and last.ended
    sent = trace.request_at(last.index)["messages"]
    broken_rules = rules.check(sent, as_request=True)
    assert broken_rules, "the refused call's request breaks a rule"
    assert (broken.status, broken.type) == (400, "invalid_request_error")
    assert broken.message == str(broken_rules[0])
    assert broken.error_line() == f"400 invalid_request_error: {broken_rules[0]}"


@pytest.mark.parametrize("mistake", NAMES)
@pytest.mark.parametrize("scenario", ["recover", "two-tools", "subagent"])
def test_each_mistake_stops_at_the_call_the_api_refuses(scenario_run, scenario, mistake):
    run = scenario_run(scenario)
    steps = every_step(run.trace, mistake)
    if mistake == "max-tokens-go-on":
        assert steps == []  # no answer of these is cut: max-tokens and long-answer break it (below)
    else:
        assert steps, f"{mistake} can happen somewhere in {scenario}"
    for at in steps:
        broken = break_at(run.trace, at, mistake, tools=run.tools)
        assert_stops_as_it_breaks(run.trace, broken, at)


def test_every_step_of_recover_offers_exactly_the_mistakes_that_break(scenario_run):
    run = scenario_run("recover")
    before: list[str] = list(NAMES)
    for at in range(len(run.trace.steps)):
        offered = mistakes_from(run.trace, at)
        # Every offered one breaks; one left out is tried where it was offered a step before (where the
        # offer ends, the one place it could be wrong) and at the first step.
        for mistake in [m for m in NAMES if m in offered or m in before or at == 0]:
            broken = break_at(run.trace, at, mistake, tools=run.tools)
            assert broken.broke == (mistake in offered), (at, mistake)
            if mistake in offered:
                assert_stops_as_it_breaks(run.trace, broken, at)
            else:  # it did not break, and says why as mistakes_from does
                assert broken.note == why_not(run.trace, at)[mistake] and broken.note
                assert_kept(run.trace, broken, broken.kept)
        before = offered


def test_inside_a_subagent_the_broken_call_is_the_subagents(scenario_run):
    run = scenario_run("subagent")
    child = next(i for i, s in enumerate(run.trace.steps) if s.thread != "main" and s.stage == "decide")
    broken = break_at(run.trace, child, "no-write-back", tools=run.tools)
    assert_stops_as_it_breaks(run.trace, broken, child)
    assert broken.trace.steps[-1].thread == run.trace.steps[child].thread
    assert broken.trace.steps[-1].thread in broken.trace.threads


@pytest.mark.parametrize("scenario", ["max-tokens", "long-answer"])
def test_max_tokens_taken_for_go_on_writes_back_nothing_and_is_refused(scenario_run, scenario):
    run = scenario_run(scenario)
    steps = every_step(run.trace, "max-tokens-go-on")
    assert steps
    for at in steps:
        broken = break_at(run.trace, at, "max-tokens-go-on", tools=run.tools)
        assert_stops_as_it_breaks(run.trace, broken, at)
        assert "non-empty content" in broken.message
        written = broken.trace.steps[-2]
        assert written.stage == "write_back" and broken.trace.messages_at(written.index)[-1]["content"] == []


def test_the_seven_mistakes_are_the_labs():
    assert list(NAMES) == list(MISTAKES)


def test_a_broken_branch_saved_with_its_run_loads_and_replays_its_refusal(scenario_run):
    run = scenario_run("recover")
    broken = break_at(run.trace, 3, "no-assistant-append", tools=run.tools)
    saved = transcript.dumps(run.trace.with_branches([broken.trace]))
    loaded = transcript.loads(saved)  # the history the API refused is kept, to be seen
    branch = loaded.branches[0]
    assert [s.to_dict() for s in branch.steps] == [json.loads(json.dumps(s.to_dict())) for s in broken.trace.steps]
    assert branch.meta["forked_from"]["mistake"] == "no-assistant-append"
    line = describe(branch, len(branch.steps) - 1, "en")
    assert "refused the request (400 invalid_request_error)" in line and "tokens >" not in line


def test_a_real_models_run_breaks_against_the_offline_model(scenario_run):
    run = scenario_run("two-tools")
    real = transcript.loads(transcript.dumps(run.trace))
    real.meta.update(scripted=False, model="claude-sonnet-4-5")
    broken = break_at(real, 3, "wrong-id", tools=run.tools)
    assert broken.broke and broken.offline
    assert broken.note == OFFLINE.format(model="claude-sonnet-4-5")
    assert broken.trace.meta["forked_from"]["offline"] is True


def test_cli_break_writes_a_loadable_branch_and_prints_the_apis_error(tmp_path, scenario_run):
    t, b = tmp_path / "t.json", tmp_path / "b.json"
    transcript.save(scenario_run("recover").trace, t)
    done, = loop_main(["break", t, "--at", 3, "--mistake", "text-first", "--out", b])
    assert done.returncode == 0, done.stderr
    assert "400 invalid_request_error: messages." in done.stdout and "Did not find 1 `tool_result`" in done.stdout
    stopped = next(line for line in done.stdout.splitlines() if line.startswith("stopped at step "))
    loaded = transcript.load(b)
    assert f"stopped at step {len(loaded.steps) - 1} (refused" in stopped
    assert loaded.steps[-1].stage == "refused" and loaded.meta["forked_from"]["step"] == 3
    original = transcript.load(t)
    assert [s.to_dict() for s in loaded.steps[:4]] == [s.to_dict() for s in original.steps[:4]]
    assert [s.to_dict() for s in loaded.branches[0].steps] == [s.to_dict() for s in original.steps]


def test_cli_break_says_why_a_mistake_cannot_happen_and_refuses_bad_arguments(tmp_path, scenario_run):
    t = tmp_path / "t.json"
    transcript.save(scenario_run("recover").trace, t)
    (tmp_path / "bad.json").write_text("{}")
    cannot, no_loop, far, bad_file, bad_name = loop_main(
        ["break", t, "--at", 3, "--mistake", "max-tokens-go-on"],
        ["break", t, "--at", 3, "--mistake", "no-loop"],
        ["break", t, "--at", 99, "--mistake", "no-loop"],
        ["break", tmp_path / "bad.json", "--at", 0, "--mistake", "no-loop"],
        ["break", t, "--at", 0, "--mistake", "no-such-mistake"])
    assert cannot.returncode == 1
    assert "max-tokens-go-on cannot happen from step 3: no answer after this step is cut at max_tokens" in cannot.stdout
    assert no_loop.returncode == 0 and "the tool_use was never run" in no_loop.stdout
    assert [far.returncode, bad_file.returncode, bad_name.returncode] == [2, 2, 2]
    assert "steps 0 to 13" in far.stderr


def test_an_imported_sessions_branch_reuses_its_recorded_results(scenario_run):
    run = scenario_run("two-tools")
    imported = transcript.loads(transcript.dumps(run.trace))
    imported.meta.update(imported={"format": "claude-code", "source": "session.jsonl", "warnings": []},
                         scripted=False, model="claude-sonnet-4-5")
    decide = next(i for i, s in enumerate(imported.steps) if s.stage == "decide")
    for output_step in (s for s in imported.steps if s.stage == "run_tool"):  # what only the session's tools said
        output_step.detail = replace(output_step.detail, output=f"recorded {output_step.detail.tool_use_id}")
    broken = break_at(imported, decide, "text-first", tools=run.tools)
    assert broken.broke and broken.offline
    ran = [s for s in broken.trace.steps[decide + 1:] if s.stage == "run_tool"]
    assert ran and all(s.detail.output == f"recorded {s.detail.tool_use_id}" for s in ran)


@pytest.mark.parametrize("scenario, step", [("two-tools", 6), ("hello-py", 5)])
def test_the_correct_loop_is_taken_on_as_far_as_it_goes_not_cut_where_the_run_stopped(scenario, step):
    with start(scenario=scenario) as run:
        for _ in range(step):
            run.execute()
        cut = run.trace
        broken = break_at(cut, step - 1, "results-as-assistant", tools=run.tools)
        correct = taken_on(cut)
        assert len(cut) == step and not run.done  # the run itself is left where it was
    assert correct.loop_ended and [s.to_dict() for s in correct.steps[:step]] == [s.to_dict() for s in cut.steps]
    wrong, right = calls_after(broken.trace, broken.at), calls_after(correct, broken.at)
    assert [c.number for c in wrong] == [1, 2] and wrong[1].error
    assert [c.number for c in right][:2] == [1, 2] and right[1].error is None
    written = right[1].messages[-1]  # the correct call 2 holds the tool_results in one user message
    assert written["role"] == "user" and rules.tool_results(written)
    assert {b["tool_use_id"] for b in rules.tool_results(written)} == {
        b["id"] for b in rules.tool_uses(right[1].messages[-2])}
    assert taken_on(correct) is correct  # a loop that has ended is not run again


def test_broken_at_a_write_back_step_that_very_write_back_is_broken(scenario_run):
    two = scenario_run("two-tools").trace
    write_back = 6  # step 7: the one user message that writes both tool_results back
    assert two.steps[write_back].stage == "write_back"
    assert set(mistakes_from(two, write_back)) == {"no-write-back", "wrong-id", "text-first", "results-as-assistant"}
    for mistake in mistakes_from(two, write_back):
        broken = break_at(two, write_back, mistake, tools=scenario_run("two-tools").tools)
        assert broken.kept == write_back - 1 and broken.stopped_at == write_back + 1  # refused at step 8, the next call
        remade = broken.trace.steps[write_back]
        assert remade.stage == "write_back" and remade.detail.get("mistake") == mistake

    recover = scenario_run("recover")
    first = 5  # step 6: the first turn's write-back; the second is step 11
    broken = break_at(recover.trace, first, "wrong-id", tools=recover.tools)
    assert broken.at == first and broken.stopped_at == first + 1 and broken.broke  # refused at step 7, not 12
    written = broken.trace.messages_at(first)[-1]
    assert [b["tool_use_id"] for b in rules.tool_results(written)] == ["toolu_0"]
    assert "toolu_0" not in broken.message and broken.message.startswith("messages.1: `tool_use` ids were found")
