"""The server CPU of a cursor move (Back, Step over recorded steps) beside a click on the one-button app.

    .venv/bin/python bench/cursor.py                    # 40 Back and 40 Step clicks, 80 floor clicks
    .venv/bin/python bench/cursor.py --clicks 10 --scenario recover

Serves `streamlit run app.py` and bench/floor_app.py (the least any Streamlit
page does for a click) on 127.0.0.1, each in a process of its own (tests/
browser.py's helper). One wire client (tests/wire.py: Streamlit's own protocol,
nothing drawn) opens Step through, runs the scenario to its end (Run to end),
then moves the cursor over the recorded steps: Back to the first step, Step to
the last, again and again, until it has clicked Back N times and Step N times.
Nothing is executed by these clicks. After each of them, it clicks Step on the
floor app: both servers see the same machine at the same moment.

A click's server CPU is what its server process used (/proc/<pid>/stat: utime +
stime, its reaped children's included, as bench/load.py reads it) from the
click until the server said its script finished. /proc counts in ticks (10 ms
on most machines), so a single click reads 0 or 10 ms or 20 ms: the figures are
taken over groups of 5 clicks (each group's CPU a click); `median` and `p95`
are over those groups, `mean` over all clicks. `elements sent` is the mean number
of elements and containers (deltas) the page was sent a click, the hidden one
holding the steps beside the cursor aside. Ends with one line a test can read:

    cursor move: N ms CPU a click · floor: M ms · ratio R
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.load import cpu_seconds, percentile, server_pids  # noqa: E402  (the server's CPU, read as bench/load.py does)
from bench.render import FLOOR_APP  # noqa: E402
from tests.browser import serve_app  # noqa: E402  (the browser tests serve the app with it too)
from tests.wire import Wire  # noqa: E402  (the protocol client the tests use)

GROUP = 5  # clicks whose CPU is read together: a tick is 10 ms


class Clicks:
    """One server's clicks: the CPU and the wall time of each, from the click until its script finished."""

    def __init__(self, pid: int):
        self.pid, self.cpu, self.wall, self.sent = pid, [], [], []

    async def click(self, wire: Wire, widget: str) -> None:
        cpu, started = cpu_seconds(self.pid), time.perf_counter()
        await wire.rerun(widget)
        self.wall.append(time.perf_counter() - started)
        self.cpu.append(cpu_seconds(self.pid) - cpu)
        self.sent.append(len(wire.text))  # the deltas the page was sent (the steps sent ahead aside)

    def grouped(self) -> list[float]:
        """The CPU a click of each group of GROUP clicks, in seconds."""
        return [sum(self.cpu[i:i + GROUP]) / len(self.cpu[i:i + GROUP]) for i in range(0, len(self.cpu), GROUP)]

    def mean(self) -> float:
        return sum(self.cpu) / max(1, len(self.cpu))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def figures(name: str, clicks: Clicks) -> str:
    groups = clicks.grouped()
    return (f"  {name:<12} {len(clicks.cpu):>4} clicks · server CPU a click: mean {_ms(clicks.mean())} · "
            f"median {_ms(statistics.median(groups))} · p95 {_ms(percentile(groups, 0.95))} · "
            f"click to script finished: median {_ms(statistics.median(clicks.wall))} · "
            f"p95 {_ms(percentile(clicks.wall, 0.95))} · elements sent: {statistics.mean(clicks.sent):.1f}")


async def drive(url: str, floor_url: str, app_pid: int, floor_pid: int, n: int,
                scenario: str) -> tuple[Clicks, Clicks, Clicks, int]:
    page, floor = Wire(url, query=f"scenario={scenario}"), Wire(floor_url)  # chosen as a shared link does
    await page.open()
    await floor.open()
    if not page.shows("Step 0 of 0"):
        raise RuntimeError("the page did not open at step 0")
    await page.rerun("live-to-end")
    status = page.status()
    if status is None or status[0] != status[1] or status[0] < 2:
        raise RuntimeError(f"Run to end did not reach the end: {status}")
    steps = status[1]
    for _ in range(3):  # one-time work (imports, first styles) is not a cursor move's
        await page.rerun("live-back")
        await page.rerun("live-step")
        await floor.rerun("floor-step")
    back, step, floor_clicks = Clicks(app_pid), Clicks(app_pid), Clicks(floor_pid)
    k = steps
    while len(back.cpu) < n or len(step.cpu) < n:
        going_back = len(back.cpu) < n and k > 1
        while (going_back and k > 1 and len(back.cpu) < n) or (not going_back and k < steps and len(step.cpu) < n):
            await (back if going_back else step).click(page, "live-back" if going_back else "live-step")
            k += -1 if going_back else 1
            if page.status() != (k, steps):
                raise RuntimeError(f"after a click the page shows {page.status()}, not step {k} of {steps}")
            await floor_clicks.click(floor, "floor-step")
    errors = page.errors + floor.errors
    await page.close()
    await floor.close()
    if errors:
        raise RuntimeError("; ".join(errors[:5]))
    return back, step, floor_clicks, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=40, help="Back clicks, and as many Step clicks (default 40)")
    parser.add_argument("--scenario", default="two-tools", help="the scenario run to its end first (default two-tools)")
    args = parser.parse_args(argv)
    n = max(1, args.clicks)
    with tempfile.TemporaryDirectory(prefix="loopscope-cursor-runs-") as runs:
        env = {"LOOPSCOPE_RUNS": runs}  # the server's saved runs go here, not into the project
        with serve_app(env=env) as url, serve_app(app=FLOOR_APP) as floor_url:
            app_pid, floor_pid = _pid(url), _pid(floor_url)
            load_before = os.getloadavg()[0]
            back, step, floor, steps = asyncio.run(drive(url, floor_url, app_pid, floor_pid, n, args.scenario))
    moves = Clicks(app_pid)
    moves.cpu, moves.wall, moves.sent = back.cpu + step.cpu, back.wall + step.wall, back.sent + step.sent
    print(f"\nCursor moves over the {steps} recorded steps of {args.scenario} on Step through (wire client, nothing "
          f"drawn), a floor click after each · {os.cpu_count()} CPUs · load average (1 min) {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print(figures("Back", back))
    print(figures("Step", step))
    print(figures("cursor move", moves))
    print(figures("floor", floor))
    ratio = moves.mean() / floor.mean() if floor.mean() else float("inf")
    print(f"cursor move: {moves.mean() * 1000:.1f} ms CPU a click · floor: {floor.mean() * 1000:.1f} ms · "
          f"ratio {ratio:.1f}")
    return 0


def _pid(url: str) -> int:
    """The server process serving `url`: a child of this process whose command line names its port."""
    port = url.rsplit(":", 1)[1].encode()
    for pid in server_pids():
        if port in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
            return pid
    raise RuntimeError(f"no server process found for {url}")


if __name__ == "__main__":
    sys.exit(main())
