"""Sub-agents and compaction on the pages: Step through and Replay, a permalink into a sub-agent, a session's
several files, the compact step before and after, in English and Japanese."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace

import re
from html import unescape

import pytest
from streamlit.testing.v1 import AppTest

from loop.files import transcript
from loop.importers import import_files
from tests.apptest import app, click
from tests.tables import diagram_svg, history_roles, html_bodies, html_text, note_text, page_text, table
from tests.test_app_i18n import english_left, names, texts_on_page
from tests.test_app_replay import replay_page, upload
from tests.test_import_threads import compacted_log, log_bytes, session_with_agent


def status(at: AppTest) -> str:
    return next(m.value[4:] for m in at.markdown if m.value.startswith("### "))


def history_head(at: AppTest) -> str:
    """The history panel's heading: `messages · n`, and the thread when it is a sub-agent's."""
    for body in html_bodies(at):
        found = re.search(r'<h4 class="ls-h4">(messages · [^<]*)</h4>', body)
        if found:
            return html_text(found.group(1))
    raise AssertionError("no history on the page")


def lit(svg: str) -> list[str]:
    """The stages the diagram lights, in drawing order (the chapter's loop, then a sub-agent's)."""
    return re.findall(r'<g class="ls-node ls-lit" data-stage="([a-z_]+)"', svg)


def compaction(at: AppTest) -> str:
    """The before-and-after of a compact step, as HTML: from its heading on."""
    body = next(b for b in html_bodies(at) if 'class="ls-compact"' in b)
    return body[body.index('<h4 class="ls-h4">compact'):]


def new_run(at: AppTest, scenario: str) -> AppTest:
    at.selectbox(key="set-scenario").set_value(scenario).run()
    return click(at, "new-run")


def test_stepping_into_a_sub_agent_and_back_out_in_step_through():
    at = new_run(app(), "subagent")
    run = at.session_state["live-run"]
    assert run.trace.meta["toolset"] == "s04"
    click(at, "live-to-end")
    assert run.state.ended == "end_turn"
    trace = run.trace
    child = next(t for t in trace.threads.values() if not t.is_main)
    first = trace.opened_at(child.id)
    # Go to the step before the sub-agent starts: the page offers the way in.
    trace.goto(first - 1)
    at.run()
    assert at.button(key="live-into").label == f"Into the sub-agent's loop ({len(trace.steps_of(child.id))} steps)"
    click(at, "live-into")
    assert trace.cursor == first
    assert status(at) == (f"Step {first + 1} of {len(trace)} · task {child.parent_tool_use_id} · before turn 1 · "
                          "1 · user request into messages")
    assert history_head(at).startswith("messages · 1 · task ")
    assert history_roles(at) == ["user"]  # the sub-agent's fresh history: its prompt alone
    assert "You are inside a sub-agent's loop" in note_text(at)
    svg = diagram_svg(at)
    assert 'class="ls-child ls-inside"' in svg and "ls-busy" in svg  # its loop drawn, the parent's tools waiting
    texts = [unescape(x) for x in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]  # one a line
    assert lit(svg) == ["user_request"] and "1 · the task's prompt" in texts and "into its own messages" in texts
    # The LoopState table has a thread column and the Pairs table shows both threads.
    assert list(table(at, "stage").columns[:4]) == ["now", "step", "thread", "turn"]
    # Up: to the parent's run_tool step that took the sub-agent's answer.
    click(at, "live-up")
    returned = trace.returned_at(child.id)
    assert trace.cursor == returned and trace.steps[returned].stage == "run_tool"
    assert status(at).startswith(f"Step {returned + 1} of {len(trace)} · turn 2 · 4 · run a tool_use")
    assert "Only its final text comes back" in note_text(at)
    pairs = table(at, "status")
    assert list(pairs.columns[:3]) == ["thread", "turn", "id"]
    assert "main" in set(pairs["thread"]) and any(v.startswith("↳ task ") for v in pairs["thread"])


def test_the_compact_step_shows_the_history_before_and_after_side_by_side():
    at = new_run(app(), "compact")
    run = at.session_state["live-run"]
    assert at.number_input(key="set-compact-at").value == 2100
    click(at, "live-to-end")
    trace = run.trace
    micro = next(s for s in trace.steps if s.stage == "compact" and s.detail["kind"] == "micro")
    trace.goto(micro.index)
    at.run()
    shown = html_text(compaction(at))
    assert shown.startswith(f"compact (micro) · messages {micro.n_messages} → {micro.n_messages}")
    assert "Before · " in shown and "After · " in shown
    # each replaced message, as it was and as it is
    assert compaction(at).count('class="ls-msg ') == 2 * len(micro.detail["replaced"])
    auto = next(s for s in trace.steps if s.stage == "compact" and s.detail["kind"] == "auto")
    trace.goto(auto.index - 1)  # the summary call: the summary shown, not yet in messages
    at.run()
    assert "The summary the model wrote" in page_text(at)
    trace.goto(auto.index)
    at.run()
    assert html_text(compaction(at)).startswith(f"compact (auto) · messages {auto.detail['messages_before']} → 1")
    assert lit(diagram_svg(at)) == ["compact"]


def test_a_permalink_opens_a_step_inside_the_sub_agent():
    from loop.engine.runner import start

    run = start(scenario="subagent")
    run.run_to_end()
    inside = next(i for i, s in enumerate(run.trace.steps) if s.thread != "main") + 3
    at = app(scenario="subagent", step=str(inside + 1))
    assert status(at).startswith(f"Step {inside + 1} of ") and " · task " in status(at)
    assert history_head(at).startswith("messages · 2 · task ")


def test_replay_a_session_with_its_sub_agent_file_and_a_compaction(tmp_path):
    main, side = session_with_agent(via_file=True)
    at = replay_page()
    at.file_uploader(key="replay-upload").set_value([
        ("session.jsonl", log_bytes(main), "application/json"),
        ("agent-a9.jsonl", log_bytes(side), "application/json")]).run()
    assert not at.exception, at.exception
    replay = at.session_state["replay"]
    assert replay["name"] == "session.jsonl" and replay["sub_agent_logs"] == 1
    trace = replay["trace"]
    assert trace.meta["imported"]["source"] == "session.jsonl with 1 sub-agent log(s)"  # the record: English
    assert list(trace.threads) == ["main", "agent-a9"] and not replay["warnings"]
    trace.goto(trace.opened_at("agent-a9"))
    at.run()
    assert " · task toolu_task · " in status(at)
    click(at, "replay-up")
    assert trace.cursor == trace.returned_at("agent-a9")
    # a zip of a compacted session: the compact step is there and drawn
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("s.jsonl", log_bytes(compacted_log()))
    upload(at, "s.zip", zipped.getvalue())
    trace = at.session_state["replay"]["trace"]
    step = next(s for s in trace.steps if s.stage == "compact")
    trace.goto(step.index)
    at.run()
    assert html_text(compaction(at)).startswith("compact (auto) · messages 4 → 1")


def test_many_sub_agents_can_be_reached_from_a_thread_picker():
    from tests.synthetic import claude_code_session

    main, files = claude_code_session(records=600, compactions=1, agents=4, seed=4)
    data = [("session.jsonl", main), *files.items()]
    trace = import_files(data).trace
    assert len(trace.threads) == 5
    at = replay_page()
    at.file_uploader(key="replay-upload").set_value([(n, d, "application/json") for n, d in data]).run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="replay-thread")
    assert picker.value == "main" and len(picker.options) == 5
    target = list(at.session_state["replay"]["trace"].threads)[3]
    picker.set_value(target).run()
    trace = at.session_state["replay"]["trace"]
    assert trace.cursor == trace.opened_at(target) and trace.steps[trace.cursor].thread == target


def test_japanese_inside_a_sub_agent_leaves_no_english_label():
    at = app(scenario="subagent", lang="ja")
    run = at.session_state["live-run"]
    click(at, "live-to-end")
    trace = run.trace
    child = next(t for t in trace.threads.values() if not t.is_main)
    trace.goto(trace.opened_at(child.id) + 1)
    at.run()
    from loop.engine.scenarios import SCENARIOS

    scenarios = [*SCENARIOS, *(s.task for s in SCENARIOS.values())]  # names and tasks are data
    data = [run.task, str(run.workspace), run.model.name, child.label, child.id, *scenarios,
            *[c.label for c in trace.threads.values()]]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data, names("ja")))}
    assert not left, left
    compact = app(scenario="compact", lang="ja")
    assert compact.session_state["live-run"].trace is not None
    click(compact, "live-to-end")
    ctrace = compact.session_state["live-run"].trace
    ctrace.goto(next(s.index for s in ctrace.steps if s.stage == "compact"))
    compact.run()
    task = compact.session_state["live-run"].task  # the task in Japanese names its files: data, as above
    left = {s: w for s in texts_on_page(compact) if (w := english_left(s, [task, *scenarios], names("ja")))}
    assert not left, left
    assert transcript.violations(ctrace) == [] and json.dumps(ctrace.meta)


def test_presenter_mode_inside_a_sub_agent_shows_its_loop_and_its_history():
    from loop.engine.runner import start

    run = start(scenario="subagent")
    run.run_to_end()
    inside = next(i for i, s in enumerate(run.trace.steps) if s.thread != "main") + 2
    at = app(scenario="subagent", step=str(inside + 1))
    at.toggle(key="present").set_value(True).run()
    assert not at.exception, at.exception
    assert " · task " in status(at)  # the heading names the thread; the history's own heading keeps to one line
    assert history_head(at) == "messages · 2"
    assert "The sub-agent's own history; the parent's is not in it." in page_text(at)
    assert "You are inside a sub-agent's loop" not in note_text(at)  # said once, at its first step
    svg = diagram_svg(at)
    assert 'class="ls-child ls-inside"' in svg and lit(svg) == [run.trace.steps[inside].stage]
    click(at, "live-step")
    assert status(at).startswith(f"Step {inside + 2} of ") and " · task " in status(at)
    live = at.session_state["live-run"].trace
    live.goto(live.opened_at(live.steps[inside].thread))
    at.run()
    assert "You are inside a sub-agent's loop" in note_text(at)


def test_turn_count_moves_only_at_a_write_back_of_its_own_thread():
    # the step that takes the sub-agent's answer follows the sub-agent's last step, whose turn_count is its own:
    # the parent's turn_count did not move there
    from loop.engine.runner import start
    from loop.views.parts import turn_count_cell, turn_count_change

    trace = start(scenario="subagent").trace
    run = start(scenario="subagent")
    run.run_to_end()
    trace = run.trace
    moved = [i for i in range(len(trace)) if turn_count_change(trace, i)]
    assert moved and all(trace.steps[i].stage == "write_back" for i in moved)
    returned = trace.returned_at(next(t for t in trace.threads.values() if not t.is_main).id)
    assert turn_count_cell(trace, returned) == str(trace.steps[returned].turn_count)
    at = app(scenario="subagent", step=str(returned + 1))
    assert "`turn_count`" not in note_text(at) and "→" not in table(at, "stage").iloc[-1]["turn_count"]


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_why_an_imported_history_was_compacted_is_said_in_the_page_s_language(lang):
    from loop.text.catalogs import say
    from loop.engine.compact import COMPACTED_WHY, RESENT_WHY
    from loop.views.narrate import why_in
    from loop.engine.trace import Step

    at = replay_page()
    at.segmented_control(key="lang").set_value(lang).run()
    upload(at, "s.jsonl", log_bytes(compacted_log()))
    trace = at.session_state["replay"]["trace"]
    step = next(s for s in trace.steps if s.stage == "compact")
    assert step.detail["why"] == COMPACTED_WHY  # the transcript keeps it in English
    trace.goto(step.index)
    at.run()
    head = html_text(compaction(at)).split("\n")[0:2]
    shown = " ".join(head)
    assert say(lang, COMPACTED_WHY) in shown, shown
    left = english_left(shown, [], names(lang))
    assert not left, f"English left above the compaction: {left}\n<= {shown}"
    step.detail = replace(step.detail, why="a reason no catalog knows")  # an older file's own words: as recorded
    at.run()
    assert "a reason no catalog knows" in html_text(compaction(at))
    resent = Step(0, "compact", 1, None, None, 3, 0, 0, None, 0.0,
                  detail={"why": RESENT_WHY.format(name="s02", sent=3, held=5)})
    assert why_in(resent, lang) == say(lang, RESENT_WHY, name="s02", sent="3", held="5")


def badge_colours(body: str) -> dict[str, str]:
    """Each id badge drawn in an HTML body, by its text: the colour's background as the page paints it."""
    return {html_text(text): bg for bg, text in
            re.findall(r'<span class="ls-badge ls-data" style="background:([^;]+);[^"]*">([^<]*)</span>', body)}


def test_the_sub_agent_s_pairs_read_in_the_run_s_order_each_id_in_a_colour_of_its_own():
    at = new_run(app(), "subagent")
    trace = at.session_state["live-run"].trace
    click(at, "live-to-end")
    child = next(t for t in trace.threads.values() if not t.is_main)
    for cursor in (trace.opened_at(child.id) + 5, trace.returned_at(child.id), len(trace) - 1):
        trace.goto(cursor)
        at.run()
        pairs = table(at, "status")
        # The main loop's first turn first; the sub-agent's pairs right under the task that started them.
        assert list(pairs["thread"])[:2] == ["main", "main"], cursor
        assert all(name.startswith("↳ task ") for name in list(pairs["thread"])[2:]), cursor
        assert list(pairs["tool"])[:2] == ["bash", "task"]
        assert list(pairs["turn"])[:2] == ["1", "2"]
        # Four ids at most, six colours: no two ids on one screen share one, in the table or in the history.
        body = next(b for b in html_bodies(at) if 'data-table="pairs"' in b)
        colours = badge_colours(body[body.index('data-table="pairs"'):])
        assert sorted(colours) == sorted(pairs["id"]) and len(set(colours.values())) == len(colours), colours
        assert len(set(pairs["colour"])) == len(pairs)
        history = next(b for b in html_bodies(at) if 'class="ls-history"' in b)
        for tool_use_id, colour in badge_colours(history).items():
            assert colours[tool_use_id] == colour, tool_use_id
