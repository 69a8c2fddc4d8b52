"""A follower's page that the server cannot wake (pages/views/wake.py) still follows the teacher: it reads its class
every `FALLBACK` seconds (pages/views/following.py `_watch`). And the Streamlit internals that waking relies on are
all there in the Streamlit this project pins, named one by one when one is missing (wake.py `unmet`), so that an
upgrade which renames one fails here at once instead of leaving students' pages on the slower fallback unnoticed."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from pages.views.following import FALLBACK
from tests.browser import serve_app
from tests.test_browser_class import _class
from tests.wire import Follower, Wire

# Fault injection, the server's only: a Streamlit whose runtime does not show its sessions where wake.py reads them
# (`Runtime.instance()._session_mgr`), as an upgrade that renamed it would. Streamlit's own code reaches its session
# manager through `self`, and the other callers of `Runtime.instance()` read public attributes only, so the server
# works as before: only waking is gone.
NO_SESSION_MANAGER = '''\
from streamlit.runtime.runtime import Runtime


class _WithoutSessions:
    def __init__(self, runtime):
        object.__setattr__(self, "_runtime", runtime)

    def __getattr__(self, name):
        if name == "_session_mgr":
            raise AttributeError(name)
        return getattr(self._runtime, name)


_instance = Runtime.instance.__func__
Runtime.instance = classmethod(lambda cls: _WithoutSessions(_instance(cls)))
'''

# A page that says which internals waking it relies on this server lacks (wake.py `unmet`).
PROBE = '''\
import streamlit as st

from pages.views import wake

st.text("unmet: [" + (", ".join(wake.unmet()) or "none") + "]")
'''


def _env(tmp_path: Path, fault: bool) -> dict[str, str]:
    env = {"LOOPSCOPE_RUNS": str(tmp_path / "runs")}  # (a store of this test's own)
    if fault:
        folder = tmp_path / "fault"
        folder.mkdir()
        (folder / "sitecustomize.py").write_text(NO_SESSION_MANAGER)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    return env


async def _ticks_until(student: Follower, step: tuple[int, int]) -> None:
    """What the page's timer does, one tick after another (without its 2 s between them), until `step` is drawn."""
    while step not in student.shown:
        await student.tick()
        await student.finished()  # the read of the class, and the page drawn again once it saw the class move


def test_a_page_the_server_cannot_wake_reads_its_class_every_few_seconds_and_follows_the_teacher(tmp_path):
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

    with serve_app(env=_env(tmp_path, fault=True)) as url:
        asyncio.run(asyncio.wait_for(lesson(url), timeout=120))


@pytest.mark.parametrize("fault, unmet", [(False, "none"), (True, "Runtime._session_mgr")])
def test_the_streamlit_internals_waking_relies_on_are_there_and_a_missing_one_is_named(tmp_path, fault, unmet):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)

    async def said(url: str) -> str:
        page = Wire(url)
        await page.open()
        await page.close()
        assert not page.errors, page.errors
        found = re.search(rb"unmet: \[([^]]*)\]", b"".join(page.text))
        assert found
        return found.group(1).decode()

    with serve_app(app=probe, env=_env(tmp_path, fault)) as url:
        assert asyncio.run(asyncio.wait_for(said(url), timeout=60)) == unmet
