"""Find in a 5,000-record session: what a query costs, and a jump to the next match beside a click on Step.

    .venv/bin/python bench/find.py                  # the 5,000-record Claude Code log, 10 clicks each
    .venv/bin/python bench/find.py --records 20000 --clicks 20 --no-browser

First, in this process: the log (tests/synthetic.py's `claude_code_log`) is imported, and each kind of query is
answered cold (the first time for this trace: a text query makes each step's text once), then again (the answer
kept per trace length and query), then a text never asked before (the steps' texts already made).

Then in Debian's chromium: `streamlit run app.py` on 127.0.0.1, the log opened on the Replay page, and from the
first step, `--clicks` times: a click on Step, then a click on Next match (the next error), each timed in the page
until it shows the new step (its heading, its history and its diagram) and the server has answered (see
bench/render.py). Step over a recorded step is shown by the browser before the server answers (the steps beside
the cursor go with the page: pages/views/ahead.py); a jump waits for the server. The goal: a jump is drawn, the
server's answer included, in the time a click on Step is (median "settled" ratio <= 1.5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.render import VIEWPORT, drawn, open_transcript, timed_clicks  # noqa: E402
from loop.importers import import_bytes  # noqa: E402
from loop.views.find import ERRORS, TEXT, TOOL, Query, matches, next_match, tool_names  # noqa: E402
from tests.synthetic import claude_code_log  # noqa: E402

GOAL_RATIO = 1.5


def _timed(trace, query: Query) -> tuple[float, int]:
    started = time.perf_counter()
    found = matches(trace, query)
    return time.perf_counter() - started, len(found)


def measure_queries(trace) -> None:
    print(f"{'query':>24} {'matches':>8} {'cold':>9} {'kept':>9}")
    for query in (Query(ERRORS), Query(TOOL, tool_names(trace)[0]), Query(TEXT, "error"), Query(TEXT, "toolu_")):
        cold, n = _timed(trace, query)
        kept, _ = _timed(trace, query)
        label = f"{query.kind} {query.text!r}" if query.text else query.kind
        print(f"{label:>24} {n:>8} {cold * 1000:>7.2f}ms {kept * 1e6:>7.1f}µs")
    started = time.perf_counter()
    found = matches(trace, Query(ERRORS))
    for k in range(len(trace)):
        next_match(found, k)
    print(f"next_match over every cursor: {(time.perf_counter() - started) / len(trace) * 1e6:.2f} µs a cursor")


def measure_browser(trace, data: bytes, clicks: int) -> tuple[list, list]:
    from playwright.sync_api import sync_playwright

    from tests.browser import launch, serve_app

    errors = matches(trace, Query(ERRORS))
    n = len(trace)
    steps, jumps = [], []
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            sync_playwright() as p:
        path = Path(folder) / "session.jsonl"
        path.write_bytes(data)
        browser = launch(p)
        page = browser.new_context(viewport=VIEWPORT).new_page()
        open_transcript(page, url, path)
        cursor = 0
        for _ in range(clicks):
            cursor += 1
            steps.append(timed_clicks(page, "replay-step", f"Step {cursor + 1} of {n}", also=drawn(cursor + 1)))
            to = next_match(errors, cursor)
            if to is None:
                break
            jumps.append(timed_clicks(page, "replay-find-next", f"Step {to + 1} of {n}", also=drawn(to + 1)))
            cursor = to
        browser.close()
    return steps, jumps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5000, help="lines of the generated Claude Code log")
    parser.add_argument("--clicks", type=int, default=10, help="Step clicks, and as many Next match clicks")
    parser.add_argument("--no-browser", action="store_true", help="only the cost of the queries")
    args = parser.parse_args(argv)
    data = claude_code_log(args.records)
    started = time.perf_counter()
    trace = import_bytes(data, "session.jsonl").trace
    print(f"a Claude Code log of {args.records:,} records, {len(data) / 1e6:.2f} MB: {len(trace):,} steps, imported "
          f"in {time.perf_counter() - started:.2f} s · {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    measure_queries(trace)
    if args.no_browser:
        return 0
    steps, jumps = measure_browser(trace, data, args.clicks)
    step = [statistics.median(x[i] for x in steps) for i in (0, 1)]
    jump = [statistics.median(x[i] for x in jumps) for i in (0, 1)]
    ratio = jump[1] / step[1]
    print(f"in chromium, {len(steps)} Step clicks and {len(jumps)} Next match clicks (the next error), medians:")
    print(f"  Step: shown {step[0] * 1000:.0f} ms, settled {step[1] * 1000:.0f} ms · Next match: shown "
          f"{jump[0] * 1000:.0f} ms, settled {jump[1] * 1000:.0f} ms · worst jump shown "
          f"{max(x[0] for x in jumps) * 1000:.0f} ms")
    print(f"goal: a jump settled within {GOAL_RATIO}x of a Step click: {ratio:.2f}x "
          f"({'met' if ratio <= GOAL_RATIO else 'MISSED'})")
    return 0 if ratio <= GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
