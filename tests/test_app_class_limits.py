"""A class's limits, as the pages say them: a wrong code tried too often, a full class, too many new browsers from
one address, an answer from a browser that came after the question opened, a class nobody ended. Each is said in the
page's language, and none is an exception."""

from __future__ import annotations

import pytest

from loop.classroom import limits
from loop.classroom.follower import ENDED, LATE
from loop.files import classes as classes_module
from loop.files.classes import EXPIRES, Classes
from loop.files.runs import default_store
from loop.text.catalogs import say
from pages.views.browser import TOO_MANY_NEW
from pages.views.classroom import ENDED_BY_ITSELF
from pages.views.following import CLASS_ENDED, FULL, TOO_MANY_CODES
from tests.apptest import app, click, run
from tests.test_app_class import counts, heading, student, teacher_with_class

pytestmark = pytest.mark.usefixtures("no_key_in_environment")


@pytest.fixture
def limited(monkeypatch):
    """The process's limits, made small for the test and emptied before and after it."""
    def set_to(limit: limits.Limit, per_minute: int) -> None:
        monkeypatch.setattr(limit, "per_minute", lambda: per_minute)
        limit.buckets.clear()

    yield set_to
    limits.CODE_TRIES.buckets.clear()
    limits.NEW_BROWSERS_LIMIT.buckets.clear()


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_wrong_class_codes_from_one_address_are_limited_and_said_in_the_page_s_language(limited):
    limited(limits.CODE_TRIES, 2)
    for code in ("ZZZZZZZZ", "YYYYYYYY"):
        assert [e.value for e in student(code).error] == [say("en", "No class has the code {code}: it may have "
                                                                    "ended. Ask your teacher for the code.", code=code)]
    guessing = student("XXXXXXXX", lang="ja")  # the third within the minute: not even looked up
    assert not guessing.error and len(warnings(guessing)) == 1
    assert warnings(guessing)[0].startswith(say("ja", TOO_MANY_CODES, n=limits.CODE_TRIES_A_MINUTE,
                                                seconds=30)[:20])


def test_a_full_class_says_so_and_a_student_already_in_stays(monkeypatch):
    monkeypatch.setattr(classes_module, "max_followers", lambda: 1)
    monkeypatch.setattr("pages.views.following.max_followers", lambda: 1)
    teacher, code = teacher_with_class()
    first = student(code)
    assert heading(first).startswith("### Step 2 of 2")
    late = student(code, lang="zh")
    assert warnings(late) == [say("zh", FULL, n=1)] and not late.button
    run(first)
    assert heading(first).startswith("### Step 2 of 2") and not warnings(first)


def test_too_many_new_browsers_from_one_address_get_no_id_and_are_told_when_to_come_back(limited):
    teacher, code = teacher_with_class()
    limited(limits.NEW_BROWSERS_LIMIT, 1)
    assert heading(student(code)).startswith("### Step 2 of 2")  # the minute's one new browser
    refused = student(code, lang="ja")
    said = warnings(refused)
    assert len(said) == 1 and said[0].startswith(say("ja", TOO_MANY_NEW, n=1, seconds=60)[:25])
    assert not refused.error and not refused.button


def test_an_answer_from_a_browser_that_came_after_the_question_opened_is_marked_late_and_not_counted():
    teacher, code = teacher_with_class()
    teacher.toggle(key="live-predict").set_value(True)
    run(teacher)
    classes = Classes(default_store())
    for _ in range(6):
        click(teacher, "live-step")
        if classes.state(code).question is not None:
            break
    latecomer = student(code, lang="ja")  # joined once the question was open: a made-up browser could, too
    click(latecomer, "classroom-choice-0")
    assert say("ja", LATE) in [i.value for i in latecomer.info]
    run(teacher)
    shown = counts(teacher)
    assert shown["late"] == 1 and [n for _, n, _ in shown["choices"]] == [0] * len(shown["choices"])


def test_a_class_nobody_ended_reads_as_ended_twelve_hours_after_the_teachers_last_move():
    teacher, code = teacher_with_class(steps=3)
    pupil = student(code, lang="zh")
    with default_store().transaction(write=True) as db:  # twelve hours and a minute since the teacher's last move
        db.execute("UPDATE classes SET acted = acted - ?, started = started - ? WHERE code = ?",
                   (EXPIRES + 60, EXPIRES + 60, code))
    run(pupil)  # a follower: the class's last step kept, the end said
    assert heading(pupil).startswith("### 第 3 / 3 步") and not pupil.error
    assert say("zh", ENDED) in [i.value for i in pupil.info]
    fresh = student(code)  # a new browser: the class has ended
    assert [i.value for i in fresh.info] == [say("en", CLASS_ENDED, code=code)] and not fresh.error
    click(teacher, "live-back")  # the teacher comes back: the class is gone from the page, and the page says why
    assert say("en", ENDED_BY_ITSELF, code=code, hours=12) in [e.value for e in teacher.error]
    assert not [b for b in teacher.button if b.key == "classroom-end"]
    assert app().button(key="classroom-start")  # and a new class can start
