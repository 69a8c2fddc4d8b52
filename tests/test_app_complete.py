"""The complete loop on the pages: Minimal beside complete, call by call; Step through in the complete loop (the wait
before a retry, its explicit state, the permalink); the About page's table; no English left in Japanese or Chinese."""

from __future__ import annotations

import json
import re

import pytest

from loop.views.compare import SCENARIOS as COMPARED
from loop.engine.profiles import TRANSITIONS
from tests.apptest import app, click, copied_link
from tests.tables import table
from tests.test_app_i18n import english_left, names, texts_on_page


def markdowns(at) -> list[str]:
    return [m.value for m in at.main.get("markdown")]


def alerts(at) -> list[str]:
    return [e.value for e in [*at.info, *at.error, *at.warning, *at.success]]


def columns_text(at) -> str:
    return "\n".join(markdowns(at) + alerts(at) + [c.value for c in at.caption])


def test_side_by_side_long_answer_minimal_ends_on_max_tokens_complete_recovers():
    at = app("pages/compare.py", scenario="long-answer")
    assert at.title[0].value == "Minimal beside complete"
    assert at.radio(key="compare-pick").value == "long-answer"
    minimal, complete = at.session_state["compare-runs"][("long-answer", "en")]
    assert (minimal.ended, complete.ended) == ("max_tokens", "end_turn")
    text = markdowns(at)
    assert "**Ended with `max_tokens`** after 2 call(s)." in text
    assert "**Ended with `end_turn`** after 4 call(s)." in text
    thens = [m for m in text if "Then:" in m]
    # call by call: the minimal loop's second call ends it; the complete loop's second and third are recovered
    assert thens[2].endswith("the loop ends: the answer was cut at max_tokens; the loop ends, it does not go on")
    assert thens[3].endswith("keep the cut answer, ask the model to continue, call again")
    assert sum("No such call: this loop had already stopped." in c.value for c in at.caption) == 2
    assert any("max_tokens_recovery: the answer was cut" in e for e in alerts(at))


@pytest.mark.parametrize("scenario, minimal_end, complete_words", [
    ("overloaded", "**Stopped by an error** at call 1: `529 overloaded_error`.", "wait "),
    ("big-context", "**Stopped by an error** at call 5: `400 invalid_request_error`.",
     "compact the history, then call again"),
])
def test_side_by_side_where_the_minimal_loop_stops_the_complete_one_goes_on(scenario, minimal_end, complete_words):
    at = app("pages/compare.py")
    at.radio(key="compare-pick").set_value(scenario).run()
    assert not at.exception, at.exception
    text = columns_text(at)
    assert minimal_end in text and "**Ended with `end_turn`**" in text
    assert complete_words in text
    errors = [e.value for e in at.error if "failed" in e.value]
    assert errors, "the failed call is drawn as an error"
    if scenario == "overloaded":
        assert any("Overloaded" in e for e in errors)
        assert any("Its retry waits" in c.value and "not waited" in c.value for c in at.caption)
    else:
        assert any("prompt is too long:" in e for e in errors)


def test_side_by_side_parallel_says_the_wall_time_beside_the_sum():
    at = app("pages/compare.py", scenario="parallel")
    minimal, complete = at.session_state["compare-runs"][("parallel", "en")]
    batch = complete.calls[0].parallel
    assert max(began for began, _ in batch["ran_ms"]) < min(ended for _, ended in batch["ran_ms"])  # at once
    assert batch["tools"] == 3 and minimal.calls[0].parallel is None
    assert any("the complete loop runs the tools at once" in e for e in alerts(at))
    assert any(c.value.startswith("3 tools at once: wall time") for c in at.caption)


def test_step_through_the_complete_loop_shows_the_wait_its_state_and_a_link_that_keeps_the_profile(monkeypatch):
    from loop.engine.waits import SCALE_VARIABLE

    monkeypatch.setenv(SCALE_VARIABLE, "1")  # the real wait (1-2 s): its box is still drawn when the test clicks Skip
    at = app(scenario="overloaded", profile="complete", step="2")
    run = at.session_state["live-run"]
    assert run.profile.name == "complete" and run.trace.steps[-1].stage == "retry"
    assert any("loop: **complete**" in c.value for c in at.caption)
    assert "### Step 2 of 2 · turn 1 · 2 · the call failed: wait, then retry" in markdowns(at)
    # the wait before attempt 2, in the seconds really left, with Skip the wait
    wait = next(m for m in markdowns(at) if "**Attempt 1 of 4 failed**" in m)
    assert "529 overloaded_error" in wait and "before attempt 2." in wait
    assert at.button(key="live-skip-2").label == "Skip the wait"  # the wait after step 2
    # the complete loop's state beside the LoopState
    state = table(at, "budget").iloc[0]
    assert state["retries"] == "1, the next call is attempt 2" and "retry" in state["transitions"]
    query = copied_link(at)
    assert "scenario=overloaded" in query and "profile=complete" in query
    click(at, "live-skip-2")  # Skip the wait: the call goes now
    assert len(run.trace) >= 3 and run.trace.steps[2].stage == "retry" and run.trace.steps[2].detail["attempt"] == 2


def test_step_waits_then_calls_and_run_to_end_goes_through_every_wait():
    at = app(scenario="overloaded", profile="complete", step="1")
    run = at.session_state["live-run"]
    click(at, "live-step")  # attempt 1: 529
    assert run.trace.steps[-1].stage == "retry"
    run.skip_wait()
    click(at, "live-step")  # the wait is over: attempt 2 goes
    assert [s.stage for s in run.trace.steps] == ["user_request", "retry", "retry"]
    for _ in range(6):  # Run to end stops at each wait, and goes on once it is over
        if run.done:
            break
        run.skip_wait()
        click(at, "live-to-end")
    assert run.done and run.state.ended == "end_turn" and run.state.retries == 3


def test_the_sidebar_picks_the_complete_loop_for_its_scenarios_and_lets_the_learner_switch_back():
    at = app()
    assert at.radio(key="set-profile").value == "minimal"
    at.selectbox(key="set-scenario").set_value("long-answer").run()
    assert at.radio(key="set-profile").value == "complete"
    at.radio(key="set-profile").set_value("minimal").run()
    click(at, "new-run")
    run = at.session_state["live-run"]
    assert run.profile.name == "minimal"
    at.button(key="live-to-end").click().run()
    assert run.state.ended == "max_tokens"
    at.radio(key="set-profile").set_value("complete").run()
    click(at, "new-run")
    run = at.session_state["live-run"]
    at.button(key="live-to-end").click().run()
    assert run.profile.name == "complete" and run.state.ended == "end_turn"
    assert run.state.recoveries == 2


def test_about_shows_the_chapter_s_table_each_row_linked_to_its_scenario():
    at = app("pages/about.py")
    table = next(m for m in markdowns(at) if m.startswith("| aspect |"))
    rows = table.splitlines()[2:]
    assert len(rows) == 6
    for name in COMPARED:
        assert f"[{name}](/compare?scenario={name})" in table
        assert f"(/?scenario={name}&profile=complete)" in table
    assert all("/compare?scenario=" in row for row in rows)
    assert "| why the loop goes on | mostly `tool_result` | several: retry, resume after compaction, recovery |" in table


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_a_row_of_the_chapter_s_table_its_scenario_does_not_show_says_where_it_is_shown(lang):
    # Streaming is a sidebar toggle (the parallel scenario alone does not stream), and the structured log is a run's
    # journal: the overloaded scenario shows only the progress
    at = app("pages/about.py", lang=lang)
    table = next(m for m in markdowns(at) if m.startswith("| "))
    shape, *_, seen = table.splitlines()[2:]
    assert "parallel" in shape and ("**Stream the answer**" if lang == "en" else "**") in shape
    assert "overloaded" in seen and "--journal run.jsonl" in seen


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_no_english_is_left_beside_each_other_or_in_the_complete_loop(lang):
    at = app("pages/compare.py", lang=lang, scenario="big-context")
    minimal, complete = at.session_state["compare-runs"][("big-context", lang)]
    data = []
    for run in (minimal, complete):
        for call in run.calls:
            data += call.tool_outputs + [str((call.error or {}).get("message", ""))]
    data += [m for m in markdowns(at) if m.startswith("`messages[")]
    # The run's own words are data too, wherever a view quotes them (shortened, in a summary): the task, the
    # model's words and the tools' input; and the transition reasons' names
    said = [minimal.trace.meta["task"]] + [json.dumps(m.get("content"), ensure_ascii=False)
                                           for run in (minimal, complete) for m in run.trace.messages]
    words = names(lang) + list(TRANSITIONS) + sorted(set(re.findall(r"\w*[A-Za-z]{2,}\w*", " ".join(said),
                                                                    re.ASCII)))
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data, words))}
    assert not left, left
    at = app(lang=lang, scenario="overloaded", profile="complete", step="2")
    run = at.session_state["live-run"]
    data = [str(run.workspace), run.model.name]
    left = {s: w for s in texts_on_page(at, tables=True) if (w := english_left(s, data, names(lang)))}
    assert not left, left


def test_a_call_asked_for_as_the_wait_ended_goes_then_and_is_not_left_for_a_later_wait(monkeypatch):
    # Skip the wait (or Step) clicked as the wait ended: its callback ran in a full run of the page, where the
    # countdown that hands the call over is drawn no more; the call went nowhere, and was left asked for until the
    # next wait ended, to go then without a click
    from loop.engine.waits import SCALE_VARIABLE

    monkeypatch.setenv(SCALE_VARIABLE, "1")  # the real waits (1-2 s): the wait is still on when the test looks
    at = app(scenario="overloaded", profile="complete", step="2")
    run = at.session_state["live-run"]
    assert run.trace.steps[-1].stage == "retry" and run.wait_left() > 0
    run.skip_wait()  # what Skip's callback does (progress._skip), the wait over by then
    at.session_state["live-armed"] = "step"
    at.run()
    assert not at.exception
    assert [s.stage for s in run.trace.steps] == ["user_request", "retry", "retry"]  # attempt 2 went, once
    assert "live-armed" not in at.session_state


def test_step_and_skip_clicked_for_one_wait_make_one_call(monkeypatch):
    # Step clicked during the wait, and Skip the wait clicked as it ended: the page's run at that moment sends the
    # call Step asked for, and the Skip click, sent from the box as the browser still showed it, reaches the server
    # with the run after. It skipped the next wait and made a second call, and a wait box it left asked for would
    # have sent a call when that wait ended, without a click.
    from loop.engine.waits import SCALE_VARIABLE

    monkeypatch.setenv(SCALE_VARIABLE, "1")  # the real waits (1-2 s): none ends while the test looks
    at = app(scenario="overloaded", profile="complete", step="1")
    run = at.session_state["live-run"]
    click(at, "live-step")  # attempt 1: 529, then the wait
    click(at, "live-step")  # Step during the wait: the call goes when the wait ends
    assert any("you clicked Step" in c.value for c in at.caption)
    skip = next(b for b in at.button if b.label == "Skip the wait")
    run.skip_wait()  # the wait ends
    at.run()  # the page's run then sends attempt 2: a 529 again, and the next wait begins
    assert [s.stage for s in run.trace.steps] == ["user_request", "retry", "retry"] and run.wait_left() > 0
    sent = at._tree.get_widget_states()  # the page as it is now, and the Skip click of the wait that is over
    sent.widgets.append(skip.click()._widget_state)
    at._run(sent)
    assert not at.exception
    assert [s.stage for s in run.trace.steps] == ["user_request", "retry", "retry"]  # no second call
    assert run.wait_left() > 0 and "live-armed" not in at.session_state  # the next wait runs; nothing asked for


def test_a_link_to_a_failing_scenario_in_the_minimal_loop_says_the_error_and_keeps_the_steps_before_it():
    # the minimal loop does not retry: a link to step 99 of `overloaded` stops at the 529, said on the page
    at = app(scenario="overloaded", step="99")
    run = at.session_state["live-run"]
    assert run.profile.name == "minimal" and len(run.trace) == 1  # the user's request, then the call that failed
    said = " ".join(e.value for e in at.error)
    assert "529" in said or "overloaded" in said.lower(), said
