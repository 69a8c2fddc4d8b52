"""A follower's page that the server cannot wake (pages/views/wake.py) still follows the teacher: it reads its class
every `FALLBACK` seconds (pages/views/following.py `_watch`). Here the server runs as on a Streamlit other than the
one this project pins, where the gate of pages/views/internals.py turns off every use of Streamlit's private parts
(waking, the bursts, Nagle off): the teacher's page steps and the student's page follows all the same. Whether each
internal waking relies on is there, and how a missing one is named, is tests/test_streamlit_internals.py."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from pages.views.following import FALLBACK
from tests.browser import ROOT, serve_app
from tests.test_browser_class import _class
from tests.wire import Follower

# Fault injection, the server's only: the gate of internals.py decides as on another release of Streamlit.
ANOTHER_STREAMLIT = f'''\
import sys

sys.path.insert(0, {str(ROOT)!r})
import pages.views.internals as internals

internals.PINNED = "0.0.0"
'''


def _env(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "fault"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(ANOTHER_STREAMLIT)
    return {"LOOPSCOPE_RUNS": str(tmp_path / "runs"),  # (a store of this test's own)
            "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}


async def _ticks_until(student: Follower, step: tuple[int, int]) -> None:
    """What the page's timer does, one tick after another (without its 2 s between them), until `step` is drawn."""
    while step not in student.shown:
        await student.tick()
        await student.finished()  # the read of the class, and the page drawn again once it saw the class move


def test_with_the_gate_off_the_teacher_steps_and_a_follower_s_page_follows_on_its_own_timer(tmp_path):
    async def lesson(url: str) -> None:
        teacher, code = await _class(url)  # the class at step 1 of 1
        student = Follower(url, code)
        await student.open()
        assert (1, 1) in student.shown
        assert list(student.timers.values()) == [FALLBACK]  # the page's own timer: it reads the class every 2 s
        for k in (2, 3):
            await teacher.rerun("live-step")
            try:
                await asyncio.wait_for(_ticks_until(student, (k, k)), timeout=30)
            except asyncio.TimeoutError:
                pytest.fail(f"the page's timer never drew the class's step {k}: it shows {student.status()}")
            params = student.params
            assert params["class"] == code and params["step"] == str(k)
            assert list(student.timers.values()) == [FALLBACK]  # and its timer still runs
        assert not (teacher.errors or student.errors), (teacher.errors, student.errors)
        await student.close()
        await teacher.close()

    with serve_app(env=_env(tmp_path)) as url:
        asyncio.run(asyncio.wait_for(lesson(url), timeout=120))
