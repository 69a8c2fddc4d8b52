"""A live session followed, and a big sessions folder listed: the figures, printed.

    .venv/bin/python bench/follow_log.py                 # the follow in Python and the list of 200 sessions
    .venv/bin/python bench/follow_log.py --browser       # and the follow on Replay, in Chromium

Follow: a Claude Code log of `--records` lines (turns of three tool calls) is
read, then a turn more is appended `--rounds` times (its request, tool_use
lines, results and answer), as an agent writes them. In Python: the time
`Follower.poll()` takes to read what was appended and import the log again.
With --browser: the time from the append to the new last step's heading drawn
on Replay with Follow on (the page looks at the file every 0.25 s). Goal: within
a second.

Sessions: `--sessions` logs (a fifth of the long one's size each, half of them with a
sub-agent's log beside them) in 20 projects; the time `sessions()` takes to
list them all (the head of each file and a scan for the marks it counts).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.synthetic import claude_code_log  # noqa: E402  (the sessions listed)
from tests.test_import_claude_code import TASK, Log  # noqa: E402  (the records the tests write)

GOAL_FOLLOW = 1.0
# The heading says the cursor is on the last step, of more than n.
AT_END = """(n) => [...document.querySelectorAll('h3')].some(h => {
    const m = h.textContent.match(/^Step (\\d+) of (\\d+)/); return m && +m[2] > n && m[1] === m[2]; })"""


def split_log(records: int) -> tuple[bytes, list[bytes]]:
    """A log of about `records` lines, one chain of turns written as Claude Code writes them (a line a block, each
    result hung off its tool_use), and the lines to append: each a turn more (a request, tools, results, the answer)."""
    log = Log()
    parent = None
    turn = 0

    def one_turn(parent):
        before = len(log.records)
        parent = log.history([{"role": "user", "content": f"and then {turn}?"}, *TASK[1:]], parent)
        for record in log.records[before:]:  # a response's id is its own, turn after turn
            if record["type"] == "assistant":
                record["message"]["id"] += f"_{turn}"
        return parent, log.records[before:]

    while len(log.records) < records:
        parent, _ = one_turn(parent)
        turn += 1
    data = log.bytes()
    appends = []
    for _ in range(200):
        parent, written = one_turn(parent)
        turn += 1
        appends.append(b"".join(json.dumps(r).encode() + b"\n" for r in written))
    return data, appends


def follow_in_python(records: int, rounds: int) -> list[float]:
    from loop.importers.follow import Follower

    data, appends = split_log(records)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "live.jsonl"
        path.write_bytes(data)
        follower = Follower(path)
        follower.poll()
        times = []
        for chunk in appends[:rounds]:
            with open(path, "ab") as f:
                f.write(chunk)
            started = time.perf_counter()
            change = follower.poll()
            times.append(time.perf_counter() - started)
            assert change is not None and change.imported.trace.messages[-1] == TASK[-1], "the new turn is not read"
        return times


def follow_in_browser(records: int, rounds: int) -> list[float]:
    import re

    from playwright.sync_api import sync_playwright

    from tests.browser import launch, serve_app, settled, wait_for_status

    data, appends = split_log(records)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "-bench" / "live.jsonl"
        path.parent.mkdir()
        path.write_bytes(data)
        listed = {"LOOPSCOPE_SESSIONS_DIR": folder, "LOOPSCOPE_LIST_SESSIONS": "1"}
        with serve_app(env=listed) as url, sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{url}/replay")
            settled(page)
            page.locator(".st-key-replay-session-choice").click()
            page.get_by_role("option").first.click()
            page.get_by_role("button", name="Open the session").click()
            page.get_by_text("Replaying live.jsonl").wait_for(timeout=120_000)
            wait_for_status(page, "Step 1 of ", timeout=120_000)
            page.get_by_role("button", name="Run to end").first.click()
            page.wait_for_function(AT_END, arg=0, timeout=60_000)
            page.get_by_text("Follow", exact=True).click()
            page.wait_for_function("() => document.querySelector('.st-key-replay-follow input')?.checked",
                                   timeout=30_000)
            times = []
            for chunk in appends[:rounds]:
                settled(page)
                heading = page.locator("h3", has_text=re.compile(r"^Step \d+ of \d+")).first.text_content()
                n = int(re.match(r"Step (\d+) of (\d+)", heading).group(2))
                with open(path, "ab") as f:
                    f.write(chunk)
                started = time.perf_counter()
                page.wait_for_function(AT_END, arg=n, timeout=30_000, polling=20)
                times.append(time.perf_counter() - started)
            browser.close()
        return times


def list_sessions(n: int, records: int) -> tuple[float, float, int, int]:
    from loop.importers.sessions import _seen, sessions

    data = claude_code_log(records)
    agent = Log(agent="a1", sidechain=True)
    agent.history(TASK)
    with tempfile.TemporaryDirectory() as folder:
        for i in range(n):
            path = Path(folder) / f"-project-{i % 20}" / f"session-{i:03d}.jsonl"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
            os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
            if i % 2:
                beside = path.with_suffix("") / "subagents" / "agent-a1.jsonl"
                beside.parent.mkdir(parents=True)
                beside.write_bytes(agent.bytes())
        total = sum(p.stat().st_size for p in Path(folder).rglob("*.jsonl"))
        best = float("inf")
        for _ in range(3):
            _seen.clear()  # read every log again (the page keeps what it listed while the logs are unchanged)
            started = time.perf_counter()
            found = sessions(folder)
            best = min(best, time.perf_counter() - started)
        started = time.perf_counter()
        sessions(folder)
        again = time.perf_counter() - started
        return best, again, len(found), total


def figures(label: str, times: list[float]) -> str:
    return (f"{label}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
            f"over {len(times)} appends")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    times = follow_in_python(args.records, args.rounds)
    print(figures(f"follow, a {args.records}-record log, poll (read what was appended, import again)", times))
    if args.browser:
        times = follow_in_browser(args.records, args.rounds)
        print(figures("follow on Replay, append → the new step drawn", times)
              + f" (goal: under {GOAL_FOLLOW:.0f} s: {'met' if max(times) < GOAL_FOLLOW else 'NOT met'})")
    took, again, n, total = list_sessions(args.sessions, args.records // 5)
    print(f"sessions: {n} sessions ({total / 1e6:.0f} MB) listed in {took * 1000:.0f} ms (best of 3, every log "
          f"read), {again * 1000:.0f} ms listed again unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
