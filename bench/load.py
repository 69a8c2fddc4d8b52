"""A classroom on one server: N students step the two-tools scenario to its end at the same time.

    .venv/bin/python bench/load.py                      # 20 students, both kinds of client below
    .venv/bin/python bench/load.py --client wire        # the server's side only
    .venv/bin/python bench/load.py --client chromium --sessions 5
    .venv/bin/python bench/load.py --client wire --replicas 2 --sessions 40

Serves `streamlit run app.py` on 127.0.0.1 (tests/browser.py's helper); each
student clicks Step until the loop ends, --think-ms apart. With --replicas N it
serves a class instead (deploy/classroom.py: N replicas behind HAProxy, one
runs store) and points the students at the balancer, and first one replica
behind it with the N-th of the students, then prints the two side by side;
the balancer's log says how many students each replica had, and that each
student's requests all reached one. Two kinds of client:

- chromium: one headless Chromium with N contexts (separate cookies, storage
  and WebSockets). A click is timed in the page, from the click until the page
  shows the new "Step k of k", the script is idle and a frame is painted. The
  N pages are drawn on this machine's cores, beside the server.
- wire: N WebSockets that speak Streamlit's own protocol, as N browsers on
  their own machines would: a click is the message the page sends, timed until
  the server says the script finished. Nothing is drawn here, so the figures
  are the server's, as a class whose laptops do their own drawing sees it.

Meanwhile the memory of the streamlit process and all its children (PSS, from
/proc) is sampled every 0.2 s. Prints p50, p95 and max click-to-update, the
CPU time of the server (and of the browser), the error count and the peak
memory. Loopback only; bounded by --sessions (at most 50 a replica) and
--time-limit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.render import CLICK_AND_WAIT  # noqa: E402
from tests.browser import CHROMIUM, CHROMIUM_ARGS, IDLE, free_port, serve_app  # noqa: E402
from tests.wire import AGENT, ENDED, Bell, drive_wire  # noqa: E402  (the protocol client the tests use too)

MAX_SESSIONS = 50


# -- the server's memory, from /proc --
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    """The memory `pid` holds: its proportional set size (shared pages split among their users).

    Plain RSS would count the server twice while a tool's command is between
    fork and exec, and a forked child shares every page of the server.
    """
    for name, field in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(name) as f:
                for line in f:
                    if line.startswith(field):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return 0


def server_pids(program: bytes = b"streamlit") -> list[int]:
    """The streamlit servers (or, given its name, the balancer) this script started: children of this process."""
    found = []
    for pid in _children().get(os.getpid(), []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if program in cmdline or any(Path(os.fsdecode(arg)).name == os.fsdecode(program) for arg in cmdline[:1]):
            found.append(pid)
    return found


def descendants(root: int, tree: dict[int, list[int]] | None = None) -> list[int]:
    """`root` and all its descendants."""
    tree = tree if tree is not None else _children()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def cpu_seconds(pid: int) -> float:
    """CPU seconds `pid` used, its reaped children's included (the tools' commands)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Sampler(threading.Thread):
    """Every 0.2 s: the memory of the servers' trees and of the balancer (kept: the peaks), and the CPU time of
    the servers, the balancer and the browser (every other process this script started)."""

    def __init__(self, server: list[int], balancer: list[int] | None = None, every: float = 0.2):
        super().__init__(daemon=True)
        self.server, self.balancer, self.every, self.stop = server, balancer or [], every, threading.Event()
        self.peak, self.balancer_peak = 0, 0
        self.cpu: dict[int, tuple[str, float]] = {}  # pid: (whose, CPU seconds last seen)

    def sample(self) -> None:
        tree = _children()
        server = {pid for root in self.server for pid in descendants(root, tree)}
        balancer = {pid for root in self.balancer for pid in descendants(root, tree)}
        self.peak = max(self.peak, sum(_rss(pid) for pid in server))
        self.balancer_peak = max(self.balancer_peak, sum(_rss(pid) for pid in balancer))
        for pid in descendants(os.getpid(), tree)[1:]:
            whose = "server" if pid in server else "balancer" if pid in balancer else "browser"
            self.cpu[pid] = (whose, cpu_seconds(pid))

    def cpu_of(self, whose: str) -> float:
        return sum(seconds for who, seconds in self.cpu.values() if who == whose)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every)


# -- one student --
async def student(browser, url: str, n: int, max_steps: int, think_ms: int, times: list[float], errors: list[str],
                  bell: Bell, opens: list[float]):
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    ready = False
    try:
        page = await context.new_page()
        started = time.perf_counter()
        await page.goto(url, timeout=120_000)
        await page.wait_for_selector(IDLE, timeout=120_000)
        await page.locator("h3", has_text="Step 0 of 0").first.wait_for(timeout=120_000)
        opens.append(time.perf_counter() - started)
        ready = True
        await bell.ready()
        for k in range(1, max_steps + 1):
            await page.wait_for_selector(IDLE, timeout=120_000)
            await page.wait_for_selector(".st-key-live-step button:not([disabled])", timeout=120_000)
            await page.wait_for_timeout(think_ms)  # a person between two clicks
            found = await page.evaluate(CLICK_AND_WAIT, ["live-step", f"Step {k} of {k}", IDLE, 60_000])
            seconds = found["settled"] / 1000  # the server's answer: what a class's server is measured by
            times.append(seconds)
            if await page.get_by_text(ENDED).count():
                break
        else:
            errors.append(f"session {n}: the loop did not end within {max_steps} steps")
        if await page.locator("[data-testid='stException']").count():
            errors.append(f"session {n}: an exception is shown on the page")
        if await page.locator("[data-testid='stAlertContentError']").count():
            errors.append(f"session {n}: an error is shown: "
                          + (await page.locator("[data-testid='stAlertContentError']").first.inner_text())[:200])
    except Exception as exc:  # a timeout, a crash: counted, the others go on
        errors.append(f"session {n}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    finally:
        if not ready:
            bell.arrive()  # the others do not wait for a student who could not open the page
        await context.close()


async def drive(url: str, sessions: int, max_steps: int, think_ms: int, time_limit: float):
    from playwright.async_api import async_playwright

    times: list[float] = []
    errors: list[str] = []
    opens: list[float] = []
    bell = Bell(sessions)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            jobs = [student(browser, url, n, max_steps, think_ms, times, errors, bell, opens) for n in range(sessions)]
            await asyncio.wait_for(asyncio.gather(*jobs), timeout=time_limit)
        except asyncio.TimeoutError:
            errors.append(f"the run did not finish within {time_limit:.0f} s")
        finally:
            await browser.close()
    return times, errors, opens



async def warm_up(url: str) -> None:
    """One visit first, so the server's one-time imports are not counted as the class's."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page()
        await page.goto(url, timeout=120_000)
        await page.locator("h3", has_text="Step 0 of 0").first.wait_for(timeout=120_000)
        await browser.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


CLIENTS = {
    "chromium": ("browsers: one headless Chromium with {n} contexts, on the server's cores", drive),
    "wire": ("browsers on their own machines: {n} WebSocket clients speaking Streamlit's protocol, no rendering", drive_wire),
}


def measure(url: str, client: str, sessions: int, args, classroom=None) -> dict:
    """Run one class and print its figures; with `classroom`, the balancer's too. Returns the figures."""
    sampler = Sampler(server_pids(), server_pids(b"haproxy") if classroom else None)
    sampler.sample()
    idle, server_cpu_before = sampler.peak, sampler.cpu_of("server")
    balancer_cpu_before = sampler.cpu_of("balancer")
    load_before = os.getloadavg()[0]
    sampler.start()
    started, client_cpu = time.monotonic(), time.process_time()
    what, driver = CLIENTS[client]
    times, errors, opens = asyncio.run(driver(url, sessions, args.max_steps, args.think_ms, args.time_limit))
    took, client_cpu = time.monotonic() - started, time.process_time() - client_cpu
    sampler.stop.set()
    sampler.join()
    sampler.sample()
    replicas = f" · {len(classroom.replicas)} replica(s) behind HAProxy" if classroom else ""
    print(f"\n{sessions} students stepping two-tools to its end, {args.think_ms} ms between clicks{replicas} · "
          + what.format(n=sessions))
    print(f"  {os.cpu_count()} CPUs · {took:.0f} s · load average (1 min) {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    if opens:
        print(f"  opening the page, all at once: p50 {percentile(opens, 0.5) * 1000:.0f} ms · "
              f"max {max(opens) * 1000:.0f} ms; then they step together")
    if times:
        print(f"  click to update over {len(times)} clicks: p50 {percentile(times, 0.5) * 1000:.0f} ms · "
              f"p95 {percentile(times, 0.95) * 1000:.0f} ms · max {max(times) * 1000:.0f} ms · "
              f"mean {statistics.mean(times) * 1000:.0f} ms")
    server_cpu = sampler.cpu_of("server") - server_cpu_before
    browser = (f" · browser (Chromium) {sampler.cpu_of('browser'):.1f} s" if client == "chromium"
               else f" · this script (the wire clients, the sampler) {client_cpu:.1f} s")
    balancer_cpu = sampler.cpu_of("balancer") - balancer_cpu_before
    balancer = f" · balancer {balancer_cpu:.1f} s" if classroom else ""
    print(f"  CPU time: server {server_cpu:.1f} s ({server_cpu / max(1, len(times)) * 1000:.0f} ms a click)"
          f"{balancer}{browser} · available {took * (os.cpu_count() or 1):.0f} s")
    spread_line, moved = spread(classroom) if classroom is not None else ("", 0)
    if moved:
        errors.append(f"{moved} student(s) not kept on one replica")
    print(f"  errors: {len(errors)}")
    for e in errors[:20]:
        print(f"    - {e}")
    if classroom is not None:
        print(f"  students per replica (the balancer's log): {spread_line} · students whose requests reached more "
              f"than one replica: {moved}")
    print(f"  server memory (streamlit and its children, PSS): idle {idle / 2**20:.0f} MiB · "
          f"peak {sampler.peak / 2**20:.0f} MiB"
          + (f" · balancer (HAProxy) peak {sampler.balancer_peak / 2**20:.0f} MiB" if classroom else ""))
    figures = {"sessions": sessions, "times": times, "errors": errors, "peak": sampler.peak,
               "balancer_peak": sampler.balancer_peak, "cpu": server_cpu, "load_before": load_before,
               "replicas": len(classroom.replicas) if classroom else 1, "spread": spread_line}
    return figures


def spread(classroom) -> tuple[str, int]:
    """("r1 20 · r2 20", students seen on more than one replica), from the balancer's log."""
    servers: dict[str, set[str]] = {}
    for request in classroom.requests():
        if request.agent.startswith(AGENT):
            servers.setdefault(request.agent, set()).add(request.server)
    counts = {r.name: 0 for r in classroom.replicas}
    for seen in servers.values():
        for server in seen:
            counts[server] = counts.get(server, 0) + 1
    return " · ".join(f"{name} {n}" for name, n in counts.items()), sum(len(s) > 1 for s in servers.values())


def side_by_side(client: str, rows: list[dict]) -> None:
    """One class on one replica beside the bigger class on N replicas."""
    heads = [f"{r['replicas']} replica{'s' if r['replicas'] > 1 else ''}, {r['sessions']} students" for r in rows]
    width = max(28, *(len(h) + 2 for h in heads))

    def line(label: str, cells: list[str]) -> None:
        print(f"  {label:<28}" + "".join(f"{c:>{width}}" for c in cells))

    def ms(r: dict, q: float | None) -> str:
        if not r["times"]:
            return "–"
        return f"{(max(r['times']) if q is None else percentile(r['times'], q)) * 1000:.0f} ms"

    print(f"\n{client} clients, {rows[0]['sessions']} students a replica, side by side:")
    line("", heads)
    line("load average before (1 min)", [f"{r['load_before']:.2f}" for r in rows])
    line("click to update p50", [ms(r, 0.5) for r in rows])
    line("click to update p95", [ms(r, 0.95) for r in rows])
    line("click to update max", [ms(r, None) for r in rows])
    line("errors", [str(len(r["errors"])) for r in rows])
    line("server CPU a click", [f"{r['cpu'] / max(1, len(r['times'])) * 1000:.0f} ms" for r in rows])
    line("peak memory, replicas (PSS)", [f"{r['peak'] / 2**20:.0f} MiB" for r in rows])
    line("peak memory, balancer (PSS)", [f"{r['balancer_peak'] / 2**20:.0f} MiB" for r in rows])
    line("students per replica", [r["spread"] for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, help=f"students at once (default 20 a replica; at most "
                                                      f"{MAX_SESSIONS} a replica)")
    parser.add_argument("--client", choices=["both", *CLIENTS], default="both",
                        help="chromium: real browsers on this machine; wire: the server's side alone; both (default)")
    parser.add_argument("--replicas", type=int, default=0,
                        help="serve N replicas behind HAProxy (deploy/classroom.py) and also one replica with "
                             "the N-th of the students, side by side (default: one server, no balancer)")
    parser.add_argument("--max-steps", type=int, default=30, help="Step clicks a session at most")
    parser.add_argument("--think-ms", type=int, default=300, help="pause between two clicks of one student")
    parser.add_argument("--time-limit", type=float, default=600, help="seconds for each run")
    args = parser.parse_args(argv)
    replicas = max(0, args.replicas)
    sessions = max(1, min(args.sessions or 20 * max(1, replicas), MAX_SESSIONS * max(1, replicas)))
    clients = list(CLIENTS) if args.client == "both" else [args.client]
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (sudo apt-get install -y chromium): it opens the page once before "
                         "a class, and is the chromium client.")
    failed = False
    for client in clients:
        if not replicas:
            with tempfile.TemporaryDirectory(prefix="loopscope-load-runs-") as runs:
                os.environ["LOOPSCOPE_RUNS"] = runs  # the server's saved runs go here, not into the project
                with serve_app() as url:  # a new server for each client: one run's memory is not the next one's
                    asyncio.run(warm_up(url))
                    failed = bool(measure(url, client, sessions, args)["errors"]) or failed
            continue
        plan = [(1, max(1, round(sessions / replicas))), (replicas, sessions)] if replicas > 1 else [(1, sessions)]
        rows = []
        for count, students in plan:
            rows.append(class_run(client, count, students, args))
            failed = failed or bool(rows[-1]["errors"])
        side_by_side(client, rows)
    return 1 if failed else 0


def class_run(client: str, replicas: int, students: int, args) -> dict:
    """`students` on `replicas` replicas behind the balancer, all started afresh and stopped after."""
    from deploy.classroom import Classroom

    with tempfile.TemporaryDirectory(prefix="loopscope-load-class-") as folder:
        ports = [free_port() for _ in range(replicas + 1)]
        with Classroom(ports[1:], port=ports[0], host="127.0.0.1", folder=Path(folder) / "class",
                       runs=Path(folder) / "runs") as classroom:
            for replica in classroom.replicas:  # each one's one-time imports, not counted as the class's
                asyncio.run(warm_up(replica.url))
            return measure(classroom.url, client, students, args, classroom)


if __name__ == "__main__":
    sys.exit(main())
