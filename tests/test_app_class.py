"""A class: the teacher starts it in presenter mode, students' browsers follow the teacher's step.

Two AppTest instances are two browsers: each is handed its own signed browser id on its first run
(tests/apptest.py), so the teacher and the student are known apart as in a classroom.
"""

from __future__ import annotations

from unittest import mock

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from loop.files.classes import Classes
from loop.files.runs import default_store
from loop.views.questions import question_before
from tests.apptest import app, click, issued, reload, run

pytestmark = pytest.mark.usefixtures("no_key_in_environment")


def heading(at: AppTest) -> str:
    """The step's heading, as the page shows it ("Step k of n · …")."""
    return next(m.value for m in at.markdown if m.value.startswith("### ") and "·" in m.value)


def param(at: AppTest, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def teacher_with_class(steps: int = 2, **query) -> tuple[AppTest, str]:
    """A teacher in presenter mode who took `steps` steps, then started a class: (the page, the code)."""
    teacher = app(**query)
    teacher.toggle(key="present").set_value(True)
    run(teacher)
    for _ in range(steps):
        click(teacher, "live-step")
    click(teacher, "classroom-start")
    code = param(teacher, "class")
    assert code and len(code) == 6
    return teacher, code


def student(code: str, **query) -> AppTest:
    return app(**{"class": code, **query})


def texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [e.value for e in at.error] + [i.value for i in at.info]
                     + [c.value for c in at.caption])


def test_a_student_with_the_code_sees_the_teachers_step_and_follows_every_move():
    teacher, code = teacher_with_class()
    bar = teacher.get("html")
    assert any('id="ls-class-qr"' in h.proto.body and "svg" in h.proto.body for h in bar)  # the link's QR code
    assert any(f"?class={code}" in h.proto.body for h in bar)  # the link, shown large with the code
    click(teacher, "classroom-size")  # the QR code hidden: the projector's room goes to the step, the code stays
    assert not any('id="ls-class-qr"' in h.proto.body for h in teacher.get("html"))
    assert any(f'data-code="{code}"' in h.proto.body for h in teacher.get("html"))
    pupil = student(code.lower())  # typed in lowercase
    assert heading(pupil) == heading(teacher)
    assert heading(pupil).startswith("### Step 2 of 2")
    assert param(pupil, "step") == "2" and param(pupil, "class") == code
    click(teacher, "live-step")
    run(pupil)  # the page's poll reruns it when the class moved
    assert heading(pupil).startswith("### Step 3 of 3") and param(pupil, "step") == "3"
    click(teacher, "live-back")
    run(pupil)
    assert heading(pupil).startswith("### Step 2 of 3") and param(pupil, "step") == "2"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_teacher_at_localhost_gives_the_class_this_machines_address_and_says_students_need_its_network(
        lang, monkeypatch):
    monkeypatch.delenv("LOOPSCOPE_PUBLIC_URL", raising=False)
    at_localhost = mock.patch.object(type(st.context), "url", new_callable=mock.PropertyMock,
                                     return_value="http://localhost:8501/")
    with at_localhost, mock.patch("pages.views.classroom.machine_addresses", return_value=["192.168.1.20"]):
        teacher, code = teacher_with_class(lang=lang)
    bar = "\n".join(h.proto.body for h in teacher.get("html"))
    assert f"http://192.168.1.20:8501/?class={code}" in bar and "localhost" not in bar
    note = "\n".join(c.value for c in teacher.caption)
    assert "192.168.1.20" in note and "LOOPSCOPE_PUBLIC_URL" in note
    assert ("same network" in note) if lang == "en" else ("同じネットワーク" in note)
    with at_localhost, mock.patch("pages.views.classroom.machine_addresses", return_value=[]):
        run(teacher)  # this computer has no network address: the link works here only, and the page says so
    assert f"http://localhost:8501/?class={code}" in "\n".join(h.proto.body for h in teacher.get("html"))
    note = "\n".join(c.value for c in teacher.caption)
    assert ("only works on this computer" in note) if lang == "en" else ("このコンピューターでしか" in note)
    monkeypatch.setenv("LOOPSCOPE_PUBLIC_URL", "https://loopscope.school.example")
    with at_localhost:
        run(teacher)  # the address students use, set by whoever serves it: the link, and nothing to warn of
    assert f"https://loopscope.school.example/?class={code}" in "\n".join(h.proto.body for h in teacher.get("html"))
    assert "LOOPSCOPE_PUBLIC_URL" not in "\n".join(c.value for c in teacher.caption)


def test_a_late_student_lands_on_the_current_step_in_their_own_language():
    teacher, code = teacher_with_class(steps=4)
    pupil = student(code, lang="zh", step="1")  # a late student's copied link names an old step
    assert heading(pupil).startswith("### 第 4 步") or "4" in heading(pupil).split("·")[0]
    assert param(pupil, "step") == "4"
    assert "Step 4 of 4" not in heading(pupil)  # said in Chinese, not the teacher's English
    assert "课" in texts(pupil)


def test_a_student_steps_away_and_back_and_never_moves_the_class():
    teacher, code = teacher_with_class(steps=3)
    pupil = student(code)
    click(pupil, "class-back")
    assert heading(pupil).startswith("### Step 2 of 3")
    assert "You stepped away: the class is at step 3." in texts(pupil)
    assert param(pupil, "step") == "2"
    state = Classes(default_store()).state(code)
    assert state.cursor == 2  # the class is where the teacher put it
    click(teacher, "live-step")
    run(pupil)  # the class moved on; the student stays on their own step
    assert heading(pupil).startswith("### Step 2 of 3")
    assert "the class is at step 4" in texts(pupil)
    run(teacher)
    assert "**0 following** · 1 away" in texts(teacher)
    click(pupil, "classroom-rejoin")
    assert heading(pupil).startswith("### Step 4 of 4")
    assert "You stepped away" not in texts(pupil)
    run(teacher)
    assert "**1 following** · 0 away" in texts(teacher)
    assert Classes(default_store()).state(code).cursor == 3


def test_a_students_page_shows_nothing_of_the_teachers_saved_runs_and_spends_no_key():
    teacher, code = teacher_with_class()
    pupil = student(code)
    assert not [e for e in pupil.expander if "Saved runs" in e.label]
    assert not [b for b in pupil.button if b.key in ("resume-run", "delete-run", "classroom-end", "classroom-start")]
    assert not pupil.sidebar.get("text_input")  # no key asked, no model chosen: nothing here runs the loop
    for _ in range(3):  # Step on the last recorded step runs nothing: it is disabled
        if not pupil.button(key="class-step").disabled:
            click(pupil, "class-step")
    assert pupil.button(key="class-step").disabled
    assert Classes(default_store()).state(code).steps == 2


def test_a_wrong_code_says_so_and_nothing_else():
    pupil = student("ZZZZZZ")
    assert [e.value for e in pupil.error] == ["No class has the code ZZZZZZ: it may have ended. Ask your teacher "
                                              "for the code."]
    assert not pupil.button and not pupil.expander


def test_end_class_shows_the_summary_and_the_answers_and_the_code_stops_working():
    teacher, code = teacher_with_class()
    pupil = student(code)
    click(teacher, "live-step")
    click(teacher, "classroom-end")
    said = texts(teacher)
    assert f"**Class {code} ended.** Browsers that followed it: 1." in said
    assert "Steps shown: 2, 3" in said
    assert teacher.get("download_button")  # the answers, as CSV
    assert param(teacher, "class") is None
    assert not [b for b in teacher.button if b.key == "classroom-end"]
    run(pupil)
    assert [e.value for e in pupil.error] == [f"No class has the code {code}: it may have ended. Ask your "
                                              "teacher for the code."]


def test_the_teachers_reload_keeps_the_class_and_its_step():
    teacher, code = teacher_with_class(steps=3)
    click(teacher, "live-back")
    again = reload(teacher, **{"class": code})
    assert again.toggle(key="present").value is True
    assert heading(again).startswith("### Step 2 of 3")
    assert any(code in h.proto.body for h in again.get("html"))
    assert [b for b in again.button if b.key == "classroom-end"]
    click(again, "live-step")  # the class goes on from the reloaded page
    pupil = student(code)
    assert heading(pupil).startswith("### Step 3 of 3")


def test_the_teacher_opening_the_link_in_another_browser_only_follows():
    teacher, code = teacher_with_class()
    other = student(code)  # the same link, another browser: a student, whatever the URL says
    assert not [b for b in other.button if b.key in ("classroom-end", "live-step")]
    assert issued(other) != issued(teacher)


def test_the_class_answers_the_teachers_question_the_teacher_sees_the_counts_then_reveals():
    teacher, code = teacher_with_class()
    teacher.toggle(key="live-predict").set_value(True)
    run(teacher)
    classes = Classes(default_store())
    for _ in range(6):  # Step until the teacher's page asks before a step
        click(teacher, "live-step")
        if classes.state(code).question is not None:
            break
    state = classes.state(code)
    k = state.question
    assert k == state.cursor + 1 and not state.revealed
    pupil = student(code, lang="ja")
    assert any(f'id="ls-question-class" data-step="{k}"' in h.proto.body for h in pupil.get("html"))
    assert pupil.session_state["class-predict-held"] == {k}  # its answer, the next step, is not sent ahead to Step
    click(pupil, "class-back")  # while the question is open, the student stays with the class
    assert heading(pupil).startswith(f"### ステップ {k} / {state.steps}")  # the step before the question's
    assert "classroom-rejoin" not in [b.key for b in pupil.button]
    click(pupil, "classroom-choice-1")
    click(pupil, "classroom-choice-0")  # the last answer counts
    run(teacher)
    assert "The class's answers: **1.** 1 (of 1)" in texts(teacher)
    click(teacher, "live-reveal")
    state = classes.state(code)
    assert state.cursor == k and state.question is None
    run(pupil)
    assert heading(pupil).startswith(f"### ステップ {k + 1} / ")  # the step the question was about, revealed
    verdicts = [h.proto.body for h in pupil.get("html") if 'id="ls-verdict-class"' in h.proto.body]
    right = question_before(classes.trace(code), k, "ja").answer == 0
    assert len(verdicts) == 1 and f'data-verdict="{"right" if right else "wrong"}"' in verdicts[0]
    click(teacher, "classroom-end")
    assert f"Question before step {k + 1}: 1: 1" in texts(teacher)


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_start_a_class_is_offered_by_name_beside_the_title_and_turns_presenter_mode_on(lang):
    from loop.text.catalogs import say

    teacher = app(lang=lang)
    start = teacher.button(key="classroom-start")
    assert start.label == say(lang, "Start a class")  # its words, not an icon alone, where there is room for them
    click(teacher, "live-step")
    click(teacher, "classroom-start")
    code = param(teacher, "class")
    assert code and len(code) == 6 and teacher.session_state["present"] is True
    assert any(f'data-code="{code}"' in h.proto.body for h in teacher.get("html"))
    assert heading(student(code, lang=lang)).split("·")[0] == heading(teacher).split("·")[0]  # it follows
