"""Your loop in AppTest: the page opens in every language, and a run of a learner's loop (made in-process, as a
Recording put where Run puts it) is drawn with Step through's views, the learner's line lit and the broken rule named."""

from unittest import mock

import pytest
from streamlit.testing.v1 import AppTest

from loop.text.catalogs import say
from loop.engine.mistakes import MISTAKES
from loop.yours.listing import CALL as CALL_COMMENT, CHAPTER_LOOP, chapter_loop
from loop.yours.lines import AFTER, MADE, RETURNED, SAID
from loop.yours.reading import read
from pages.views.blocks import inline_code
from pages.views.permalink import source_of
from pages.views.yours import SCENARIOS, YOURS, starting_code

from .apptest import app, run
from .learner import record
from .test_yours_cli import SCENARIO, WRONG
from .test_yours_lines import LISTING_MADE, expected

pytestmark = pytest.mark.usefixtures("no_child_ahead")  # its runs are made in this process

NO_APPEND = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")
CALL = "        response = client.messages.create("


def html(at) -> str:
    return "".join(h.value for h in at.get("html"))


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_the_page_opens_with_the_chapters_listing_and_the_scenarios_the_chapters_loop_ends_on(lang):
    at = app("pages/yours.py", lang=lang)
    assert [t.value for t in at.title] == [say(lang, "Your loop")]
    assert at.session_state["yours-source"] == starting_code(lang)
    assert chapter_loop(lang) in starting_code(lang) and f"# {say(lang, CALL_COMMENT)}\n" in starting_code(lang)
    assert starting_code(lang).splitlines()[0] == "# " + say(lang, "Write agent_loop(state) as the chapter does: "
                                                             "client, MODEL, SYSTEM, TOOLS, MAX_TOKENS and "
                                                             "run_tool(block) are given.")
    picker = at.selectbox(key="yours-scenario")
    assert picker.options == SCENARIOS and "big-context" not in SCENARIOS and "overloaded" not in SCENARIOS
    assert [b.label for b in at.button] == [say(lang, "Run")]
    intro = next(c.value for c in at.caption if "agent_loop" in c.value)
    assert say(lang, "Run") in intro  # the button named as it reads
    if lang == "zh":  # in the words the Chinese interface uses for them
        assert "模型" in intro and "工具" in intro and " model " not in intro and " tool " not in intro


def test_a_broken_run_is_named_and_stepping_lights_the_line_that_sent_each_call():
    at = app("pages/yours.py", lang="ja")
    at.session_state[YOURS] = read(record(NO_APPEND, lang="ja"))
    run(at)
    [named] = at.error
    assert say("ja", MISTAKES["no-assistant-append"].title) in named.value
    assert "400" in named.value and "unexpected `tool_use_id`" in named.value
    made = NO_APPEND.splitlines().index('        state["messages"].append({') + 1  # the write-back left: of results
    assert say("ja", SAID[MADE], line=made, message=2, call=2, code=inline_code('state["messages"].append({')) \
        in named.value  # the line that made the message the API refused, not the call's
    assert "(/mistakes?mistake=no-assistant-append)" in named.value
    line = NO_APPEND.splitlines().index(CALL) + 1
    assert say("ja", "**The fix:**") + " " + say("ja", MISTAKES["no-assistant-append"].fix) in named.value
    assert 'class="lit"' not in html(at)  # step 1: the task, before any line of theirs ran
    state = lambda: next(m.value for m in at.markdown if "| `turn_count` |" in m.value)  # noqa: E731
    assert "| `turn_count` | — | `1` |" in state()  # not read yet: no call has been made (never "None")
    at.button(key="yours-step").click()
    run(at)
    assert f'<div class="lit" data-line="{line}">' in html(at)
    assert "| `turn_count` | `1` | `1` |" in state()  # read at the call
    assert "Traceback" not in "".join(str(e.value) for e in at.error) + "".join(c.value for c in at.code)


def test_a_yours_program_that_keeps_no_state_of_its_own_is_said_to_keep_none_never_to_hold_none():
    """The course's whole s01 file keeps `messages` alone: its column says so, not that a turn_count of its is None."""
    from loop.yours.recording import LearnerState

    recording = record(CHAPTER_LOOP)
    for exchange in recording.exchanges:
        exchange.state = LearnerState()  # what the sandbox reads from a program with no state of its own
    at = app("pages/yours.py", lang="zh")
    at.session_state[YOURS] = read(recording)
    run(at)
    at.button(key="yours-step").click()
    run(at)
    table = next(m.value for m in at.markdown if "| `turn_count` |" in m.value)
    assert "| `turn_count` | — | `1` |" in table and "| `transition_reason` | — |" in table and "None` |" not in \
        table.split("| `transition_reason` |")[0]
    said = " ".join(c.value for c in at.caption)
    assert say("zh", "Your code keeps no state of its own (no turn_count) at the call shown last: —.") in said


def test_a_yours_run_of_the_untouched_starter_is_still_the_editor_s_code_after_the_language_changes():
    """Changing the page's language rewrites an untouched editor's comments in the new language: the run shown is
    still of the code in the editor (only a change of the learner's own says it is of earlier code)."""
    earlier = "This run is of your earlier code: Run again to run the code in the editor."
    at = app("pages/yours.py", lang="en")
    at.session_state[YOURS] = read(record(starting_code("en")))
    run(at)
    assert at.session_state["yours-source"] == starting_code("en")
    at.segmented_control(key="lang").set_value("ja")  # the sidebar's language picker
    run(at)
    assert at.session_state["yours-source"] == starting_code("ja")  # the editor, in Japanese
    assert say("ja", earlier) not in " ".join(c.value for c in at.caption)
    made_in = "This run was made in {language}: Run again to make it in this page's language."
    assert say("ja", made_in, language="English") in " ".join(c.value for c in at.caption)  # its words are English
    at.session_state["yours-source"] = starting_code("ja") + "\nprint('mine')\n"  # the learner's own change
    run(at)
    assert say("ja", earlier) in " ".join(c.value for c in at.caption)
    at.session_state[YOURS] = read(record(starting_code("ja"), lang="ja"))  # run again, in Japanese
    at.session_state["yours-source"] = starting_code("ja")
    run(at)
    assert not [c.value for c in at.caption if "もう一度" in c.value]  # neither caption: the run is the page's


def test_the_page_names_each_mistake_at_the_line_that_made_it_with_the_fix_and_the_labs_link_in_every_language():
    langs = ("en", "ja", "zh")
    apps = {lang: app("pages/yours.py", lang=lang) for lang in langs}
    for i, mistake in enumerate(MISTAKES):  # each mistake in one language, each language in turn
        lang = langs[i % 3]
        at, source = apps[lang], WRONG[mistake]
        at.session_state[YOURS] = read(record(source, SCENARIO.get(mistake, "list-files"), lang=lang))
        run(at)
        [named] = at.error
        how, line, message, call = expected(source, LISTING_MADE[mistake])  # the line that made it, or the return
        assert how == (RETURNED if mistake == "no-loop" else AFTER if mistake == "no-write-back" else MADE)
        assert say(lang, SAID[how], line=line, message=message, call=call,
                   code=inline_code(source.splitlines()[line - 1].strip())) in named.value, (mistake, lang)
        assert say(lang, "**The fix:**") + " " + say(lang, MISTAKES[mistake].fix) in named.value
        assert f"(/mistakes?mistake={mistake})" in named.value


def test_an_exception_shows_their_traceback_only_and_a_syntax_error_its_line_and_column():
    raising = CHAPTER_LOOP.replace("        results = []\n", "        results = []\n        1 / 0\n")
    at = app("pages/yours.py")
    at.session_state[YOURS] = read(record(raising))
    run(at)
    line = raising.splitlines().index("        1 / 0") + 1
    [named] = at.error
    assert f"line {line}" in named.value and "ZeroDivisionError" in named.value
    [shown] = [c.value for c in at.code if "Traceback" in c.value or "ZeroDivisionError" in c.value]
    assert "your_loop.py" in shown and "loop/" not in shown and "site-packages" not in shown

    at.session_state[YOURS] = read(record("def agent_loop(state):\n    while True\n        pass\n"))
    run(at)
    [named] = at.error
    assert "line 2, column" in named.value


def _run_row():
    """The page's Run row alone: AppTest runs a page it opened by its file first alone, and the rerun through app.py
    drops a button's click."""
    from pages.views.yours import YOURS, draw_run_row, draw_yours, starting_code
    import streamlit as st

    draw_run_row(starting_code("en"))
    if YOURS in st.session_state:
        draw_yours(st.session_state[YOURS])


def test_run_draws_the_learners_run_and_a_sandbox_that_cannot_start_is_said_without_a_traceback():
    at = AppTest.from_function(_run_row, default_timeout=60)
    at.run()
    at.selectbox(key="yours-scenario").set_value("recover")
    at.button(key="yours-run-button").click()
    at.run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Your loop ended by itself and kept every rule: 2 model calls."]
    assert at.session_state[YOURS].trace.meta["yours"] == {"source": starting_code("en"), "scenario": "recover"}

    with mock.patch("loop.yours.sandboxed.run", side_effect=OSError("bubblewrap is missing")):
        at.button(key="yours-run-button").click()
        at.run()
    assert not at.exception, at.exception
    assert any("Your loop could not be run here: OSError: bubblewrap is missing" in e.value for e in at.error)


def test_stepping_a_learners_run_writes_its_own_link_and_none_of_another_page_into_the_address():
    at = app("pages/yours.py")
    at.session_state["replay"] = {"name": "two-tools.json", "source": "sample"}  # a sample opened in Replay before
    at.session_state[YOURS] = read(record(CHAPTER_LOOP))
    run(at)
    at.button(key="yours-step").click()
    run(at)
    assert "sample" not in at.query_params
    assert at.query_params["scenario"] == "list-files" and at.query_params["step"] == "2"
    assert source_of(at.query_params["code"]) == CHAPTER_LOOP
