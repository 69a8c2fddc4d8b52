"""Predict, then step: with the toggle on, Step asks before a step that has a question, and the step shows only
after an answer, marked right or wrong with the why, in the page's language; the score, Predict again, About's
checklist and ?predict=on."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from loop.text.catalogs import say
from loop.views.questions import question_before
from pages.views.blocks import markdown_html
from tests.apptest import app, click, copied_link, run
from tests.tables import html_bodies
from tests.test_app_ahead import ahead
from tests.test_app_i18n import english_left, names, texts_on_page

NOT_QUITE = {"en": "Not quite.", "ja": "惜しい。", "zh": "不太对。"}
RIGHT = {"en": "Right:", "ja": "正解:", "zh": "正确："}


def status(at: AppTest) -> str:
    return next(m.value[4:] for m in at.markdown if m.value.startswith("### "))


def choices(at: AppTest, key: str) -> list[str]:
    return [b.label for b in at.button if (b.key or "").startswith(f"{key}-choice-")]


def verdict(at: AppTest) -> str | None:
    found = [b for b in html_bodies(at) if 'class="ls-verdict' in b]
    return found[0] if found else None


def asked(at: AppTest) -> str | None:
    found = [b for b in html_bodies(at) if 'class="ls-question' in b]
    return found[0] if found else None


def live_trace(at: AppTest):
    return at.session_state["live-run"].trace


def turned_on(at: AppTest, key: str = "live") -> AppTest:
    at.toggle(key=f"{key}-predict").set_value(True)
    return run(at)


def test_step_asks_first_and_a_right_answer_reveals_the_step_marked_right():
    at = turned_on(app(scenario="hello-py", step="3"))
    trace = live_trace(at)
    assert trace.cursor == 2 and asked(at) is None
    click(at, "live-step")  # the decide step exists now (executed), but is not shown, nor counted
    assert trace.cursor == 2 and len(trace) == 4
    assert status(at).startswith("Step 3 of 3 · turn 1 · 3 · append the assistant response")
    words = next(b for b in html_bodies(at) if 'id="ls-words-live"' in b)
    assert "answer the question;" in words and "already recorded" not in words
    q = question_before(trace, 3, "en")
    assert q.kind == "continues" and markdown_html(q.question) in asked(at)
    assert choices(at, "live") == [f"{n}. {c}" for n, c in enumerate(q.choices, 1)]
    assert choices(at, "live")[-1] == "4. I don't know"
    assert [b.proto.shortcut for b in at.button if (b.key or "").startswith("live-choice-")] == ["1", "2", "3", "4"]
    assert verdict(at) is None

    click(at, "live-step")  # Step again: still the question, nothing shown
    assert trace.cursor == 2 and asked(at) is not None

    click(at, f"live-choice-{q.answer}")
    assert trace.cursor == 3 and status(at).startswith("Step 4 of 4 · turn 1 · stop_reason")
    assert asked(at) is None
    shown = verdict(at)
    assert 'data-verdict="right"' in shown and RIGHT["en"] in shown and markdown_html(q.why) in shown
    assert any(m.value == "**1 of 1 right**" for m in at.markdown)


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_a_wrong_answer_reveals_the_step_with_the_why_in_the_page_s_language(lang):
    at = app("pages/replay.py", sample="two-tools", step="3", predict="on", lang=lang)
    trace = at.session_state["replay"]["trace"]
    q = question_before(trace, 3, lang)
    assert q is not None and trace.cursor == 2
    click(at, "replay-step")
    assert trace.cursor == 2 and markdown_html(q.question) in asked(at)
    if lang != "en":  # the question and its choices: no English left on the page
        left = {s: w for s in texts_on_page(at) if (w := english_left(s, ["two-tools.json"], names(lang)))}
        assert not left, left
    wrong = next(n for n in range(len(q.choices) - 1) if n != q.answer)
    click(at, f"replay-choice-{wrong}")
    assert trace.cursor == 3
    shown = verdict(at)
    assert 'data-verdict="wrong"' in shown and NOT_QUITE[lang] in shown
    assert markdown_html(q.why) in shown and markdown_html(q.choices[q.answer]).removeprefix("<p>")[:20] in shown
    assert q.why_wrong(wrong) and markdown_html(q.why_wrong(wrong)) in shown  # why the choice made is wrong
    assert any(m.value == say(lang, "**{right} of {asked} right**", right=0, asked=1) for m in at.markdown)
    if lang != "en":  # the toggle, the score, the verdict: no English left on the page
        left = {s: w for s in texts_on_page(at) if (w := english_left(s, ["two-tools.json"], names(lang)))}
        assert not left, left


def test_i_don_t_know_shows_the_why_and_is_not_counted():
    at = turned_on(app(scenario="hello-py", step="3"))
    click(at, "live-step")
    q = question_before(live_trace(at), 3, "en")
    click(at, f"live-choice-{len(q.choices) - 1}")
    shown = verdict(at)
    assert 'data-verdict="open"' in shown and markdown_html(q.why) in shown
    assert not any(" right**" in m.value for m in at.markdown)  # nothing asked and answered: no score


def test_steps_without_a_question_and_answered_ones_step_at_once():
    at = turned_on(app("pages/replay.py", sample="two-tools"), "replay")
    trace = at.session_state["replay"]["trace"]
    k = next(i for i in range(1, len(trace)) if question_before(trace, i) is None)
    trace.goto(k - 1)
    click(at, "replay-step")
    assert trace.cursor == k and asked(at) is None
    # answered once, a step is not asked again: Back then Step moves at once
    k = next(i for i in range(1, len(trace)) if question_before(trace, i) is not None)
    trace.goto(k - 1)
    click(at, "replay-step")
    click(at, "replay-choice-0")
    click(at, "replay-back")
    click(at, "replay-step")
    assert trace.cursor == k and asked(at) is None


def test_moving_away_drops_the_question_and_off_means_no_question():
    at = turned_on(app(scenario="hello-py", step="3"))
    click(at, "live-step")
    assert asked(at) is not None
    click(at, "live-back")
    assert asked(at) is None and live_trace(at).cursor == 1
    at.toggle(key="live-predict").set_value(False)
    run(at)
    click(at, "live-step")
    click(at, "live-step")
    assert asked(at) is None and live_trace(at).cursor == 3


def test_the_browser_is_not_sent_a_step_whose_question_waits():
    at = app("pages/replay.py", sample="two-tools", step="3")
    assert set(ahead(at, "replay")[0]) == {1, 3}  # off: Back and Step both sent ahead
    turned_on(at, "replay")
    assert set(ahead(at, "replay")[0]) == {1}  # on: step 4 (index 3) has a question: only the server shows it
    click(at, "replay-step")
    assert set(ahead(at, "replay")[0]) == {1}
    click(at, "replay-choice-0")
    assert set(ahead(at, "replay")[0]) == {2} | ({4} if question_before(at.session_state["replay"]["trace"], 4)
                                                 is None else set())


def test_predict_again_clears_the_answers_and_goes_to_the_first_step():
    at = app(scenario="hello-py", step="3", predict="on")
    click(at, "live-step")
    q = question_before(live_trace(at), 3, "en")
    click(at, f"live-choice-{q.answer}")
    assert any(m.value == "**1 of 1 right**" for m in at.markdown)
    click(at, "live-predict-again")
    assert live_trace(at).cursor == 0
    assert not any(" right**" in m.value for m in at.markdown)
    at.session_state["live-run"].trace.goto(2)
    click(at, "live-step")  # asked again
    assert asked(at) is not None and live_trace(at).cursor == 2


def test_a_link_turns_it_on_and_the_url_keeps_it():
    at = app(scenario="hello-py", step="3", predict="on")
    assert at.toggle(key="live-predict").value is True
    assert copied_link(at) == "scenario=hello-py&step=3&predict=on"  # Copy link carries it on
    click(at, "live-step")
    assert asked(at) is not None
    at.toggle(key="live-predict").set_value(False)
    run(at)
    assert "predict" not in at.query_params and at.toggle(key="live-predict").value is False
    assert "predict" not in copied_link(at)


def test_about_ticks_a_statement_once_its_questions_are_answered_right():
    at = app(scenario="hello-py", step="3", predict="on")
    click(at, "live-step")  # before decide: `continues`, statement 1
    q = question_before(live_trace(at), 3, "en")
    assert q.kind == "continues"
    click(at, f"live-choice-{q.answer}")
    at.switch_page("pages/about.py")
    run(at)
    assert at.checkbox(key="about-check-s1").value is True
    assert at.checkbox(key="about-check-s2").value is False and at.checkbox(key="about-check-s3").value is False
    at.checkbox(key="about-check-s1").uncheck()  # the learner may still untick it
    run(at)
    assert at.checkbox(key="about-check-s1").value is False


def test_presenter_mode_shows_the_question_large_with_a_count_down_and_reveal_now():
    at = app(scenario="hello-py", step="3", predict="on")
    at.toggle(key="present").set_value(True)
    run(at)
    click(at, "live-step")
    assert "ls-question-big" in asked(at)
    assert any('class="ls-countdown"' in b for b in html_bodies(at))
    click(at, "live-reveal")
    assert live_trace(at).cursor == 3 and 'data-verdict="open"' in verdict(at)


def test_a_whole_live_run_with_a_sub_agent_answered_right_scores_every_question():
    at = app(scenario="subagent", step="1", predict="on")
    trace = live_trace(at)
    for _ in range(200):
        if at.session_state["live-run"].done and trace.at_end:
            break
        before = trace.cursor
        click(at, "live-step")
        if asked(at) is not None:
            assert trace.cursor == before
            q = question_before(trace, before + 1, "en")
            click(at, f"live-choice-{q.answer}")
            assert trace.cursor == before + 1 and 'data-verdict="right"' in verdict(at)
    n = len([q for q in (question_before(trace, i) for i in range(1, len(trace))) if q is not None])
    assert n >= 5 and any(m.value == f"**{n} of {n} right**" for m in at.markdown)


def test_back_then_step_in_one_run_asks_the_question_of_the_step_after_back():
    at = app("pages/replay.py", sample="two-tools", step="4", predict="on")
    trace = at.session_state["replay"]["trace"]
    k = next(i for i in range(2, len(trace)) if question_before(trace, i) and not question_before(trace, i - 1))
    trace.goto(k - 1)
    click(at, "replay-step")
    assert asked(at) is not None and trace.cursor == k - 1
    # two quick clicks the server handles in one run (pages/views/clicks.py): Back, then Step
    at.session_state["replay-action"] = ["back", "step"]
    run(at)
    assert trace.cursor == k - 1 and asked(at) is None  # the step after Back has no question: Step moved on
