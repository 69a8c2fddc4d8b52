"""A classroom on one server: N students step the two-tools scenario to its end at the same time.

    .venv/bin/python bench/load.py                      # 20 students, both kinds of client below
    .venv/bin/python bench/load.py --client wire        # the server's side only
    .venv/bin/python bench/load.py --client chromium --sessions 5

Serves `streamlit run app.py` on 127.0.0.1 (tests/browser.py's helper); each
student clicks Step until the loop ends, --think-ms apart. Two kinds of client:

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
memory. Loopback only; bounded by --sessions (at most 50) and --time-limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
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
from tests.browser import CHROMIUM, CHROMIUM_ARGS, IDLE, serve_app  # noqa: E402

MAX_SESSIONS = 50
ENDED = "The loop has ended"


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


def server_pids() -> list[int]:
    """The streamlit server this script started (a child of this process)."""
    found = []
    for pid in _children().get(os.getpid(), []):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in cmdline:
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


def _cpu(pid: int) -> float:
    """CPU seconds `pid` used, its reaped children's included (the tools' commands)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Sampler(threading.Thread):
    """Every 0.2 s: the server tree's memory (kept: the peak), and the CPU time of the server and of the browser."""

    def __init__(self, server: list[int], every: float = 0.2):
        super().__init__(daemon=True)
        self.server, self.every, self.peak, self.stop = server, every, 0, threading.Event()
        self.cpu: dict[int, tuple[str, float]] = {}  # pid: (whose, CPU seconds last seen)

    def sample(self) -> None:
        tree = _children()
        server = {pid for root in self.server for pid in descendants(root, tree)}
        self.peak = max(self.peak, sum(_rss(pid) for pid in server))
        for pid in descendants(os.getpid(), tree)[1:]:
            self.cpu[pid] = ("server" if pid in server else "browser", _cpu(pid))

    def cpu_of(self, whose: str) -> float:
        return sum(seconds for who, seconds in self.cpu.values() if who == whose)

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.every)


class Bell:
    """The class opens the page, then starts stepping together: the first clicks are a burst, as when a
    teacher says "now press Step", and no click waits behind another student's page being built."""

    def __init__(self, students: int):
        self.left, self.rang = students, asyncio.Event()

    def arrive(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.rang.set()

    async def ready(self) -> None:
        self.arrive()
        await self.rang.wait()


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
            seconds = await page.evaluate(CLICK_AND_WAIT, ["live-step", f"Step {k} of {k}", IDLE, 60_000]) / 1000
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



# -- one student whose browser is on another machine: Streamlit's own protocol --
class Wire:
    """One browser tab as the server sees it: a WebSocket speaking Streamlit's protobuf messages.

    It sends what the page sends on a click (a rerun with the button's trigger
    set, in the fragment the button is drawn in, the URL's query string and the
    page), reads the deltas the server streams back, and keeps the widget ids
    and the query string the server hands it, as the page does. It keeps the
    cookie the page sets (the browser's id, handed out by a component whose
    script sets `document.cookie`) and sends it when it connects, as a browser
    does: pass `cookies` from an earlier Wire to come back as the same browser.
    Rendering is left out: that is the work each student's own machine does.
    """

    def __init__(self, url: str, cookies: dict[str, str] | None = None):
        self.url = url.replace("http", "ws", 1) + "/_stcore/stream"
        self.query, self.page, self.widgets, self.fragments = "", "", {}, {}
        self.cookies = dict(cookies or {})
        self.text: list[bytes] = []  # the raw deltas of the last run, searched for what the page would show
        self.errors: list[str] = []

    async def open(self) -> None:
        import websockets

        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None, ping_interval=None,
                                           additional_headers={"Cookie": cookie} if cookie else None)
        await self.rerun()

    async def rerun(self, widget: str | None = None) -> None:
        """Send one rerun (a click on the widget with user key `widget`) and read until the script finishes."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_script_hash = self.page
        if widget is not None:
            msg.rerun_script.fragment_id = self.fragments.get(widget, "")
            state = msg.rerun_script.widget_states.widgets.add()
            state.id, state.trigger_value = self.widgets[widget], True
        await self.ws.send(msg.SerializeToString())
        self.text = []
        await self.finished()

    async def finished(self) -> None:
        """Read what the server sends until the script run finishes."""
        while not await self._read():
            pass

    async def _read(self) -> bool:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        raw = await self.ws.recv()
        msg = ForwardMsg()
        msg.ParseFromString(raw)
        kind = msg.WhichOneof("type")
        if kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "navigation" and msg.navigation.page_script_hash:
            self.page = msg.navigation.page_script_hash
        elif kind == "delta":
            self.text.append(raw)
            if msg.delta.WhichOneof("type") == "new_element":
                self._element(msg.delta.new_element, msg.delta.fragment_id)
        return kind == "script_finished"

    def _element(self, element, fragment: str) -> None:
        what = element.WhichOneof("type")
        if what == "button" and "-" in element.button.id:
            key = element.button.id.split("-", 2)[-1]  # "$$ID-<hash>-<key>"
            self.widgets[key], self.fragments[key] = element.button.id, fragment
        elif what == "bidi_component" and element.bidi_component.WhichOneof("data") == "json":
            data = json.loads(element.bidi_component.json)
            if isinstance(data, dict) and isinstance(data.get("cookie"), str):  # what its script does in a browser
                name, _, value = data["cookie"].split(";")[0].partition("=")
                self.cookies[name.strip()] = value.strip()
        elif what == "exception":
            self.errors.append(f"exception: {element.exception.message[:200]}")
        elif what == "alert" and element.alert.format == element.alert.ERROR:
            self.errors.append(f"error shown: {element.alert.body[:200]}")

    def shows(self, text: str) -> bool:
        needle = text.encode()
        return any(needle in raw for raw in self.text)

    def status(self) -> tuple[int, int] | None:
        """(k, n) of the last "Step k of n" the page was sent, even in a run cut short."""
        found = [m for raw in self.text for m in re.finditer(rb"Step (\d+) of (\d+)", raw)]
        return (int(found[-1].group(1)), int(found[-1].group(2))) if found else None

    async def close(self) -> None:
        await self.ws.close()


async def wire_student(url: str, n: int, max_steps: int, think_ms: int, times: list[float], errors: list[str],
                       bell: Bell | None = None, opens: list[float] | None = None):
    wire = Wire(url)
    ready = False
    try:
        started = time.perf_counter()
        await wire.open()
        if not wire.shows("Step 0 of 0"):
            raise RuntimeError("the page did not open at step 0")
        if opens is not None:
            opens.append(time.perf_counter() - started)
        ready = True
        if bell is not None:
            await bell.ready()
        for k in range(1, max_steps + 1):
            await asyncio.sleep(think_ms / 1000)
            started = time.perf_counter()
            await wire.rerun("live-step")
            times.append(time.perf_counter() - started)
            if not wire.shows(f"Step {k} of {k}"):
                raise RuntimeError(f"after click {k} the page does not show step {k}")
            if wire.shows(ENDED):
                break
        else:
            errors.append(f"session {n}: the loop did not end within {max_steps} steps")
        errors.extend(f"session {n}: {e}" for e in wire.errors)
        await wire.close()
    except Exception as exc:
        errors.append(f"session {n}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    finally:
        if bell is not None and not ready:
            bell.arrive()


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


async def drive_wire(url: str, sessions: int, max_steps: int, think_ms: int, time_limit: float):
    times: list[float] = []
    errors: list[str] = []
    opens: list[float] = []
    bell = Bell(sessions)
    jobs = [wire_student(url, n, max_steps, think_ms, times, errors, bell, opens) for n in range(sessions)]
    try:
        await asyncio.wait_for(asyncio.gather(*jobs), timeout=time_limit)
    except asyncio.TimeoutError:
        errors.append(f"the run did not finish within {time_limit:.0f} s")
    return times, errors, opens


CLIENTS = {
    "chromium": ("browsers: one headless Chromium with {n} contexts, on the server's cores", drive),
    "wire": ("browsers on their own machines: {n} WebSocket clients speaking Streamlit's protocol, no rendering", drive_wire),
}


def measure(url: str, client: str, sessions: int, args) -> tuple[list[float], list[str]]:
    roots = server_pids()
    sampler = Sampler(roots)
    sampler.sample()
    idle, server_cpu_before = sampler.peak, sampler.cpu_of("server")
    sampler.start()
    started = time.monotonic()
    what, driver = CLIENTS[client]
    times, errors, opens = asyncio.run(driver(url, sessions, args.max_steps, args.think_ms, args.time_limit))
    took = time.monotonic() - started
    sampler.stop.set()
    sampler.join()
    sampler.sample()
    print(f"\n{sessions} students stepping two-tools to its end, {args.think_ms} ms between clicks · "
          + what.format(n=sessions))
    print(f"  {os.cpu_count()} CPUs · {took:.0f} s · load average {os.getloadavg()[0]:.1f}")
    if opens:
        print(f"  opening the page, all at once: p50 {percentile(opens, 0.5) * 1000:.0f} ms · "
              f"max {max(opens) * 1000:.0f} ms; then they step together")
    if times:
        print(f"  click to update over {len(times)} clicks: p50 {percentile(times, 0.5) * 1000:.0f} ms · "
              f"p95 {percentile(times, 0.95) * 1000:.0f} ms · max {max(times) * 1000:.0f} ms · "
              f"mean {statistics.mean(times) * 1000:.0f} ms")
    server_cpu = sampler.cpu_of("server") - server_cpu_before
    browser = f" · browser (Chromium) {sampler.cpu_of('browser'):.1f} s" if client == "chromium" else ""
    print(f"  CPU time: server {server_cpu:.1f} s ({server_cpu / max(1, len(times)) * 1000:.0f} ms a click)"
          f"{browser} · available {took * (os.cpu_count() or 1):.0f} s")
    print(f"  errors: {len(errors)}")
    for e in errors[:20]:
        print(f"    - {e}")
    print(f"  server memory (streamlit and its children, PSS): idle {idle / 2**20:.0f} MiB · "
          f"peak {sampler.peak / 2**20:.0f} MiB")
    return times, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20, help=f"students at once (at most {MAX_SESSIONS})")
    parser.add_argument("--client", choices=["both", *CLIENTS], default="both",
                        help="chromium: real browsers on this machine; wire: the server's side alone; both (default)")
    parser.add_argument("--max-steps", type=int, default=30, help="Step clicks a session at most")
    parser.add_argument("--think-ms", type=int, default=300, help="pause between two clicks of one student")
    parser.add_argument("--time-limit", type=float, default=600, help="seconds for each run")
    args = parser.parse_args(argv)
    sessions = max(1, min(args.sessions, MAX_SESSIONS))
    clients = list(CLIENTS) if args.client == "both" else [args.client]
    if "chromium" in clients and not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (sudo apt-get install -y chromium).")
    failed = False
    for client in clients:
        with tempfile.TemporaryDirectory(prefix="loopscope-load-runs-") as runs:
            os.environ["LOOPSCOPE_RUNS"] = runs  # the server's saved runs go here, not into the project
            with serve_app() as url:  # a new server for each client: one run's memory is not the next one's
                asyncio.run(warm_up(url))
                _, errors = measure(url, client, sessions, args)
                failed = failed or bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
