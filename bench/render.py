"""Click-to-update in a real browser, for short and very long histories, against the floor of a click, and
inside a sub-agent.

    .venv/bin/python bench/render.py                 # 10, 200 and 5,000 messages, the default page, main vs sub-agent
    .venv/bin/python bench/render.py --sizes 5 5000 --clicks 20
    .venv/bin/python bench/render.py --sizes --threads-only

For each size it writes a synthetic transcript (the real engine, a counting
model and an echo tool: one tool_use a turn), serves `streamlit run app.py` on
127.0.0.1, opens the transcript on the Replay page with Debian's chromium,
jumps to the end, then clicks Back through the last steps and Step forward
again (every stage; the history window moves as messages come and go). It also
steps the default page (Step through, its default scenario, live) to its end
and back: there Step executes each stage (a model call, a sandboxed command).
A click is timed in the page, twice: until it shows the new step ("Step k of
n", its history and its diagram) in a painted frame, and until the server has
answered too (the script state is `notRunning` and no step shown ahead of the
server is left: Back and Step over recorded steps are shown by the browser at
once, see pages/views/ahead.py, and the server's answer follows).

The floor is a one-button Streamlit app (bench/floor_app.py) served beside it
and open in a window of the same browser: each page click is followed by a
floor click, so both see the same machine at the same moment. It prints the
median and the worst of each, and the page's median over the floor's.

Then one run with a sub-agent (a main thread of 2,000 messages whose last
turns call a `task`, a sub-agent of 200 messages inside it): Back from the
end, first through the main thread's last steps, then into the sub-agent's;
Step forward again the same way. A click inside the sub-agent must be as fast
as one in the main thread of the same run (median ratio <= 1.2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser import IDLE, launch, serve_app, wait_idle  # noqa: E402  (the browser tests use them too)
from tests.synthetic import long_transcript, threaded_trace  # noqa: E402


def open_transcript(page, url: str, path: Path) -> None:
    """Open `path` on the Replay page through its file uploader."""
    page.goto(f"{url}/replay")
    wait_idle(page)
    page.get_by_text("Replaying two-tools.json").wait_for(timeout=60_000)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_text(f"Replaying {path.name}").wait_for(timeout=300_000)
    wait_idle(page)


CLICK_AND_WAIT = """async ([key, expect, idle, timeout, also = []]) => {
    const button = document.querySelector(`.st-key-${key} button`);
    const shown = () => [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith(expect))
                        && also.every(s => document.querySelector(s) !== null);
    // Settled: the server has answered too (its page replaced any step the browser showed ahead of it).
    const settled = () => shown() && document.querySelector(idle) !== null
                          && document.querySelector('[data-ahead]') === null;
    const started = performance.now();
    // Checked when the page changes, not every frame: twenty pages polling at 60 fps would cost the
    // machine more than the pages themselves.
    const when = (test) => new Promise((resolve, reject) => {
        const observer = new MutationObserver(() => {
            if (!test()) return;
            observer.disconnect();
            clearTimeout(timer);
            // and painted: a task queued in the next frame runs once that frame is drawn
            requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - started)));
        });
        const timer = setTimeout(() => {
            observer.disconnect();
            reject(new Error(`no "${expect}" after ${timeout} ms`));
        }, timeout);
        observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true,
                                         attributeFilter: ['data-test-script-state', 'data-ahead']});
    });
    const first = when(shown), last = when(settled);
    button.click();
    return {shown: await first, settled: await last};
}"""


def drawn(k: int) -> list[str]:
    """What Loopscope shows once step k is on the page: beside its heading, its history and its diagram."""
    return [f'.ls-panel[data-step="{k}"]', f'.ls-diagram-box[data-step="{k}"] svg']


def timed_clicks(page, key: str, expect: str, timeout: float = 120_000, also: list[str] = ()) -> tuple[float, float]:
    """Seconds from clicking the button with widget key `key` until the page shows `expect` (and every selector
    of `also` is on it) and a frame is painted; then until the server has answered as well (the script is idle
    and no step shown ahead of it is left: see pages/views/ahead.py).

    The click is dispatched in the page and timed there, so Playwright's own waits are not counted.
    """
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(300)  # let the previous update settle, as a person would between clicks
    found = page.evaluate(CLICK_AND_WAIT, [key, expect, IDLE, timeout, list(also)])
    return found["shown"] / 1000, found["settled"] / 1000


def timed_click(page, key: str, expect: str, timeout: float = 120_000, also: list[str] = ()) -> float:
    """Seconds from clicking until the page shows `expect` and the server has answered (see `timed_clicks`)."""
    return timed_clicks(page, key, expect, timeout, also)[1]


FLOOR_APP = ROOT / "bench" / "floor_app.py"
VIEWPORT = {"width": 1600, "height": 1000}


class Floor:
    """The one-button app in a window of its own; `click()` times one click of it."""

    def __init__(self, browser, url: str):
        self.page = browser.new_context(viewport=VIEWPORT).new_page()
        self.page.goto(url)
        wait_idle(self.page)
        self.k = 1
        self.times: list[float] = []

    def click(self) -> None:
        self.k += 1
        self.times.append(timed_click(self.page, "floor-step", f"Step {self.k} of"))


def measure(browser, url: str, floor: Floor, n_messages: int, clicks: int, folder: Path) -> dict:
    """Back, then Step, `clicks` times each at the end of a transcript of `n_messages` on the Replay page."""
    from loop.files.transcript import loads

    path = folder / f"bench-{n_messages}.json"
    path.write_text(long_transcript(n_messages), encoding="utf-8")
    n_steps = len(loads(path.read_bytes()))
    page = browser.new_context(viewport=VIEWPORT).new_page()
    open_transcript(page, url, path)
    timed_click(page, "replay-to-end", f"Step {n_steps} of {n_steps}")
    clicks = min(clicks, n_steps - 1)
    floor.times = []
    # Back through the last turns, then Step forward again: every stage, and the history
    # window moving with the messages written and appended. A floor click after each.
    back, step = [], []
    for k in range(1, clicks + 1):
        back.append(timed_clicks(page, "replay-back", f"Step {n_steps - k} of {n_steps}", also=drawn(n_steps - k)))
        floor.click()
    for k in range(n_steps - clicks + 1, n_steps + 1):
        step.append(timed_clicks(page, "replay-step", f"Step {k} of {n_steps}", also=drawn(k)))
        floor.click()
    page.context.close()
    return {"label": f"{n_messages:,} messages", "steps": n_steps, "bytes": path.stat().st_size, "back": back,
            "step": step, "floor": floor.times}


def measure_default(browser, url: str, floor: Floor) -> dict:
    """The default page as it opens: Step through its default scenario live to the end, then Back to step 1."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.goto(url)
    wait_idle(page)
    floor.times = []
    step, back = [], []
    k = 0
    while not page.locator(".st-key-live-step button").is_disabled():
        k += 1
        step.append(timed_clicks(page, "live-step", f"Step {k} of {k}", also=drawn(k)))
        floor.click()
    for j in range(k - 1, 0, -1):
        back.append(timed_clicks(page, "live-back", f"Step {j} of {k}", also=drawn(j)))
        floor.click()
    page.context.close()
    return {"label": "default page", "steps": k, "bytes": 0, "back": back, "step": step, "floor": floor.times}


def measure_threads(browser, url: str, clicks: int, folder: Path) -> dict:
    """Back and Step clicks in the main thread's last steps and in the sub-agent's, in the same run."""
    from loop.files.transcript import dumps

    trace = threaded_trace()
    child = next(t for t in trace.threads.values() if not t.is_main)
    n, returned = len(trace), trace.returned_at(child.id)
    main_tail = n - 1 - returned  # main steps after the sub-agent's answer came back
    clicks = min(clicks, main_tail, len(trace.steps_of(child.id)) - 1)
    path = folder / "bench-threads.json"
    path.write_text(dumps(trace), encoding="utf-8")
    found = {"main": [], "sub-agent": []}
    page = browser.new_page(viewport=VIEWPORT)
    open_transcript(page, url, path)
    timed_click(page, "replay-to-end", f"Step {n} of {n}")
    for k in range(n - 1, n - 1 - clicks, -1):  # Back in the main thread
        found["main"].append(timed_click(page, "replay-back", f"Step {k} of {n}"))
    k = n - clicks  # where the cursor is now (1-based, as the page counts)
    while k > returned + 1:  # on to the parent's run_tool that took the answer, untimed
        k -= 1
        timed_click(page, "replay-back", f"Step {k} of {n}")
    for k in range(returned, returned - clicks, -1):  # Back in the sub-agent
        found["sub-agent"].append(timed_click(page, "replay-back", f"Step {k} of {n} · task "))
    for k in range(returned - clicks + 2, returned + 1):  # Step in the sub-agent
        found["sub-agent"].append(timed_click(page, "replay-step", f"Step {k} of {n} · task "))
    k = returned
    while k < n - clicks:  # back to the main thread's last steps, untimed
        k += 1
        timed_click(page, "replay-step", f"Step {k} of {n}")
    for k in range(n - clicks + 1, n + 1):  # Step in the main thread
        found["main"].append(timed_click(page, "replay-step", f"Step {k} of {n}"))
    page.close()
    return {"steps": n, "main messages": len(trace.messages), "sub-agent messages": len(child.messages),
            "bytes": path.stat().st_size, **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 200, 5000], help="history lengths (messages)")
    parser.add_argument("--clicks", type=int, default=10, help="Back clicks, then Step clicks, timed at each size")
    parser.add_argument("--no-default", action="store_true", help="leave out the default page (Step through, live)")
    parser.add_argument("--threads-only", action="store_true", help="only the main-thread/sub-agent comparison")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            serve_app(app=FLOOR_APP) as floor_url, sync_playwright() as p:
        browser = launch(p)
        floor = Floor(browser, floor_url)
        if not args.no_default and not args.threads_only:
            rows.append(measure_default(browser, url, floor))
            print("measured the default page", file=sys.stderr, flush=True)
        for n in [] if args.threads_only else args.sizes:
            rows.append(measure(browser, url, floor, n, args.clicks, Path(folder)))
            print(f"measured {n} messages", file=sys.stderr, flush=True)
        threads = measure_threads(browser, url, args.clicks, Path(folder))
        browser.close()
    print(f"click to update, {args.clicks} clicks each way, a floor click after each · {os.cpu_count()} CPUs, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (the browser, the servers and this script "
          "share them)")
    if rows:
        print("shown: until the step is on the screen; settled: until the server has answered too (the tables, "
              "the URL, the saved cursor)")
        print(f"{'':>14} {'steps':>6}  {'Back shown':>10} {'settled':>8}  {'Step shown':>10} {'settled':>8}  "
              f"{'floor':>6}  {'Back/floor':>15} {'Step/floor':>15}")
    for r in rows:
        floor_median = statistics.median(r["floor"])
        back = [statistics.median(x[i] for x in r["back"]) for i in (0, 1)]
        step = [statistics.median(x[i] for x in r["step"]) for i in (0, 1)]
        print(f"{r['label']:>14} {r['steps']:>6}  {_ms(back[0]):>10} {_ms(back[1]):>8}  {_ms(step[0]):>10} "
              f"{_ms(step[1]):>8}  {_ms(floor_median):>6}  {_ratios(back, floor_median):>15} "
              f"{_ratios(step, floor_median):>15}")
    sized = [r for r in rows if r["label"] != "default page"]
    if sized:
        worst = max(statistics.median(x[0] for x in r[way]) / statistics.median(r["floor"])
                    for r in sized for way in ("back", "step"))
        print("medians; ratios shown/settled over the floor's median. On the default page Step executes each stage "
              "(the server's work: nothing to show before it is done)")
        print(f"goal: Back and Step within 2x of the floor at every size: worst shown {worst:.2f}x "
              f"({'met' if worst <= GOAL_CLICK_RATIO else 'MISSED'})")
    t = threads
    main_med, sub_med = statistics.median(t["main"]), statistics.median(t["sub-agent"])
    ratio = sub_med / main_med
    print(f"one run with a sub-agent: {t['steps']:,} steps, {t['main messages']:,} main messages, "
          f"{t['sub-agent messages']:,} in the sub-agent, {t['bytes'] / 1e6:.2f} MB; "
          f"{len(t['main'])} clicks in each thread, Back and Step")
    print(f"  main thread: median {_ms(main_med)}, worst {_ms(max(t['main']))} · inside the sub-agent: median "
          f"{_ms(sub_med)}, worst {_ms(max(t['sub-agent']))} · ratio {ratio:.2f} "
          f"(goal <= {GOAL_THREAD_RATIO}: {'met' if ratio <= GOAL_THREAD_RATIO else 'MISSED'})")
    return 0 if ratio <= GOAL_THREAD_RATIO else 1


GOAL_THREAD_RATIO = 1.2
GOAL_CLICK_RATIO = 2.0


def _ratios(times: list[float], floor: float) -> str:
    return f"{times[0] / floor:.2f}x/{times[1] / floor:.2f}x"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


if __name__ == "__main__":
    sys.exit(main())
