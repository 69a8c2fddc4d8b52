"""How fast a long Claude Code session log imports, next to just parsing its JSON lines.

    .venv/bin/python bench/replay.py                  # 5,000 records, best of 7
    .venv/bin/python bench/replay.py --browser        # and clicks on it in Chromium
    .venv/bin/python bench/replay.py --records 20000 --out /tmp/long.jsonl
    .venv/bin/python bench/replay.py --browser --session-only   # the session with compactions and sub-agents

`claude_code_log()` (tests/synthetic.py) writes the log: tool calls written one
line a block as Claude Code does, parallel results hanging off their own
tool_use lines, a sub-agent sidechain, and records that are not messages. The goal: the import under 1 s, and within 5x of parsing alone.
With --browser, click-to-update on the Replay page at the first, middle and last
step, against the same log's first ten messages: within 20 % at each place.

Then a session of 5,000 records with 5 compactions and 20 sub-agents (half in
the session's file, half in subagents/agent-<id>.jsonl files of their own,
`claude_code_session()`, tests/synthetic.py): the import of all its files and the views of its
first step, in Python; with --browser, from dropping the files on the Replay
page until its first step is drawn. Goal: under 1.5 s beyond start-up.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.synthetic import claude_code_log, claude_code_session  # noqa: E402  (the import tests read them too)
from tests.slider import to_middle  # noqa: E402  (the browser tests move the slider the same way)

GOAL_SECONDS = 1.0
GOAL_SLOWER = 0.2  # the long log's clicks against a 10-message session's, at the same place
GOAL_RATIO = 5.0


def best_of(repeat: int, *fns) -> list[float]:
    """The best time of each function over `repeat` rounds, run in turn so that a busy machine slows all alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            started = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def _clicks_at(page, n: int, k: int, clicks: int) -> list[float]:
    """At step k (1-based): Step and Back (Back and Step at the last step), `clicks` times each; the seconds each took."""
    from bench.render import timed_click

    there, away = (("replay-step", k + 1), ("replay-back", k)) if k < n else (("replay-back", k - 1), ("replay-step", k))
    times = []
    for _ in range(clicks):
        times.append(timed_click(page, there[0], f"Step {there[1]} of {n}"))
        times.append(timed_click(page, away[0], f"Step {away[1]} of {n}"))
    return times


PLACES = ("first step", "middle", "last step")


def browser_clicks(data: bytes, clicks: int = 5) -> dict[str, dict[str, list[float]]]:
    """Click-to-update on the Replay page at the first, middle and last step: a 10-message session and `data`.

    Both are open at once, in two windows, and clicked in turn (a Step and a Back on
    one, then on the other), so a machine that slows down for a while slows both
    alike. The middle is reached as a person would, with a click on the middle of
    the slider. Returns {place: {"10 messages" | file name: seconds of each click}}.
    """
    import tempfile

    from playwright.sync_api import sync_playwright

    from bench.render import open_transcript, timed_click
    from tests.browser import launch, serve_app
    from loop.importers import import_bytes

    found: dict[str, dict[str, list[float]]] = {place: {} for place in PLACES}
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            sync_playwright() as p:
        # The 10-message session is the same log's first ten messages (the same kinds of blocks, of the
        # same sizes), as a plain list of messages: only the length differs.
        imported = import_bytes(data)
        small = Path(folder) / "ten-messages.json"
        small.write_text(json.dumps(imported.trace.messages[:10]), encoding="utf-8")
        big = Path(folder) / "generated.jsonl"
        big.write_bytes(data)
        browser = launch(p)
        tabs = []  # (label, page, number of steps)
        for path, n in ((small, len(import_bytes(small.read_bytes()).trace)), (big, len(imported.trace))):
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()  # a window each
            open_transcript(page, url, path)
            tabs.append(("10 messages" if path is small else path.name, page, n))
        for place in PLACES:
            at = {}
            for label, page, n in tabs:  # put each tab at the place
                if place == "first step":
                    at[label] = 1
                elif place == "last step":
                    timed_click(page, "replay-to-end", f"Step {n} of {n}")
                    at[label] = n
                else:
                    at[label] = to_middle(page, n) + 1
            for _ in range(clicks):  # then click them in turn
                for label, page, n in tabs:
                        found[place].setdefault(label, []).extend(_clicks_at(page, n, at[label], 1))
            for label, page, n in tabs:
                if place == "middle":
                    found[place][f"{label} (step {at[label]} of {n})"] = found[place].pop(label)
        browser.close()
    return found


GOAL_SESSION_SECONDS = 1.5


def first_views(trace) -> None:
    """What the Replay page works out for a trace's first step (its data, not its drawing)."""
    from loop.views import parts as views
    from loop.views.diagram import svg_at

    cursor = trace.cursor
    views.window(len(trace.messages_at(cursor)), 12)
    views.pairs_rows(trace, cursor, recent=12, problems=20)
    for i in range(*views.steps_window(trace, cursor, around=7)):
        views.step_row(trace, i)
    views.state_rows(trace, cursor)
    views.breadcrumb(trace, cursor)
    svg_at(trace, cursor)
    views.what_happened(trace, cursor)


def session_bench(repeat: int, browser: bool) -> bool:
    from loop.importers import import_files

    main_log, files = claude_code_session()
    entries = [("session.jsonl", main_log), *files.items()]
    records = sum(data.count(b"\n") for _, data in entries)
    size = sum(len(data) for _, data in entries)
    imported = import_files(entries)
    trace = imported.trace
    (took,) = best_of(repeat, lambda: first_views(import_files(entries).trace))
    compactions = sum(1 for s in trace.steps if s.stage == "compact")
    linked = sum(1 for t in trace.threads.values() if t.parent_tool_use_id)
    print(f"session: {records:,} records in {len(entries)} files ({size / 1e6:.2f} MB): {len(trace):,} steps, "
          f"{len(trace.threads)} threads ({linked} linked to their Task call), {compactions} compactions, "
          f"{len(imported.warnings)} warnings")
    print(f"  import of every file + the views of the first step: {took * 1000:8.1f} ms (best of {repeat})")
    met = took < GOAL_SESSION_SECONDS
    if browser:
        shown = browser_open_session(entries)
        print(f"  in Chromium, from dropping the {len(entries)} files on the Replay page to its first step drawn: "
              f"{' · '.join(f'{t * 1000:.0f} ms' for t in shown)} (median {sorted(shown)[len(shown) // 2] * 1000:.0f} ms)")
        met = met and sorted(shown)[len(shown) // 2] < GOAL_SESSION_SECONDS
    print(f"  goal (under {GOAL_SESSION_SECONDS} s beyond start-up): {'met' if met else 'MISSED'}")
    return met


def browser_open_session(entries: list[tuple[str, bytes]], times: int = 3) -> list[float]:
    """Seconds from setting the files on the Replay page's uploader to the first step drawn, `times` times."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from bench.render import IDLE, launch, serve_app, wait_idle

    found = []
    with tempfile.TemporaryDirectory(prefix="loopscope-bench-") as folder, serve_app() as url, \
            sync_playwright() as p:
        paths = []
        for name, data in entries:
            path = Path(folder) / Path(name).name
            path.write_bytes(data)
            paths.append(str(path))
        browser = launch(p)
        for _ in range(times):
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
            page.goto(f"{url}/replay")  # start-up: the page and its default sample, not timed
            wait_idle(page)
            page.get_by_text("Replaying two-tools.json").wait_for(timeout=60_000)
            started = time.perf_counter()
            page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(paths)
            page.get_by_text("Replaying session.jsonl with").wait_for(timeout=120_000)
            page.wait_for_function("""([idle]) => document.querySelector(idle) !== null
                && [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith('Step 1 of'))""",
                                   arg=[IDLE], timeout=120_000)
            found.append(time.perf_counter() - started)
            page.context.close()
        browser.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", help="also write the generated log to this file")
    parser.add_argument("--browser", action="store_true",
                        help="also time clicks on the Replay page in Chromium: first, middle and last step, "
                             "against a 10-message session")
    parser.add_argument("--clicks", type=int, default=5, help="with --browser: Step and Back clicks at each place")
    parser.add_argument("--session-only", action="store_true",
                        help="only the session with compactions and sub-agents")
    args = parser.parse_args(argv)

    from loop.importers import import_bytes

    if args.session_only:
        return 0 if session_bench(args.repeat, args.browser) else 1

    data = claude_code_log(args.records)
    if args.out:
        Path(args.out).write_bytes(data)
    lines = data.count(b"\n")
    result = import_bytes(data, "generated.jsonl")
    parse, full = best_of(args.repeat,
                          lambda: [json.loads(line) for line in data.decode("utf-8").split("\n") if line.strip()],
                          lambda: import_bytes(data, "generated.jsonl"))
    ratio = full / parse
    print(f"log: {lines} records, {len(data) / 1e6:.2f} MB → {len(result.trace.messages)} messages, "
          f"{len(result.trace)} steps, threads {[t.id for t in result.threads]}, {len(result.warnings)} warnings")
    print(f"parse JSON lines only: {parse * 1000:8.1f} ms (best of {args.repeat})")
    print(f"import (import_bytes): {full * 1000:8.1f} ms (best of {args.repeat})")
    print(f"ratio import / parse:  {ratio:8.2f}x")
    met = full < GOAL_SECONDS and ratio <= GOAL_RATIO
    print(f"goal (under {GOAL_SECONDS:.0f} s, within {GOAL_RATIO:.0f}x of parsing): {'met' if met else 'MISSED'}")
    if args.browser:
        import statistics

        found = browser_clicks(data, args.clicks)
        print(f"click to update on the Replay page ({args.clicks} Step + {args.clicks} Back clicks at each place, "
              "the two windows clicked in turn), median / worst:")
        for place, by_tab in found.items():
            medians = [statistics.median(times) for times in by_tab.values()]
            cells = " · ".join(f"{label} {statistics.median(times) * 1000:.0f} / {max(times) * 1000:.0f} ms"
                               for label, times in by_tab.items())
            print(f"  {place:11} {cells} · ratio {medians[1] / medians[0]:.2f}")
        print(f"  goal: the long log within 20 % of the 10-message session at each place (ratio <= {1 + GOAL_SLOWER:.1f})")
    session_met = session_bench(args.repeat, args.browser)
    return 0 if met and session_met else 1


if __name__ == "__main__":
    sys.exit(main())
