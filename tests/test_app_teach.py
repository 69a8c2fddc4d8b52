"""The page teaches the chapter exactly: what a call_model step holds outside messages, the moment the model
reads an error, one definition of a turn in every view, the end of the loop, and the About page's checklist."""

import re

import pytest

from loop.engine.mistakes import MISTAKES
from loop.engine.runner import start
from loop.engine.scenarios import SCENARIOS
from loop.views.parts import errors_read_at
from tests.apptest import app, click, slider
from tests.tables import diagram_svg, history_text, html_bodies, note_text, page_text, table, words


def status(at) -> str:
    heads = [m.value.lstrip("# ") for m in at.markdown if m.value.startswith("### Step ")]
    return heads[0] if heads else ""


def note(at) -> str:
    return note_text(at)


def held_outside(at) -> str:
    """What the history draws after its messages: the response received, results collected."""
    body = next(b for b in html_bodies(at) if 'class="ls-history"' in b)
    cards = re.findall(r'<div class="ls-card[^"]*">.*', body, flags=re.S)
    return cards[0] if cards else ""


def full_run(scenario: str):
    run = start(scenario=scenario)
    run.run_to_end()
    return run


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_at_a_call_model_step_the_response_is_received_not_added(scenario):
    at = app(scenario=scenario, step="99")
    run = at.session_state["live-run"]
    calls = [i for i, step in enumerate(run.trace.steps) if step.stage == "call_model"]
    for i in calls:
        slider(at, "live").set_value(i + 1).run()
        card = held_outside(at)
        assert "received by this step, not in messages yet" in card and "→ received by this step" in card, i
        assert "added by this step" not in card, i  # it is not in messages: nothing was added
        assert "added by this step" not in history_text(at), i  # a call_model step appends nothing
        slider(at, "live").set_value(i + 2).run()  # stage 3 appends it: now it was added
        assert "added by this step" in history_text(at) and "received by this step" not in history_text(at)


def test_where_the_model_reads_an_is_error_result_a_note_points_at_it():
    at = app(scenario="recover", step="7")
    run = at.session_state["live-run"]
    assert run.trace.steps[6].stage == "call_model" and errors_read_at(run.trace, 6)
    body = next(b for b in html_bodies(at) if 'class="ls-history"' in b)
    ringed = re.search(r'<div class="ls-block ls-focus ls-error">(.*?)<div class="ls-callout">(.*?)</div>', body, re.S)
    assert ringed, "the is_error block is ringed, with the note under it"
    tool_use_id = errors_read_at(run.trace, 6)[0][2]
    assert tool_use_id in ringed.group(1) and "The model reads this error now." in ringed.group(2)
    assert "a tool_result is not a terminal log" in ringed.group(2)
    assert "The model reads an error in this call" in note(at) and tool_use_id in note(at)
    # one step earlier (the write-back) and later (the response appended) there is no such note
    for k in ("6", "8"):
        slider(at, "live").set_value(int(k)).run()
        assert "The model reads this error now." not in history_text(at)
        assert "The model reads an error" not in note(at)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_step_that_reads_an_error_gets_the_note_and_no_other(scenario):
    run = full_run(scenario)
    reads = {i for i in range(len(run.trace)) if errors_read_at(run.trace, i)}
    results = [s for s in run.trace.steps if s.stage == "run_tool"]
    errors = [i for i, s in enumerate(run.trace.steps) if s.stage == "run_tool" and s.detail["is_error"]]
    # each failed result that was written back is read by the next call, and only there
    expected = set()
    for i in errors:
        later = [j for j in range(i + 1, len(run.trace)) if run.trace.steps[j].stage == "call_model"]
        if later:
            expected.add(later[0])
    assert reads == expected, (scenario, reads, expected, len(results))


def test_the_write_back_belongs_to_the_turn_it_ends_in_every_view():
    at = app(scenario="hello-py", step="6")
    run = at.session_state["live-run"]
    step = run.trace.steps[5]
    assert step.stage == "write_back" and step.turn_count == 2 and step.turn == 1
    assert status(at) == "Step 6 of 6 · turn 1 · 5 · write tool_results back"
    pairs = table(at, "status")
    assert list(pairs["turn"]) == ["1"]  # the pair this write-back completes: turn 1, as the header says
    steps = table(at, "stage")
    now = steps[steps["now"] == "▶"].iloc[0]
    assert (now["turn"], now["turn_count"]) == ("1", "1 → 2")
    assert table(at, "messages (count)").iloc[0]["turn_count"] == "1 → 2"
    assert "turn_count 1 → 2: turn 1 ends with this write-back; the next call starts turn 2." in note(at)
    assert re.search(r">turn 1</text>", diagram_svg(at))  # the diagram's turn box
    click(at, "live-step")  # the next call: turn 2 everywhere
    assert status(at).startswith("Step 7 of 7 · turn 2 · ")
    assert re.search(r">turn 2</text>", diagram_svg(at))
    assert table(at, "stage").iloc[-1]["turn"] == "2" and table(at, "stage").iloc[-1]["turn_count"] == "2"


def test_in_the_complete_loop_a_request_to_continue_ends_its_turn_and_the_note_says_so():
    run = start(scenario="max-tokens", profile="complete")
    while not run.done:  # the complete loop's waits before a retry skipped, not waited
        run.skip_wait()
        run.execute()
    k = next(s.index for s in run.trace.steps if s.stage == "recover")
    at = app(scenario="max-tokens", profile="complete", step=str(k + 1))
    step = at.session_state["live-run"].trace.steps[k]
    assert step.stage == "recover" and step.turn_count == step.turn + 1
    said = note(at)
    assert (f"turn_count {step.turn} → {step.turn + 1}: turn {step.turn} ends with this request to continue; the "
            f"next call starts turn {step.turn + 1}.") in said
    assert "write-back" not in said  # no tool_result is written back at this step


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_headers_pairs_and_loopstate_count_turns_alike_in_every_scenario(scenario):
    from loop.engine import rules
    from loop.views.parts import THREAD_COLUMN, pairs_rows, status_line, step_columns, step_row, thread_name

    trace = full_run(scenario).trace
    rows, _ = pairs_rows(trace, len(trace) - 1)
    turn_column = step_columns(trace).index("turn")
    for thread in trace.threads.values():  # a sub-agent counts the turns of its own loop
        own = [r for r in rows if r.get(THREAD_COLUMN, "main") == thread_name(thread)]
        steps = [s for s in trace.steps if s.thread == thread.id]
        for row, pair in zip(own, rules.pairs(thread.messages), strict=True):
            # (the last such steps: a compaction rewrites the history, and the pairs are the history's last version)
            asked = next(s for s in reversed(steps)
                         if s.stage == "append_assistant" and s.n_messages == pair.use_index + 1)
            answered = next(s for s in reversed(steps)
                            if s.stage == "write_back" and s.n_messages == pair.result_index + 1)
            turn = row["turn"]
            assert asked.turn == answered.turn == turn, (scenario, pair.tool_use_id)
            assert step_row(trace, answered.index)[turn_column] == turn  # the LoopState table's turn column
            assert f" · turn {turn} · 5 · write tool_results back" in status_line(trace, answered.index)  # the header


def test_the_user_request_comes_before_turn_1():
    at = app(scenario="list-files", step="1")
    assert status(at) == "Step 1 of 1 · before turn 1 · 1 · user request into messages"
    assert table(at, "stage").iloc[0]["turn"] == "—"
    assert re.search(r">turn 1</text>", diagram_svg(at))  # the box names the turn about to start


def test_after_the_loop_ends_the_history_is_not_said_to_feed_a_next_call():
    at = app(scenario="list-files", step="99")
    text = history_text(at)
    assert "as the loop left it" in text and "on its next call" not in text
    slider(at, "live").set_value(6).run()  # at a write-back in the middle of the run there is a next call
    assert "exactly as the model will see it on its next call" in history_text(at)


def test_max_tokens_says_the_answer_was_cut_off():
    at = app(scenario="max-tokens", step="99")
    run = at.session_state["live-run"]
    assert run.state.ended == "max_tokens"
    cut = "The answer was cut off at max_tokens: it is incomplete, and the loop does not go on."
    assert words(at) == "The loop has ended. " + cut  # beside the buttons
    assert "The loop ends. " + cut in note(at)


def test_the_same_end_is_said_on_replay():
    at = app()
    at.switch_page("pages/replay.py").run()
    at.selectbox(key="replay-sample").set_value("max-tokens").run()
    click(at, "replay-to-end")
    assert "cut off at max_tokens" in page_text(at)


def test_the_about_page_follows_the_chapter():
    from loop.views.notes import ONE_SENTENCE, REMEMBER

    at = app()
    at.switch_page("pages/about.py").run()
    text = page_text(at)
    assert "**The chapter's most important sentence:** " + ONE_SENTENCE in [i.value for i in at.info]
    assert REMEMBER in [s.value for s in at.success]  # 一文で覚える: a different sentence
    assert "Stage 1 happens once, before the loop. Stages 2 to 5 are **one turn**" in text
    assert "Both pages" not in text and "no longer contains" not in text
    assert MISTAKES["no-assistant-append"].rule in text  # the classic mistakes, as their definitions say them
    boxes = [c.label for c in at.checkbox]
    assert boxes == ["A model alone is not an agent: it takes a loop that writes tool results back.",
                     "The assistant response itself must stay in history, or the next turn is cut off.",
                     "A tool_result is not a terminal log: it is the next turn's input block."]
    links = [(p.proto.label, p.proto.query_string) for p in at.get("page_link")]
    assert ("See it: step 6 of `list-files`", "scenario=list-files&step=6") in links
    assert ("Break it: No loop: one call, and the tool_use is never run", "mistake=no-loop") in links


def test_each_checklist_link_opens_the_stage_it_names():
    from pages.about import CHECKLIST

    for _, scenario, step, stage, mistake in CHECKLIST:
        run = start(scenario=scenario)
        while len(run.trace) < step:
            run.execute()
        assert run.trace.steps[step - 1].stage == stage, (scenario, step)
        if stage == "call_model":  # the third point: the call where the model reads a failed result
            assert errors_read_at(run.trace, step - 1), (scenario, step)
