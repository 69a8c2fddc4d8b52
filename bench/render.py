"""Click-to-update in a real browser, for short and very long histories, and inside a sub-agent.

    .venv/bin/python bench/render.py                 # 10, 200 and 5,000 messages, then main vs sub-agent
    .venv/bin/python bench/render.py --sizes 5 5000 --clicks 20
    .venv/bin/python bench/render.py --sizes --threads-only

For each size it writes a synthetic transcript (tests/synthetic.py: the real
engine, a counting model and an echo tool: one tool_use a turn), serves `streamlit run app.py` on
127.0.0.1, opens the transcript on the Replay page with Debian's chromium,
jumps to the end, then clicks Back through the last steps and Step forward
again (every stage; the history window moves as messages come and go). A click
is timed in the page, from the click until the page says the new step
("Step k of n"), the script state is `notRunning` and a frame is painted.
It prints the median and the worst of each.

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


CLICK_AND_WAIT = """async ([key, expect, idle, timeout]) => {
    const button = document.querySelector(`.st-key-${key} button`);
    const shown = () => [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith(expect))
                        && document.querySelector(idle) !== null;
    const started = performance.now();
    // Checked when the page changes, not every frame: twenty pages polling at 60 fps would cost the
    // machine more than the pages themselves.
    await new Promise((resolve, reject) => {
        const observer = new MutationObserver(() => { if (shown()) { observer.disconnect(); clearTimeout(timer); resolve(); } });
        const timer = setTimeout(() => { observer.disconnect(); reject(new Error(`no "${expect}" after ${timeout} ms`)); }, timeout);
        observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true,
                                         attributeFilter: ['data-test-script-state']});
        button.click();
    });
    await new Promise(requestAnimationFrame);  // and painted
    return performance.now() - started;
}"""


def timed_click(page, key: str, expect: str, timeout: float = 120_000) -> float:
    """Seconds from clicking the button with widget key `key` until the page shows `expect`, the script is idle and a frame is painted.

    The click is dispatched in the page and timed there, so Playwright's own waits are not counted.
    """
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(300)  # let the previous update settle, as a person would between clicks
    return page.evaluate(CLICK_AND_WAIT, [key, expect, IDLE, timeout]) / 1000


def measure(url: str, n_messages: int, clicks: int, folder: Path) -> dict:
    from playwright.sync_api import sync_playwright

    from loop.transcript import loads

    path = folder / f"bench-{n_messages}.json"
    path.write_text(long_transcript(n_messages), encoding="utf-8")
    n_steps = len(loads(path.read_bytes()))
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        open_transcript(page, url, path)
        timed_click(page, "replay-to-end", f"Step {n_steps} of {n_steps}")
        clicks = min(clicks, n_steps - 1)
        # Back through the last turns, then Step forward again: every stage, and the history
        # window moving with the messages written and appended.
        back = [timed_click(page, "replay-back", f"Step {n_steps - k} of {n_steps}") for k in range(1, clicks + 1)]
        step = [timed_click(page, "replay-step", f"Step {k} of {n_steps}")
                for k in range(n_steps - clicks + 1, n_steps + 1)]
        browser.close()
    return {"messages": n_messages, "steps": n_steps, "bytes": path.stat().st_size, "back": back, "step": step}


def measure_threads(url: str, clicks: int, folder: Path) -> dict:
    """Back and Step clicks in the main thread's last steps and in the sub-agent's, in the same run."""
    from playwright.sync_api import sync_playwright

    from loop.transcript import dumps

    trace = threaded_trace()
    child = next(t for t in trace.threads.values() if not t.is_main)
    n, returned = len(trace), trace.returned_at(child.id)
    main_tail = n - 1 - returned  # main steps after the sub-agent's answer came back
    clicks = min(clicks, main_tail, len(trace.steps_of(child.id)) - 1)
    path = folder / "bench-threads.json"
    path.write_text(dumps(trace), encoding="utf-8")
    found = {"main": [], "sub-agent": []}
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
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
        browser.close()
    return {"steps": n, "main messages": len(trace.messages), "sub-agent messages": len(child.messages),
            "bytes": path.stat().st_size, **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 200, 5000], help="history lengths (messages)")
    parser.add_argument("--clicks", type=int, default=10, help="Back clicks, then Step clicks, timed at each size")
    parser.add_argument("--threads-only", action="store_true", help="only the main-thread/sub-agent comparison")
    args = parser.parse_args(argv)
    rows = []
    threads = None
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url:
        for n in [] if args.threads_only else args.sizes:
            rows.append(measure(url, n, args.clicks, Path(folder)))
            print(f"measured {n} messages", file=sys.stderr, flush=True)
        threads = measure_threads(url, args.clicks, Path(folder))
    print(f"click to update, {args.clicks} clicks each way · {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} (the browser, the server and this script share them)")
    print(f"{'messages':>8} {'steps':>6} {'file':>9}  {'Back median':>11} {'Back worst':>10}  "
          f"{'Step median':>11} {'Step worst':>10}")
    for r in rows:
        print(f"{r['messages']:>8} {r['steps']:>6} {r['bytes'] / 1e6:>7.2f}MB  {_ms(statistics.median(r['back'])):>11} "
              f"{_ms(max(r['back'])):>10}  {_ms(statistics.median(r['step'])):>11} {_ms(max(r['step'])):>10}")
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


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


if __name__ == "__main__":
    sys.exit(main())
