"""tests/wire.py's protocol client drives the real server: two students at once, each to the end of the loop."""

import asyncio

from tests.wire import Wire, drive_wire
from tests.browser import serve_app
from loop.files.runs import RunsStore


def test_two_students_over_the_wire_each_step_two_tools_to_its_end(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))  # the server's saved runs go here
    with serve_app() as url:
        times, errors, opens = asyncio.run(drive_wire(url, sessions=2, max_steps=30, think_ms=0, time_limit=120))

        async def one_more() -> Wire:  # a third student, read closely
            wire = Wire(url)
            await wire.open()
            for k in range(1, 11):
                await wire.rerun("live-step")
            await wire.close()
            return wire

        wire = asyncio.run(one_more())

        async def back_again() -> Wire:  # the third student reloads: the same browser, its cookie sent
            again = Wire(url, wire.cookies)
            await again.open()
            await again.close()
            return again

        again = asyncio.run(back_again())
    assert errors == []
    assert len(times) == 2 * 10 and len(opens) == 2  # two-tools ends at its tenth step, for each student
    assert wire.shows("Step 10 of 10") and wire.shows("The loop has ended")
    assert "step=10" in wire.query and "session" not in wire.query  # the URL the page would show: no id in it
    # the browser's id, and Streamlit's own XSRF cookie (set with the page's config, as a browser gets it)
    assert set(wire.cookies) == {"loopscope_browser", "_streamlit_xsrf"}
    assert again.cookies["loopscope_browser"] == wire.cookies["loopscope_browser"]
    assert again.shows("Saved runs · 1")  # its run, found by its cookie
    owners = {owner for owner, _ in RunsStore(tmp_path).everyone()}
    assert len(owners) == 3  # three browsers, three owners: nothing shared
