"""A class: the teacher starts it in presenter mode, students' browsers follow the teacher's step.

Two AppTest instances are two browsers: each is handed its own signed browser id on its first run
(tests/apptest.py), so the teacher and the student are known apart as in a classroom.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from loop.files import browser_id
from loop.files.classes import CODE_LENGTH, Classes
from loop.files.runs import default_store
from loop.text.catalogs import say
from loop.engine.mistakes import MISTAKES
from loop.views.questions import question_before
from loop.classroom.follower import ANSWER_FIRST, ENDED, NOT_BEFORE_REVEAL, PULLED_BACK, STEPPED_AWAY
from pages.views.blocks import markdown_html
from pages.views.following import RUN_LANGUAGE
from tests.apptest import app, choose_server, click, download, issued, reload, run

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
    assert code and len(code) == CODE_LENGTH
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


def test_a_class_student_whose_browser_asks_for_chinese_lands_on_it_and_reads_that_the_run_keeps_its_language():
    teacher, code = teacher_with_class()  # the teacher's run, in English
    browser = SimpleNamespace(cookies={}, headers=[("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.5")],
                              remote_ip="192.0.2.7")
    with mock.patch("streamlit.runtime.context._get_client_context", return_value=browser):
        pupil = student(code)  # the class's link: no language in it
    assert param(pupil, "lang") == "zh" and heading(pupil).startswith("### 第 2 / 2 步")
    note = say("zh", RUN_LANGUAGE, language="English")
    assert note in [c.value for c in pupil.caption]
    click(pupil, "class-back")
    assert param(pupil, "lang") == "zh" and note in [c.value for c in pupil.caption]  # and it stays
    english = student(code)  # a browser that asks for nothing: English, the run's own language, no note
    assert param(english, "lang") is None and not [c for c in english.caption if "language" in c.value]
    with mock.patch("streamlit.runtime.context._get_client_context", return_value=browser):
        chosen = student(code, lang="en")  # an address that names a language keeps it
    assert param(chosen, "lang") in (None, "en") and heading(chosen).startswith("### Step 2 of 2")


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
    pupil = student("ZZZZZZZZ")
    assert [e.value for e in pupil.error] == ["No class has the code ZZZZZZZZ: it may have ended. Ask your teacher "
                                              "for the code."]
    assert not pupil.button and not pupil.expander
    hostile = student("![](//127.1)")  # an address's words are drawn as text: no image, nothing fetched
    assert [e.value for e in hostile.error] == ["No class has the code !\\[\\](//127.1): it may have ended. Ask your "
                                                "teacher for the code."]


def test_end_class_shows_the_summary_and_the_answers_and_a_student_keeps_the_class_s_last_step():
    teacher, code = teacher_with_class()
    pupil = student(code, lang="ja")
    click(teacher, "live-step")
    click(teacher, "classroom-end")
    said = texts(teacher)
    assert f"**Class {code} ended.** Browsers that followed it: 1." in said
    assert "Steps shown: 2, 3" in said
    assert teacher.get("download_button")  # the answers, as CSV
    assert param(teacher, "class") is None
    assert not [b for b in teacher.button if b.key == "classroom-end"]
    run(pupil)  # the class's last step, kept: no error, the end said in the student's language
    assert not pupil.error
    assert heading(pupil).startswith("### ステップ 3 / 3")
    assert say("ja", ENDED) in [i.value for i in pupil.info]
    click(pupil, "class-back")  # the run is the student's now: stepping through it moves nothing, asks nothing
    assert heading(pupil).startswith("### ステップ 2 / 3") and not pupil.error
    assert "classroom-rejoin" not in [b.key for b in pupil.button]
    name, saved = download(pupil, "class-save")  # and Save keeps it
    assert name.endswith(".json") and len(json.loads(saved)["steps"]) == 3
    late = student(code)  # a browser that opens the code now: the class has ended, said as such, not as an error
    assert not late.error and [i.value for i in late.info] == [f"The class {code} has ended."]


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


def test_a_student_given_the_teachers_address_follows_on_a_students_page_not_the_projectors():
    teacher, code = teacher_with_class()
    assert param(teacher, "present") == "on"  # the teacher presents: their address bar says so
    pupil = student(code, present="on", scenario=param(teacher, "scenario"), step=param(teacher, "step"))
    assert heading(pupil) == heading(teacher)
    assert not any('class="ls-state-row' in h.proto.body for h in pupil.get("html"))  # the projector's one row: no
    drawn = lambda at: [(e.type, getattr(e, "key", None)) for e in at.main]  # noqa: E731
    assert drawn(pupil) == drawn(student(code))  # the page a student gets from the class's own link


def test_the_teacher_opening_the_link_in_another_browser_only_follows():
    teacher, code = teacher_with_class()
    other = student(code)  # the same link, another browser: a student, whatever the URL says
    assert not [b for b in other.button if b.key in ("classroom-end", "live-step")]
    assert issued(other) != issued(teacher)


def counts(at: AppTest, key: str = "ls-class-counts") -> dict:
    """The class's answers as the teacher's page draws them: the question's words, and each choice's
    (words, count, marked right)."""
    body = next((h.proto.body for h in at.get("html") if f'id="{key}"' in h.proto.body), None)
    if body is None:
        return {}
    rows = re.findall(r'<div class="ls-bar-row( ls-bar-is-right)?" data-choice="(\d+)" data-count="(\d+)">'
                      r'<div class="ls-bar-label">\d+\. (.*?)</div>', body, re.S)
    question = re.search(r'<div class="ls-class-counts-question">(.*?)</div>', body, re.S).group(1)
    return {"question": html_text(question), "revealed": 'data-revealed="1"' in body,
            "step": int(re.search(r'data-step="(\d+)"', body).group(1)),
            "late": int(re.search(r'data-late="(\d+)"', body).group(1)),
            "choices": [(html_text(words), int(n), bool(right)) for right, _, n, words in rows]}


def html_text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_the_class_answers_the_teachers_question_the_teacher_sees_the_counts_then_reveals():
    teacher, code = teacher_with_class()
    teacher.toggle(key="live-predict").set_value(True)
    run(teacher)
    classes = Classes(default_store())
    pupil = student(code, lang="ja")  # following before the question opens: its answer counts
    for _ in range(6):  # Step until the teacher's page asks before a step
        click(teacher, "live-step")
        if classes.state(code).question is not None:
            break
    state = classes.state(code)
    k = state.question
    assert k == state.cursor + 1 and not state.revealed
    run(pupil)
    assert any(f'id="ls-question-class" data-step="{k}"' in h.proto.body for h in pupil.get("html"))
    assert pupil.session_state["class-predict-held"] == {k}  # its answer, the next step, is not sent ahead to Step
    wait = say("ja", ANSWER_FIRST)  # before an answer, the page stays with the class, and says why
    for key in ("class-first", "class-back", "class-step"):
        assert pupil.button(key=key).disabled and pupil.button(key=key).help == wait
    assert wait in [c.value for c in pupil.caption]
    assert heading(pupil).startswith(f"### ステップ {k} / {k} ")  # the step before the question's, counted without it
    assert "classroom-rejoin" not in [b.key for b in pupil.button]
    pupil.session_state[f"class-break-{k - 1}"] = True  # nor does Break it here, or a fork, step away meanwhile
    pupil.session_state[f"class-fork-{k - 1}"] = True
    run(pupil)
    assert not [w for w in [*pupil.radio, *pupil.text_area] if (w.key or "").startswith(("class-break", "class-fork"))]
    click(pupil, "classroom-choice-1")
    click(pupil, "classroom-choice-0")  # the last answer counts
    q = question_before(classes.trace(code), k, "en")
    run(teacher)  # one bar a choice, with its words, under the question's words
    shown = counts(teacher)
    assert shown["question"] == html_text(markdown_html(q.question)) and not shown["revealed"]
    assert [(n, right) for _, n, right in shown["choices"]] == [(1, False)] + [(0, False)] * (len(q.choices) - 1)
    assert [words for words, _, _ in shown["choices"]] == [html_text(markdown_html(c)) for c in q.choices]

    assert not pupil.button(key="class-back").disabled  # answered: the student may step away now
    click(pupil, "class-back")
    assert heading(pupil).startswith(f"### ステップ {k - 1} / ")
    assert say("ja", STEPPED_AWAY, k=k) in [i.value for i in pupil.info]
    click(pupil, "class-step")
    click(pupil, "class-step")  # never onto the step the question is about, before the teacher reveals it
    assert heading(pupil).startswith(f"### ステップ {k} / ")
    assert say("ja", NOT_BEFORE_REVEAL) in [i.value for i in pupil.info]
    click(pupil, "classroom-rejoin")
    assert heading(pupil).startswith(f"### ステップ {k} / ")

    click(teacher, "live-reveal")
    state = classes.state(code)
    assert state.cursor == k and state.question is None
    shown = counts(teacher)  # the counts stay on the step revealed, the right answer marked
    assert shown["revealed"] and [right for _, _, right in shown["choices"]] == [n == q.answer for n in range(len(q.choices))]
    run(pupil)
    assert heading(pupil).startswith(f"### ステップ {k + 1} / ")  # the step the question was about, revealed
    verdicts = [h.proto.body for h in pupil.get("html") if 'id="ls-verdict-class"' in h.proto.body]
    assert len(verdicts) == 1 and f'data-verdict="{"right" if q.answer == 0 else "wrong"}"' in verdicts[0]
    click(pupil, "class-back")  # the question is over: the student steps away as before it
    assert say("ja", STEPPED_AWAY, k=k + 1) in [i.value for i in pupil.info]
    click(pupil, "classroom-rejoin")
    click(teacher, "live-step")
    assert counts(teacher).get("step") != k  # gone at the next step (another question's, if one is asked there)

    click(teacher, "classroom-end")
    assert f"**Question before step {k + 1}**" in texts(teacher)
    summary = counts(teacher, f"ls-class-summary-{k}")
    assert summary["question"] == html_text(markdown_html(q.question)) and summary["revealed"]
    assert [(n, right) for _, n, right in summary["choices"]] == [(int(i == 0), i == q.answer) for i in range(len(q.choices))]
    name, data = download(teacher, "classroom-csv")
    rows = list(csv.reader(io.StringIO(data.decode())))
    assert rows[0] == ["step", "question", "choice", "choice's text", "right", "answers", "late answers (not counted)"]
    assert [r for r in rows[1:] if r[0] == str(k + 1)] == [[str(k + 1), q.question, str(n + 1), choice, "yes" if n == q.answer else "", str(int(n == 0)), "0"]
                        for n, choice in enumerate(q.choices)]  # the screen's numbers, the words, no internal id


def test_a_class_student_who_stepped_away_is_pulled_back_when_the_teacher_asks_and_reads_why():
    teacher, code = teacher_with_class()
    pupil = student(code, lang="zh")
    click(pupil, "class-back")  # away, on the student's own step
    assert "classroom-rejoin" in [b.key for b in pupil.button]
    teacher.toggle(key="live-predict").set_value(True)
    run(teacher)
    classes = Classes(default_store())
    for _ in range(6):
        click(teacher, "live-step")
        if classes.state(code).question is not None:
            break
    state = classes.state(code)
    run(pupil)  # the server wakes the page; here, the next run: back on the class's step, with the question
    assert heading(pupil).split("·")[0] == heading(student(code, lang="zh")).split("·")[0]
    assert param(pupil, "step") == str(state.cursor + 1)
    assert say("zh", PULLED_BACK) in [i.value for i in pupil.info]
    assert "classroom-rejoin" not in [b.key for b in pupil.button]
    assert any(f'id="ls-question-class" data-step="{state.question}"' in h.proto.body for h in pupil.get("html"))


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_start_a_class_is_offered_by_name_beside_the_title_and_turns_presenter_mode_on(lang):
    from loop.text.catalogs import say

    teacher = app(lang=lang)
    start = teacher.button(key="classroom-start")
    assert start.label == say(lang, "Start a class")  # its words, not an icon alone, where there is room for them
    click(teacher, "live-step")
    click(teacher, "classroom-start")
    code = param(teacher, "class")
    assert code and len(code) == CODE_LENGTH and teacher.session_state["present"] is True
    assert any(f'data-code="{code}"' in h.proto.body for h in teacher.get("html"))
    assert heading(student(code, lang=lang)).split("·")[0] == heading(teacher).split("·")[0]  # it follows


# -- a student's own copy: forks and Break it here ---------------------------------------------------------------

def sent_key(headers: dict) -> str | None:
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or (bearer[7:] if bearer.startswith("Bearer ") else None)


def owner(at: AppTest) -> str:
    """The key the store files this browser's runs under."""
    store = default_store()
    return browser_id.owner(browser_id.verify(store.secret(), issued(at)))


def the_class_as_it_was(code: str, teacher: AppTest, before) -> None:
    """Nothing a student did reached the class, the teacher's saved run or the student's own saved runs."""
    classes = Classes(default_store())
    after = classes.state(code)
    assert (after.run_id, after.steps, after.cursor, after.question) == (before.run_id, before.steps, before.cursor,
                                                                         before.question)
    saved, _ = default_store().load(owner(teacher), before.run_id)
    assert len(saved) == before.steps and not saved.branches
    assert not any(s.detail.get("given_by_user") for s in saved.steps)
    assert len(classes.trace(code)) == before.steps and not classes.trace(code).branches


def test_a_student_forks_their_copy_sees_the_branch_and_back_to_the_class_drops_it():
    teacher, code = teacher_with_class(steps=5)  # two-tools: step 5 runs the first of its two tool_use blocks
    before = Classes(default_store()).state(code)
    pupil = student(code)
    assert heading(pupil).startswith("### Step 5 of 5")
    pupil.session_state["class-fork-4"] = True  # "Edit this tool_result and continue from here", on the copy
    run(pupil)
    pupil.text_area(key="class-fork-text-4").set_value("notes.md\nplan.txt")
    click(pupil, "class-fork-go-4")

    copy = pupil.session_state["class-follower"]
    assert len(copy.trace) > 5 and copy.trace.steps[4].detail["given_by_user"]  # run on to its end, offline
    assert "notes.md" in json.dumps(copy.trace.messages)  # the model saw the edited result
    assert heading(pupil).startswith(f"### Step 5 of {len(copy.trace)}")  # shown where it was forked
    said = texts(pupil)
    assert "You are on a branch of your own (Branch 2 · step 5, edited tool_result)" in said
    assert "You stepped away: the class is at step 5." in said
    click(pupil, "class-step")  # Step goes on over the branch's steps
    assert heading(pupil).startswith(f"### Step 6 of {len(copy.trace)}")
    the_class_as_it_was(code, teacher, before)
    assert default_store().list(owner(pupil)) == []  # the branch lives in the student's session only
    run(teacher)
    assert "**0 following** · 1 away" in texts(teacher)

    forked = Path(str(copy.branches.current.workspace))
    assert forked.is_dir()
    pupil.session_state["class-break-5"] = True  # Break it here on the branch: a second branch, the first left
    run(pupil)
    click(pupil, "class-break-go-5")
    assert len(copy.branches) == 2 and copy.trace.meta["forked_from"]["edit"] == "mistake"
    assert not forked.exists()  # the branch left is closed at once: its workspace goes
    spaces = [Path(str(copy.branches.current.workspace))]
    assert spaces[0].is_dir()
    click(pupil, "classroom-rejoin")
    assert not any(w.exists() for w in spaces)  # the branch's workspace goes with it
    assert heading(pupil).startswith("### Step 5 of 5")
    assert "You are on a branch of your own" not in texts(pupil) and "You stepped away" not in texts(pupil)
    assert not copy.branches and len(copy.trace) == 5
    click(teacher, "live-step")  # and it follows again
    run(pupil)
    assert heading(pupil).startswith("### Step 6 of 6")


def test_a_student_breaks_their_copy_here_and_the_class_is_unchanged():
    teacher, code = teacher_with_class(steps=5)
    before = Classes(default_store()).state(code)
    pupil = student(code, lang="ja")
    pupil.session_state["class-break-4"] = True  # "Break it here", on the copy of a run not at its end yet
    run(pupil)
    pupil.radio(key="class-break-pick-4").set_value("no-write-back").run()
    click(pupil, "class-break-go-4")
    copy = pupil.session_state["class-follower"]
    assert copy.trace.meta["forked_from"]["mistake"] == "no-write-back" and copy.trace.steps[-1].stage == "refused"
    broken = say("ja", "Broken here: {mistake}", mistake=say("ja", MISTAKES["no-write-back"].title))
    assert "#### " + broken in texts(pupil)  # drawn as the lab draws it, beside the correct loop
    assert "#### " + say("ja", "#### The correct loop")[5:] in texts(pupil)
    assert "classroom-rejoin" in [b.key for b in pupil.button]
    the_class_as_it_was(code, teacher, before)
    click(pupil, "classroom-rejoin")
    assert not copy.branches and len(copy.trace) == 5 and heading(pupil).startswith("### ステップ 5 / 5")


def test_a_students_copy_of_a_real_models_run_never_spends_the_teachers_key(fake_api):
    teacher = app()
    choose_server(teacher, fake_api.url, key="sk-teacher-key")
    teacher.toggle(key="present").set_value(True)
    run(teacher)
    for _ in range(5):
        click(teacher, "live-step")
    click(teacher, "classroom-start")
    code = param(teacher, "class")
    before = Classes(default_store()).state(code)
    calls = len(fake_api.requests)
    assert calls and {sent_key(h) for h in fake_api.headers} == {"sk-teacher-key"}

    pupil = student(code)
    pupil.session_state["class-fork-4"] = True
    run(pupil)  # no key of the student's own: the offer says why, and offers nothing to run
    assert any("whose key is the teacher's" in i.value for i in pupil.info)
    assert "class-fork-go-4" not in [b.key for b in pupil.button]
    pupil.session_state["class-break-4"] = True  # Break it here runs against the offline model: no key at all
    run(pupil)
    pupil.radio(key="class-break-pick-4").set_value("text-first").run()
    click(pupil, "class-break-go-4")
    assert pupil.session_state["class-follower"].trace.meta["forked_from"]["offline"] is True
    assert len(fake_api.requests) == calls  # the class's model was never called
    click(pupil, "classroom-rejoin")

    pupil.session_state["set-api-key"] = "sk-student-key"  # a key of the student's own (Step through, this tab)
    pupil.session_state["set-base-url"] = fake_api.url
    click(pupil, "class-first")
    pupil.session_state["class-fork-0"] = True  # "Edit the task": the next stage calls the model
    run(pupil)
    pupil.text_area(key="class-fork-task").set_value("What Python version is installed?")
    click(pupil, "class-fork-go-0")
    copy = pupil.session_state["class-follower"]
    assert len(fake_api.requests) > calls
    assert {sent_key(h) for h in fake_api.headers[calls:]} == {"sk-student-key"}  # the student's, only
    assert copy.trace.meta["task"] == "What Python version is installed?"
    assert copy.trace.steps[-1].stage == "decide" and copy.trace.steps[-1].stop_reason == "tool_use"
    assert copy.branches.current.pending_tool_use is not None  # a real model's command waits: no one here approves it
    the_class_as_it_was(code, teacher, before)
