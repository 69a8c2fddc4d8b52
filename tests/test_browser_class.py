"""A class in Chromium, two browsers: the teacher steps in presenter mode, the student's page shows each step;
the student steps away and comes back, and no click of theirs moves the class; the teacher's question is the
student's too, the student's answer is counted on the teacher's page, Reveal shows the student the answer, and
at the end of the class the student keeps its last step."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loop.files.classes import Classes
from loop.files.runs import default_store
from loop.files.transcript import load
from loop.views.questions import question_before
from pages.views.following import SAFETY
from pages.views.replay import sample_path
from tests.browser import PAINTED, click_until, settled, wait_for_status

from tests.wire import Follower, Wire

AWAY = "You stepped away: the class is at step {k}."
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "projector"


def heading(page) -> str:
    return page.evaluate("() => [...document.querySelectorAll('h3')].map(h => h.textContent)"
                         ".find(t => t.startsWith('Step ')) || ''")


def wait_for_text(page, text: str) -> None:
    page.wait_for_function("(text) => document.body.innerText.includes(text)", arg=text, timeout=60_000)


def start_class(new_page, url: str, step: int):
    """A teacher at `step` of two-tools who turns presenter mode on and starts a class: (the teacher's page, the code)."""
    teacher = new_page(1280, 800)
    teacher.goto(f"{url}/?scenario=two-tools&step={step}")
    wait_for_status(teacher, f"Step {step} of {step}")
    teacher.locator(".st-key-present label").click()
    teacher.locator(".st-key-classroom-start button").first.click()
    teacher.wait_for_selector("#ls-class-code", timeout=60_000)
    return teacher, teacher.locator("#ls-class-code").get_attribute("data-code")


def test_a_student_follows_each_teacher_step_breaks_and_steps_away_and_back_and_cannot_move_the_class(
        app_server, new_page):
    """One class, one student's page all through (a page load costs the machine more than the clicks): the student
    follows the teacher's steps, breaks their own copy and comes back, then steps away by Back and comes back."""
    url, _ = app_server
    teacher, code = start_class(new_page, url, 2)
    teacher.wait_for_selector("#ls-class-qr svg", timeout=60_000)  # the QR code, drawn in the page
    teacher.wait_for_function("(code) => location.search.includes('class=' + code)", arg=code)

    student = new_page(1280, 800)  # another browser context: another browser, its own id
    student.goto(f"{url}/?class={code}")
    wait_for_status(student, "Step 2 of 2")
    for k in (3, 4, 5):  # each teacher step shows on the student's page, with no click there
        click_until(teacher, ".st-key-live-step button", status=f"Step {k} of {k}")  # (the student's arrival wakes it)
        wait_for_status(student, f"Step {k} of {k}")
        student.wait_for_function("(k) => new URLSearchParams(location.search).get('step') === String(k)", arg=k)
    wait_for_text(teacher, "1 following · 0 away")

    a_student_breaks_their_own_copy_and_back_to_the_class_returns(teacher, student, code)

    settled(student)
    student.locator(".st-key-class-back button").click()  # away, on the student's own copy
    wait_for_text(student, AWAY.format(k=5))
    wait_for_status(student, "Step 4 of 5")
    student.locator(".st-key-class-back button").click()
    wait_for_status(student, "Step 3 of 5")
    state = Classes(default_store()).state(code)
    assert (state.cursor, state.steps) == (4, 5)  # the student's clicks moved their copy, never the class
    assert heading(teacher).startswith("Step 5 of 5")

    teacher.locator(".st-key-live-step button").click()
    wait_for_status(teacher, "Step 6 of 6")
    wait_for_text(student, AWAY.format(k=6))  # the student is told where the class is, and stays where they are
    assert heading(student).startswith("Step 3 of 5")
    wait_for_text(teacher, "0 following · 1 away")

    student.locator(".st-key-classroom-rejoin button").click()
    wait_for_status(student, "Step 6 of 6")
    student.wait_for_function("(text) => !document.body.innerText.includes(text)", arg="You stepped away")
    wait_for_text(teacher, "1 following · 0 away")
    # (the class's question, its answers and its end: the Japanese class below)


def a_student_breaks_their_own_copy_and_back_to_the_class_returns(teacher, student, code: str) -> None:
    """The class at step 5 of 5, the student following it: Break it here makes a branch on the student's own copy
    (the class does not move), and Back to the class drops it."""
    before = Classes(default_store()).state(code)
    settled(student)
    student.locator(".st-key-class-break-4 summary").click()  # Break it here, on the student's own copy
    student.wait_for_selector(".st-key-class-break-go-4 button", timeout=60_000)
    # the broken branch beside the correct one
    click_until(student, ".st-key-class-break-go-4 button", ".st-key-class-broken", timeout=90_000)
    wait_for_text(student, AWAY.format(k=5))
    wait_for_text(student, "You are on a branch of your own")
    after = Classes(default_store()).state(code)
    assert (after.run_id, after.steps, after.cursor) == (before.run_id, before.steps, before.cursor)
    wait_for_text(teacher, "0 following · 1 away")

    student.locator(".st-key-classroom-rejoin button").click()
    wait_for_status(student, "Step 5 of 5")
    student.wait_for_selector(".st-key-class-broken", state="detached", timeout=60_000)
    student.wait_for_function("(text) => !document.body.innerText.includes(text)", arg="You stepped away")
    wait_for_text(teacher, "1 following · 0 away")


# -- a follower's page, woken by the server: Streamlit's own protocol, as the browser's page speaks it (tests/wire.py)
async def _class(url: str) -> tuple[Wire, str]:
    """A teacher in presenter mode who took a step and started a class: (the teacher's page, the code)."""
    teacher = Wire(url, agent="class teacher")
    await teacher.open()
    await teacher.rerun("present", bool_value=True)
    await teacher.rerun("live-step")
    await teacher.rerun("classroom-start")
    code = teacher.params["class"]
    return teacher, code


def test_a_followers_page_is_woken_by_the_server_and_keeps_its_address_and_its_widgets(app_server):
    url, _ = app_server

    async def lesson() -> None:
        teacher, code = await _class(url)
        student = Follower(url, code)
        await student.open()
        assert (1, 1) in student.shown and list(student.timers.values()) == [SAFETY]  # only the slow safety net
        await student.rerun("class-growth", bool_value=True)  # the student's own choice on their page
        assert student.shows("Context growth")
        sent = student.sent
        for k in (2, 3):
            await teacher.rerun("live-step")
            await asyncio.wait_for(student.until((k, k)), timeout=60)
            assert b"Context growth" in b"".join(student.last)  # the woken run kept the toggle's value
            params = student.params
            assert params["class"] == code and params["step"] == str(k)  # and the address bar's class
        assert student.sent == sent  # woken by the server: the page sent nothing for it
        assert not (teacher.errors or student.errors), (teacher.errors, student.errors)
        await student.close()
        await teacher.close()

    asyncio.run(asyncio.wait_for(lesson(), timeout=240))


def test_a_follower_whose_connection_drops_and_comes_back_is_taken_to_the_class_s_step(app_server):
    """A student's Wi-Fi drops for a while as the teacher steps on: the server forgets the page (its heartbeat finds
    no browser), then the page comes back to its session on the server, and is drawn at the class's step at once."""
    url, _ = app_server

    async def lesson() -> None:
        teacher, code = await _class(url)
        student, other = Follower(url, code), Follower(url, code)
        await student.open()
        await other.open()
        listening = asyncio.create_task(other.listen())  # a student who stays
        await student.ws.close()  # gone for a while
        for _ in range(2):  # two heartbeats of the other page later, the server has looked at this one and forgot it
            seen = _seen(code)
            while _seen(code) == seen:
                await asyncio.sleep(0.1)
        await teacher.rerun("live-step")
        await teacher.rerun("live-step")
        while (3, 3) not in other.shown:  # the class has moved on, and the server has woken whom it could
            await asyncio.sleep(0.1)
        await student.reconnect()  # the same session, as the browser's page reconnects
        await asyncio.wait_for(student.until((3, 3)), timeout=30)
        params = student.params
        assert params["class"] == code and params["step"] == "3"
        await teacher.rerun("live-back")  # and the server wakes it again, as before the drop
        await asyncio.wait_for(student.until((2, 3)), timeout=60)
        assert not (teacher.errors or student.errors or other.errors), (teacher.errors, student.errors, other.errors)
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
        for page in (student, other, teacher):
            await page.close()

    asyncio.run(asyncio.wait_for(lesson(), timeout=240))


def test_a_teacher_s_move_reruns_only_the_follower_s_step(app_server):
    """The class's cursor moved (Back, Step over recorded steps, a Step that executes a stage): the server reruns the
    student's step alone, not the page around it (about half the work for each student)."""
    url, _ = app_server

    async def lesson() -> None:
        teacher, code = await _class(url)
        student = Follower(url, code)
        await student.open()
        heading = f"Class {code}".encode()
        await teacher.rerun("live-step")
        await asyncio.wait_for(student.until((2, 2)), timeout=60)  # (what the page's opening sent is read by now)
        moves = [("live-step", 3, 3), ("live-back", 2, 3), ("live-back", 1, 3), ("live-step", 2, 3)]
        for action, k, n in moves:  # the first executes a stage: the class's run has one more step
            runs = student.runs
            student.shown.clear()  # (step 2 of 3 was shown before: wait for it to be shown again)
            await teacher.rerun(action)
            await asyncio.wait_for(student.until((k, n)), timeout=60)
            assert student.runs == runs + 1 and heading not in b"".join(student.last), action  # the step alone
            params = student.params
            assert params["class"] == code and params["step"] == str(k)  # the address bar follows it too
        assert not (teacher.errors or student.errors), (teacher.errors, student.errors)
        await student.close()
        await teacher.close()

    asyncio.run(asyncio.wait_for(lesson(), timeout=240))


def test_when_the_class_ends_the_server_wakes_each_follower_which_keeps_its_step_and_reads_that_it_ended(app_server):
    """The end of the class is delivered as a step is: the server reruns the student's page (it sends nothing for
    it), which keeps the class's last step, says the class has ended (no error), and then steps on its own."""
    url, _ = app_server

    async def lesson() -> None:
        teacher, code = await _class(url)
        await teacher.rerun("live-step")
        student = Follower(url, code)
        await student.open()
        assert (2, 2) in student.shown
        sent, student.text = student.sent, []  # (what its opening drew is not what the end draws)
        await teacher.rerun("classroom-end")

        async def told() -> None:
            while not b"The class has ended." in b"".join(student.last):
                if await student._next():
                    student._ran()

        await asyncio.wait_for(told(), timeout=60)
        assert student.sent == sent  # woken by the server: the page asked for nothing
        assert b"Step 2 of 2" in b"".join(student.last) and b"You follow the teacher" not in b"".join(student.last)
        await student.rerun("class-back")  # the run is the student's now
        assert student.status() == (1, 2) and student.params["step"] == "1"
        assert not (teacher.errors or student.errors), (teacher.errors, student.errors)
        await student.close()
        await teacher.close()

    asyncio.run(asyncio.wait_for(lesson(), timeout=240))


def test_a_japanese_class_in_chromium_counts_answers_in_bars_and_ends_with_each_student_on_the_last_step(
        app_server, new_page):
    """At 1280×800 in Japanese: a student whose browser asks for Japanese lands on the Japanese interface; the
    teacher's page counts the class's answers in one bar a choice, the right one marked after Reveal; at the end the
    student keeps the last step and reads that the class has ended. Both screens go to docs/projector/."""
    url, _ = app_server
    teacher = new_page(1280, 800)
    teacher.goto(f"{url}/?scenario=two-tools&step=2&lang=ja")
    wait_for_status(teacher, "ステップ 2 / 2")
    teacher.locator(".st-key-present label").click()
    teacher.locator(".st-key-classroom-start button").first.click()
    teacher.wait_for_selector("#ls-class-code", timeout=60_000)
    code = teacher.locator("#ls-class-code").get_attribute("data-code")
    teacher.locator(".st-key-classroom-size button").click()  # the QR code hidden: the step gets the room
    teacher.wait_for_selector("#ls-class-qr", state="detached", timeout=60_000)

    student = new_page(1280, 800)  # another browser, which asks for Japanese: a kept context's cache, its header set
    student.context.set_extra_http_headers({"Accept-Language": "ja-JP,ja;q=0.9"})
    try:
        student.goto(f"{url}/?class={code}")  # the link as the QR code gives it: no language in it
        wait_for_status(student, "ステップ 2 / 2")
        student.wait_for_function("() => new URLSearchParams(location.search).get('lang') === 'ja'")

        sample = load(sample_path("two-tools", "ja"))  # the teacher's run, made in Japanese
        k = next(k for k in range(2, len(sample)) if question_before(sample, k, "ja") is not None)
        settled(teacher)
        teacher.locator(".st-key-live-predict label").click()
        teacher.wait_for_selector(".st-key-live-predict input:checked", timeout=60_000)
        for j in range(2, k):
            teacher.locator(".st-key-live-step button").click()
            wait_for_status(teacher, f"ステップ {j + 1} / {j + 1}")
        teacher.locator(".st-key-live-step button").click()
        teacher.wait_for_selector(f'#ls-question-live[data-step="{k}"]', timeout=60_000)
        student.wait_for_selector(f'#ls-question-class[data-step="{k}"]', timeout=60_000)
        wait_for_text(teacher, "バーが尽きても")  # the countdown says what it is and what its end does
        settled(student)
        assert student.locator(".st-key-class-back button").first.is_disabled()  # no stepping away before an answer
        wait_for_text(student, "まずクラスの質問に答えてください")  # and why
        q = question_before(sample, k, "ja")
        wrong = next(n for n in range(len(q.choices) - 1) if n != q.answer)
        student.locator(f".st-key-classroom-choice-{wrong} button").click()
        teacher.wait_for_selector(f'#ls-class-counts .ls-bar-row[data-choice="{wrong + 1}"][data-count="1"]',
                                  timeout=60_000)
        teacher.locator(".st-key-live-reveal button").click()
        teacher.wait_for_selector(f'#ls-class-counts[data-revealed="1"] .ls-bar-is-right[data-choice="{q.answer + 1}"]',
                                  timeout=60_000)
        student.wait_for_selector("#ls-verdict-class", timeout=60_000)
        settled(teacher)
        teacher.evaluate("() => document.getElementById('ls-class-counts').scrollIntoView({block: 'start'})")
        teacher.evaluate(PAINTED)
        teacher.screenshot(path=str(SHOTS / "class-counts-ja.png"))

        teacher.locator(".st-key-classroom-end button").first.click()
        teacher.wait_for_selector(".st-key-classroom-summary", timeout=60_000)
        wait_for_text(student, "クラスは終了しました")
        wait_for_status(student, f"ステップ {k + 1} / ")  # the class's last step, kept
        assert not student.locator("[data-testid='stAlertContentError']").count()
        settled(student)
        student.screenshot(path=str(SHOTS / "class-ended-ja.png"))
        student.locator(".st-key-class-back button").click()  # and the student steps on their own
        wait_for_status(student, f"ステップ {k} / ")
    finally:
        student.context.set_extra_http_headers({})  # the context is kept for the next tests (new_page), as it was


def _seen(code: str) -> float | None:
    with default_store().transaction() as db:
        row = db.execute("SELECT max(seen) FROM class_followers WHERE code=?", (code,)).fetchone()
    return row[0] if row else None


def test_an_idle_followers_page_costs_the_server_no_run_while_the_class_stands_still(app_server):
    url, _ = app_server

    async def lesson() -> None:
        teacher, code = await _class(url)
        student = Follower(url, code)
        await student.open()
        first = _seen(code)
        assert first is not None  # the page said it follows
        stop = asyncio.Event()
        # the page, doing what it does by itself; its safety net's timer first fires one interval (SAFETY) after it
        # was drawn, as a browser's does
        page = asyncio.create_task(student.follow(stop, phase=1.0))
        while _seen(code) == first:  # until the server's next heartbeat for the page (SEEN_EVERY later)
            await asyncio.sleep(0.1)
            assert not page.done()
        assert student.runs == 0 and student.sent == 1  # no script ran for it meanwhile, and it asked for none
        stop.set()
        await page
        await teacher.rerun("live-step")
        await asyncio.wait_for(student.until((2, 2)), timeout=60)  # the teacher's click: the page is woken
        assert student.sent == 1
        await student.close()
        await teacher.close()

    asyncio.run(asyncio.wait_for(lesson(), timeout=240))
