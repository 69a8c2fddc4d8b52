"""The app in a real browser, for the browser tests and the benchmarks: `streamlit run app.py` on
127.0.0.1, and Debian's chromium driven by Playwright (nothing is downloaded at run time)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# The page's script has finished its run, and every element it sent is drawn: Streamlit loads an element's code
# when the first of its kind comes and shows a skeleton in its place until then, so a page can be idle with its
# buttons not there yet (a click or a key then finds another button, or none).
IDLE = "body:not(:has([data-testid='stSkeleton'])) [data-test-script-state='notRunning']"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(port: int | None = None, started: list | None = None, app: Path | str = ROOT / "app.py",
              env: dict[str, str] | None = None):
    """`streamlit run app.py` (or another script) on 127.0.0.1; yields its URL and stops it (only it) afterwards.

    `env`: variables set for the server only, over this process's environment.

    `started` receives the server's process, for a caller that kills it itself. Without a `port`, a free one is
    picked; another process may take it before Streamlit binds it, so the server counts as up only once it says
    it is serving (after its bind) and is still running, and a server that found its port taken is started again
    on another.
    """
    for attempt in range(3):
        chosen = port or free_port()
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(chosen), "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
        )
        try:
            said = _serving(proc, log, chosen)
            if said is None:
                break
            if port is not None or attempt == 2 or "is not available" not in said:
                raise RuntimeError(f"streamlit exited: {said[-2000:]}")
        except BaseException:
            _stop(proc, log)
            raise
        _stop(proc, log)  # its port was taken: another one
    if started is not None:
        started.append(proc)
    try:
        yield f"http://127.0.0.1:{chosen}"
    finally:
        _stop(proc, log)


def _serving(proc: subprocess.Popen, log, port: int) -> str | None:
    """None once the server says it is serving and takes connections; what it said if it exited first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log.seek(0)
        said = log.read().decode(errors="replace")
        if proc.poll() is not None:
            return said
        if "You can now view" in said:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                if proc.poll() is None:
                    return None
        time.sleep(0.05)
    raise RuntimeError("streamlit did not start within 60 s")


def _stop(proc: subprocess.Popen, log) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def launch(playwright):
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing. Install Debian's chromium: sudo apt-get install -y chromium "
                         "(or `make chromium`).")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


# The page shows the step as the server drew it: its run is over, and no step the browser showed ahead of the
# server's answer (pages/views/ahead.py) is left on it.
DRAWN = f"document.querySelector(\"{IDLE}\") !== null && document.querySelector('[data-ahead]') === null"


def wait_for_status(page, prefix: str, timeout: float = 60_000) -> None:
    """Until the page's heading starts with `prefix` ("Step 3 of 9"), as the server drew it."""
    page.wait_for_function(
        f"""(prefix) => [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith(prefix))
                        && {DRAWN}""", arg=prefix, timeout=timeout)


def wait_idle(page, timeout: float = 120_000) -> None:
    """Until the page's script has finished its run."""
    page.wait_for_selector(IDLE, timeout=timeout)


# Resolves once the fonts are loaded and the browser has painted twice more: what the page has drawn is laid out
# (and a scroll asked for in the next frame has happened).
PAINTED = """() => document.fonts.ready.then(() => new Promise(done =>
    requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))"""


def settled(page, timeout: float = 60_000) -> None:
    """Until the page's script has finished its run and the browser has laid out and painted what it drew."""
    page.wait_for_selector(IDLE, timeout=timeout)
    page.evaluate(PAINTED)


def click_until(page, button: str, shown: str | None = None, tries: int = 3, timeout: float = 60_000, *,
                status: str | None = None) -> None:
    """Click `button` (a selector) on a settled page until `shown` (a selector) is there, or its heading starts
    with `status` ("Step 3 of 3") as the server drew it.

    A click that lands while the page is still re-running can be lost, as it can for a person, who clicks again:
    so does a test, at most `tries` times, each waiting `timeout` for what the click shows (a teacher's Step while
    a student's arrival wakes the teacher's page, a student's Break).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if status is None:
        there = lambda: page.locator(shown).count() > 0  # noqa: E731
        wait = lambda ms: page.wait_for_selector(shown, timeout=ms)  # noqa: E731
    else:
        there = lambda: any(h.startswith(status) for h in page.locator("h3").all_inner_texts())  # noqa: E731
        wait = lambda ms: wait_for_status(page, status, timeout=ms)  # noqa: E731
    for attempt in range(tries):
        settled(page)
        if there():
            return
        page.locator(button).click()
        try:
            wait(timeout / tries)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise


def resume_saved_run(page, listed: str, resumed: str, tries: int = 3) -> None:
    """Open Saved runs (labelled `listed`) and click Resume until the page says `resumed`.

    A click that lands while the page is still re-running, or while the opened
    list still grows under the pointer, can be lost, as it can for a person, who
    clicks again: so does a test, at most `tries` times.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        settled(page)
        resume = page.get_by_role("button", name="Resume", exact=False).first
        if not resume.is_visible():
            page.get_by_text(listed).first.click()  # open the expander
        resume.click()
        try:
            page.get_by_text(resumed).first.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            if attempt == tries - 1:
                raise
