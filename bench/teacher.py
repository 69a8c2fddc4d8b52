"""A teacher's clicks in a class, in Chromium, while students arrive: does each click show, and how soon?

    .venv/bin/python bench/teacher.py                        # 60 clicks, a student arriving every 4th click
    .venv/bin/python bench/teacher.py --clicks 200 --busy 2  # two busy processes beside it, as a loaded server

Serves `streamlit run app.py` on 127.0.0.1 (tests/browser.py's helper, saved runs in a temporary folder) and
opens it in Debian's Chromium at 1280×800, as a projector shows it: the teacher runs two-tools to its end, turns
presenter mode on and starts a class. One student follows in Chromium from the start; then the teacher moves the
class's cursor over the recorded steps, Back to the first and Step to the last, again and again, one click at a
time, the next click a moment (`--think`) after the page showed the last one, as a person clicks. Every
`--arrive` clicks another student opens the class's link as the click is made, and stays, following the class:
Streamlit's own protocol (tests/wire.py's Follower, a browser tab's part without its drawing: the students'
browsers are on their own laptops, not on the server). The teacher's page counts its followers on its own timer.

Each click is timed twice: until its step is on the screen (ahead.py draws a step beside the cursor in the
browser at once) and until the server has drawn it (its run over). A click the server has not drawn `--lost`
seconds after it is late; one not drawn two minutes later still is lost, and the teacher goes on from the step
the page shows. Meanwhile the page may have shown the server's last step again (ahead.py takes a step drawn
ahead back after 3 s without an answer). Ends with one line a reader can compare:

    teacher clicks: N · shown at once: median A ms · drawn by the server: median M ms · p95 P ms · late (over
    L s) X · lost Y · students S · busy B
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.load import percentile  # noqa: E402
from tests.browser import launch, serve_app, settled, wait_for_status  # noqa: E402  (as the browser tests open the app)
from tests.wire import Follower  # noqa: E402  (a student's tab, as the class tests have it)

STEPS = 10  # two-tools, run to its end
LATE = 120  # seconds more a click not drawn in time is waited for before it counts as lost
HEADING = "() => [...document.querySelectorAll('h3')].map(h => h.textContent).find(t => t.startsWith('Step ')) || ''"


def heading(page) -> str:
    return page.evaluate(HEADING)


def drawn(page, k: int, seconds: float) -> bool:
    """Whether the server has drawn step k (its run over, nothing of the page drawn ahead) within `seconds`."""
    try:
        wait_for_status(page, f"Step {k} of {STEPS}", timeout=seconds * 1000)
        return True
    except Exception:  # Playwright's TimeoutError
        return False


def shown(page, k: int, seconds: float) -> bool:
    """Whether the page's heading reads "Step k of 10" within `seconds`."""
    try:
        page.wait_for_function(f"() => ({HEADING})().startsWith('Step {k} of {STEPS}')", timeout=seconds * 1000)
        return True
    except Exception:  # Playwright's TimeoutError: the click did not show
        return False


def main(argv: list[str] | None = None, chromium=None) -> int:
    """The bench; `chromium`: a browser already launched (a test's), else Debian's Chromium is launched here."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=60, help="the teacher's clicks, Back and Step")
    parser.add_argument("--arrive", type=int, default=4, help="a student arrives every ARRIVE clicks (0: none)")
    parser.add_argument("--think", type=float, default=0.3, help="seconds between a click shown and the next")
    parser.add_argument("--lost", type=float, default=15.0, help="seconds after which a click the server has not "
                                                                  "drawn is late")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside it, as a loaded server has")
    args = parser.parse_args(argv)

    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.busy)]
    times, late, at_once, lost, students = [], [], [], 0, 0
    loop = asyncio.new_event_loop()  # the arriving students' tabs, beside the teacher's clicks
    threading.Thread(target=loop.run_forever, daemon=True).start()
    stop = asyncio.Event()
    following: list = []

    async def arrive(url: str, code: str) -> None:
        student = Follower(url, code)
        await student.open()
        following.append(asyncio.create_task(student.follow(stop)))

    async def leave() -> None:
        stop.set()
        await asyncio.gather(*following, return_exceptions=True)

    try:
        with tempfile.TemporaryDirectory() as runs, serve_app(env={"LOOPSCOPE_RUNS": runs}) as url, \
                contextlib.ExitStack() as stack:
            if chromium is None:
                from playwright.sync_api import sync_playwright

                chromium = launch(stack.enter_context(sync_playwright()))
                stack.callback(chromium.close)
            teacher_context = chromium.new_context(viewport={"width": 1280, "height": 800})
            stack.callback(teacher_context.close)
            teacher = teacher_context.new_page()
            teacher.goto(f"{url}/?scenario=two-tools&step={STEPS}")
            wait_for_status(teacher, f"Step {STEPS} of {STEPS}")
            teacher.locator(".st-key-present label").click()
            teacher.locator(".st-key-classroom-start button").first.click()
            teacher.wait_for_selector("#ls-class-code", timeout=60_000)
            code = teacher.locator("#ls-class-code").get_attribute("data-code")
            follower_context = chromium.new_context(viewport={"width": 1280, "height": 800})
            stack.callback(follower_context.close)
            follower = follower_context.new_page()
            follower.goto(f"{url}/?class={code}")
            wait_for_status(follower, f"Step {STEPS} of {STEPS}")
            students += 1
            k, down = STEPS, True
            for n in range(1, args.clicks + 1):
                if args.arrive and n % args.arrive == 0:  # not waited for: it arrives as the click lands
                    asyncio.run_coroutine_threadsafe(arrive(url, code), loop)
                    students += 1
                if k == 1 or k == STEPS and not down:
                    down = k == STEPS
                target = k - 1 if down else k + 1
                button = ".st-key-live-back button" if down else ".st-key-live-step button"
                started = time.monotonic()
                teacher.locator(button).click()
                if shown(teacher, target, args.lost):  # drawn ahead, in the browser (ahead.py)
                    at_once.append((time.monotonic() - started) * 1000)
                if drawn(teacher, target, args.lost) or drawn(teacher, target, LATE):
                    seconds = time.monotonic() - started
                    (times if seconds <= args.lost else late).append(seconds * 1000)
                    k = target
                else:  # never drawn: where is the class now?
                    lost += 1
                    settled(teacher)
                    k = int(re.match(r"Step (\d+) of", heading(teacher)).group(1))
                    print(f"click {n} ({'Back' if down else 'Step'} to {target}) not drawn after "
                          f"{args.lost + LATE:g} s: the page shows step {k}", flush=True)
                time.sleep(args.think)
            asyncio.run_coroutine_threadsafe(leave(), loop).result(timeout=60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        for process in busy:
            process.kill()
            process.wait()
    drawn_ms = times + late
    print(f"teacher clicks: {args.clicks} · shown at once: median {statistics.median(at_once or [0]):.0f} ms · "
          f"drawn by the server: median {statistics.median(drawn_ms or [0]):.0f} ms · p95 "
          f"{percentile(drawn_ms or [0], 0.95):.0f} ms · late (over {args.lost:g} s) {len(late)} · lost {lost} · "
          f"students {students} · busy {args.busy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
