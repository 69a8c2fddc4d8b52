"""A server killed with SIGKILL in the middle of a class, then started again, loses no step.

Four students (tests/wire.py's protocol clients, each keeping its cookie as a
browser does) step two-tools on a real `streamlit run`; some go Back. The server
is killed while they click. A new server on the same runs store: each student
comes back with its cookie, presses Resume and finds every step the page had
shown, at the cursor it had shown (or the click that was under way when the
server died, when that one was saved too). Stepping on to the end, and opening
the page again, keeps them all.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from tests.wire import Wire
from tests.browser import serve_app
from loop.files import browser_id
from loop.files.runs import RunsStore
from tests.test_runs_store import FULL  # samples/two-tools.json: the run every student makes

STAGES = [s.stage for s in FULL.steps]


@dataclass
class Student:
    target: int  # steps to take (the kill may cut them short)
    back: bool  # goes Back once, before its last step
    think: float  # seconds between two clicks
    cookies: dict = field(default_factory=dict)
    seen: tuple[int, int] | None = None  # the last "Step k of n" the page was sent
    pending: str | None = None  # the click under way when the server died


async def attend(url: str, student: Student, killed: asyncio.Event, clicks: list) -> None:
    wire = Wire(url)
    await wire.open()
    student.cookies = wire.cookies
    try:
        for action in plan(student):
            await click(student, wire, action)
            clicks.append(action)
        await killed.wait()  # done before the kill: wait for it like the others
    except Exception:  # the server died under this click
        student.cookies = wire.cookies


def plan(student) -> list[str]:
    """The clicks a student makes: Step to its target, with one Back before the last when it goes back."""
    out = ["live-step"] * student.target
    if student.back:
        out.insert(len(out) - 1, "live-back")
    return out


async def click(student, wire: Wire, action: str) -> None:
    """One click after the student's pause; what the page then shows is kept even when the click dies."""
    await asyncio.sleep(student.think)
    student.pending = action
    wire.text = []
    try:
        await wire.rerun(action)
    finally:
        student.seen = wire.status() or student.seen
    student.pending = None


def expected(student: Student) -> set[tuple[int, int]]:
    """The (cursor + 1, steps) Resume may show: what the page last showed, or the click under way done."""
    k, n = student.seen
    after = {"live-step": (n, n) if k == n else (k + 1, n), "live-back": (max(1, k - 1), n)}
    states = {(k, n)}
    if student.pending == "live-step" and k == n:
        states.add((n + 1, n + 1))
    elif student.pending:
        states.add(after[student.pending])
    return states


async def come_back(url: str, student: Student) -> tuple[Wire, tuple[int, int]]:
    wire = Wire(url, student.cookies)
    await wire.open()
    assert wire.shows("Saved runs · 1"), "the student's run is not offered"
    await wire.rerun("resume-run")
    assert not wire.errors, wire.errors
    return wire, wire.status()


def test_a_server_killed_mid_class_and_restarted_loses_no_step_and_shows_none_before_it_is_saved(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))
    students = [Student(3, True, 0.02), Student(5, True, 0.05), Student(7, False, 0.1), Student(9, True, 0.2)]
    started: list = []
    with serve_app(started=started) as url:
        async def class_until_the_kill() -> None:
            killed, clicks = asyncio.Event(), []
            tasks = [asyncio.create_task(attend(url, s, killed, clicks)) for s in students]
            # Mid-class: some students are done, some are still clicking, and every one has a saved step
            # (a run is saved from its first step on: a first click the kill cut short leaves nothing to resume).
            while len(clicks) < 12 or any(not s.seen or not s.seen[1] for s in students):
                await asyncio.sleep(0.01)
            os.kill(started[0].pid, signal.SIGKILL)
            started[0].wait()
            killed.set()
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)

        asyncio.run(class_until_the_kill())
    assert started[0].returncode == -signal.SIGKILL
    assert any(s.pending for s in students), "the kill landed between clicks: nobody was cut off"

    with serve_app() as url:  # a new server, the same runs store
        async def back_and_on() -> None:
            for student in students:
                wire, state = await come_back(url, student)
                assert state in expected(student), (student, state)
                for _ in range(20):  # live again: Step moves the cursor to the end, then runs the next stages
                    if wire.status() == (10, 10):
                        break
                    await wire.rerun("live-step")
                assert wire.shows("The loop has ended")
                await wire.close()
                again, state = await come_back(url, student)  # and once more, a reload
                assert state == (10, 10)
                await again.close()

        asyncio.run(asyncio.wait_for(back_and_on(), timeout=240))
        shows_a_step_only_once_it_is_saved(url, tmp_path)  # on this server too, for another browser

    store = RunsStore(tmp_path)
    key = store.secret()
    for student in students:
        owner = browser_id.owner(browser_id.verify(key, student.cookies["loopscope_browser"]))
        [saved] = store.list(owner)
        trace, _ = store.load(owner, saved.id)
        assert [s.stage for s in trace.steps] == STAGES and len(trace.messages) == len(FULL.messages)


def shows_a_step_only_once_it_is_saved(url: str, runs: Path) -> None:
    """While another process holds the store's write lock, the page may run the stage but must not show it. (On the
    restarted server of the test above: a server started for this alone costs seconds of the machine's CPU.)"""
    import sqlite3

    async def run() -> None:
        wire = Wire(url)
        await wire.open()
        for k in (1, 2):
            await wire.rerun("live-step")
        assert wire.status() == (2, 2)
        for action, shown in (("live-step", (3, 3)), ("live-back", (2, 3))):
            db = sqlite3.connect(runs / "runs.sqlite3", isolation_level=None)
            db.execute("BEGIN IMMEDIATE")  # the server's next save waits for this
            wire.text = []
            try:
                await asyncio.wait_for(wire.rerun(action), timeout=3)
            except asyncio.TimeoutError:
                pass
            assert wire.status() != shown, f"{action}: the page showed {shown} before it was saved"
            db.execute("COMMIT")
            db.close()
            await wire.finished()
            assert wire.status() == shown
        await wire.close()

    asyncio.run(run())
