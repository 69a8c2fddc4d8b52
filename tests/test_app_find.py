"""Find on the Replay page: Previous / Next match jump between errors, a tool's runs or a text, and the slider
marks where they are; before an imported real log is exported, the page says it may hold secrets."""

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import app, click
from tests.test_import_claude_code import TASK, Log


def _session() -> bytes:
    log = Log()
    parent = log.history(TASK)
    log.history([{"role": "user", "content": "again, for d"}, *TASK[1:]], parent)
    return log.bytes()


def _opened(lang: str = "en", find: bool = True) -> AppTest:
    """The replay of `_session()`, its Find popover open (`find`), as a click on Find opens it."""
    at = app("pages/replay.py", lang=lang)
    at.file_uploader(key="replay-upload").set_value(("session.jsonl", _session(), "application/json")).run()
    assert not at.exception, at.exception
    if find:
        at.session_state["replay-find"] = True
        at.session_state["replay-goto"] = True  # and Go to step, whose slider the matches are marked under
        at.run()
    return at


def _html(at: AppTest) -> str:
    return " ".join(e.proto.body for e in at.get("html"))


def _at(at: AppTest):
    trace = at.session_state["replay"]["trace"]
    return trace, trace.steps[trace.cursor]


def test_next_and_previous_error_jump_to_the_failed_results_and_stop_at_the_last():
    at = _opened()
    trace, _ = _at(at)
    assert trace.cursor == 0 and at.button(key="replay-find-previous").disabled
    click(at, "replay-find-next")
    _, step = _at(at)
    assert step.stage == "run_tool" and step.detail["is_error"] and step.detail["tool_use_id"] == "toolu_2"
    first = trace.cursor
    assert "Match 1 of 2" in " ".join(c.value for c in at.caption)
    click(at, "replay-find-next")
    _, step = _at(at)
    assert trace.cursor > first and step.detail["is_error"]
    assert at.button(key="replay-find-next").disabled  # no error after the last one
    click(at, "replay-find-previous")
    assert trace.cursor == first


def test_a_tool_by_name_and_a_text_are_found_and_marked_under_the_slider():
    at = _opened()
    at.selectbox(key="replay-find-kind").set_value("Tool").run()
    at.selectbox(key="replay-find-tool").set_value("Read").run()
    click(at, "replay-find-next")
    _, step = _at(at)
    assert step.stage == "run_tool" and step.detail["name"] == "Read"
    marks = _html(at)
    assert 'id="ls-find-marks-slider-replay" data-matches="2"' in marks
    at.selectbox(key="replay-find-kind").set_value("Text").run()
    at.text_input(key="replay-find-text").input("AGAIN, FOR").run()
    click(at, "replay-find-next")
    _, step = _at(at)
    assert step.stage == "user_request" and step.detail["task"] == "again, for d"
    assert 'data-matches="1"' in _html(at)
    at.text_input(key="replay-find-text").input("nowhere to be seen").run()
    assert "No match in this trace." in " ".join(c.value for c in at.caption)
    keys = {b.key for b in at.button}  # nothing to jump to: neither is drawn, and a cursor move sends neither
    assert "replay-find-next" not in keys and "replay-find-previous" not in keys
    at.text_input(key="replay-find-text").input("again, for").run()  # found again: both are back
    assert {"replay-find-next", "replay-find-previous"} <= {b.key for b in at.button}


def test_a_trace_with_nothing_to_find_draws_no_match_buttons_and_one_with_errors_does():
    at = app(scenario="two-tools", step="3")  # no error in it: the default query (errors) finds nothing
    assert not {"live-find-next", "live-find-previous"} & {b.key for b in at.button}
    click(at, "live-back")  # a cursor move sends them no more than the first run did
    assert not {"live-find-next", "live-find-previous"} & {b.key for b in at.button}
    with_errors = _opened(find=False)  # a closed Find, and errors in the trace: they are drawn, with their keys
    assert with_errors.button(key="replay-find-next").proto.shortcut == "alt+down"
    assert with_errors.button(key="replay-find-previous").proto.shortcut == "alt+up"


def test_a_closed_find_draws_no_query_and_keeps_the_one_chosen():
    at = _opened(find=False)
    kinds = lambda: [s for s in at.selectbox if s.key == "replay-find-kind"]  # noqa: E731
    assert not kinds() and not any("match" in c.value for c in at.caption)  # a cursor move sends none of it
    at.session_state["replay-find"] = True
    at.run()
    at.selectbox(key="replay-find-kind").set_value("Tool").run()
    at.selectbox(key="replay-find-tool").set_value("Read").run()
    at.session_state["replay-find"] = False  # closed again
    at.run()
    assert not kinds()
    click(at, "replay-find-next")
    click(at, "replay-back")
    click(at, "replay-find-next")  # still Read's runs, not the errors
    _, step = _at(at)
    assert step.stage == "run_tool" and step.detail["name"] == "Read"
    at.session_state["replay-find"] = True
    at.run()
    assert at.selectbox(key="replay-find-kind").value == "Tool" and at.selectbox(key="replay-find-tool").value == "Read"


@pytest.mark.parametrize("lang, words", [("ja", "一致"), ("zh", "匹配")])
def test_find_speaks_the_page_language(lang, words):
    at = _opened(lang)
    click(at, "replay-find-next")
    assert words in " ".join(c.value for c in at.caption)



def test_an_imported_real_log_warns_before_it_is_exported_and_a_sample_does_not():
    at = _opened()
    save = next(b for b in at.get("download_button") if b.proto.id.endswith("-replay-save"))
    assert "imported from a real log" in save.proto.help and "nothing in them is redacted" in save.proto.help
    at.session_state["replay-exports"] = True  # the exports' expander opened
    at.run()
    assert any("nothing in them is redacted" in w.value for w in at.warning)
    sample = app("pages/replay.py")
    sample.session_state["replay-exports"] = True
    sample.run()
    assert not any("redacted" in w.value for w in sample.warning)
    assert "redacted" not in next(b for b in sample.get("download_button") if b.proto.id.endswith("-replay-save")).proto.help


def test_the_raw_view_names_the_line_a_step_came_from():
    at = _opened()
    click(at, "replay-find-next")  # the failed result of toolu_2
    trace, step = _at(at)
    at.session_state["replay-raw"] = True
    at.run()
    said = " ".join(c.value for c in at.caption)
    assert f"line {step.detail['origin']['line']} of the imported log" in said


def test_a_language_switch_keeps_the_query_chosen_and_its_matches():
    at = _opened()
    at.selectbox(key="replay-find-kind").set_value("Tool").run()
    at.selectbox(key="replay-find-tool").set_value("Read").run()
    for lang, kind in (("ja", "tool"), ("zh", "工具"), ("en", "Tool")):
        at.segmented_control(key="lang").set_value(lang).run()
        assert not at.exception, at.exception
        at.session_state["replay-find"] = True  # Find opened again, in the new words
        at.run()
        assert at.selectbox(key="replay-find-kind").value == kind  # the same kind, in the page's words
        assert at.selectbox(key="replay-find-tool").value == "Read"
    click(at, "replay-find-next")  # still Read's runs, not the errors
    _, step = _at(at)
    assert step.stage == "run_tool" and step.detail.name == "Read"
    at.selectbox(key="replay-find-kind").set_value("Text").run()
    at.text_input(key="replay-find-text").set_value("again").run()
    at.segmented_control(key="lang").set_value("ja").run()
    at.session_state["replay-find"] = True
    at.run()
    assert at.text_input(key="replay-find-text").value == "again"
