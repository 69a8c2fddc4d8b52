"""Shared fixtures: a fake Anthropic-compatible server on 127.0.0.1, workspaces for the bash tool, and the browser
tests' app server and Chromium."""

import contextlib
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fake_server import FakeAnthropic  # noqa: E402


def pytest_configure(config):
    from tests.tiers import TIERS

    known = {line.split(":")[0].strip() for line in config.getini("markers")}  # pytest.ini's own say more
    for name, meaning in TIERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {meaning}")


def pytest_collection_finish(session):
    """What the collection imported (the SDKs, Streamlit, pandas, the app's every module: most of a test process's
    objects) lives as long as the process: the cyclic collector is told not to walk it again at each full pass
    (gc.freeze), and to pass over the young less often. The collector took 12.1 core-seconds of the three processes
    of a run of the fast tier (timed with gc.callbacks), 8.6 after."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


# The files that keep a test process busiest (`bench/suite.py --top 20` prints each file's core-seconds and wall
# seconds, its waits included), longest first. `make test` gives each process a whole file at a time, in the order
# collected: these start first, so that no process is left alone with a long file at the end while the others
# stand idle. A file missing here only starts later. The hardening files and the class's mostly wait (for a
# command's timeout, a heartbeat): each comes between files that keep the cores busy, so that the three processes
# are not all waiting at once on two cores (in `make test-fast`, whose first two files are a process's while the
# other two run learners' files: 12 core-seconds less idle in its first minute, measured with /proc/stat).
DEAREST = ("test_projector.py", "test_hardening_sandbox.py", "test_yours_sandbox.py", "test_class_replicas.py",
           "test_yours_learners.py", "test_browser_yours.py", "test_browser_class.py", "test_browser_yours_presenter.py",
           "test_yours_lines.py", "test_browser.py", "test_yours_cli.py", "test_hardening_caps.py",
           "test_hardening_commands.py", "test_app_ahead.py", "test_browser_ahead.py", "test_hardening_probes.py",
           "test_hardening_fuzz.py", "test_browser_complete.py", "test_runs_server_killed.py",
           "test_sessions_browser.py", "test_hardening_escape.py", "test_browser_diagram.py", "test_engine_bash.py",
           "test_browser_sessions_folder.py", "test_browser_compare.py", "test_browser_predict.py",
           "test_runs_store.py", "test_import_errors.py", "test_browser_threads.py", "test_app_i18n.py",
           "test_hardening_files.py", "test_browser_lang.py")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """Each test marked by what it uses (tests/tiers.py): `-m "not browser"` and the like need nothing of a test.
    The dearest files first (DEAREST), each file's tests in their own order. Then, once `-m` has chosen, the share
    of each parametrized test's cases LOOPSCOPE_CASES asks for (tests/searches.py; all of them unless it is set)."""
    from tests.searches import drawn
    from tests.tiers import tiers_of

    for item in items:
        for tier in sorted(tiers_of(item)):
            item.add_marker(tier)
    rank = {name: i for i, name in enumerate(DEAREST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(DEAREST)))  # stable: the rest keep their order
    yield  # pytest's own choice by -m and -k
    kept, left_out = drawn(items)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


@pytest.fixture(autouse=True, scope="session")
def runs_folder(tmp_path_factory):
    """Saved runs go to a temporary folder, never the project's runs/ (the app reads LOOPSCOPE_RUNS)."""
    import os

    folder = tmp_path_factory.mktemp("runs")
    before = os.environ.get("LOOPSCOPE_RUNS")
    os.environ["LOOPSCOPE_RUNS"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("LOOPSCOPE_RUNS", None)
    else:
        os.environ["LOOPSCOPE_RUNS"] = before


def _set_for_the_session(name: str, value: str):
    """A session fixture's body: the environment variable `name` is `value` until the session ends, then as it was
    (the servers and commands the tests start inherit it)."""
    before = os.environ.get(name)
    os.environ[name] = value
    yield
    if before is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before


@pytest.fixture(autouse=True, scope="session")
def short_waits():
    """The complete loop's retry waits (1 s × 2^k and more) scaled down: the `overloaded` scenario would wait
    about 8 s a run. A test that needs real waits sets LOOPSCOPE_WAIT_SCALE itself (the browser test's server)."""
    from loop.engine.waits import SCALE_VARIABLE

    yield from _set_for_the_session(SCALE_VARIABLE, "0.02")


@pytest.fixture(autouse=True, scope="session")
def long_command_timeouts():
    """A command may run three times its timeout (LOOPSCOPE_TIMEOUT_SCALE, loop/tools/bash.py): on a loaded machine
    (three test processes on two cores, and more beside them) a command of a few milliseconds can take seconds to
    start, and a test whose command should end would fail on a timeout meant for a learner's idle machine. What
    the command is told and shows is still its own timeout ("Timeout (1 s)"); the servers the tests start
    inherit the scale."""
    from loop.tools.bash import TIMEOUT_SCALE_VARIABLE

    yield from _set_for_the_session(TIMEOUT_SCALE_VARIABLE, "3")


@pytest.fixture(autouse=True, scope="session")
def apps_prepared_once():
    """What `streamlit run` does once for all its sessions, each AppTest did for itself, at every run: look for
    Streamlit components in the metadata of every installed package (about 0.05 s of CPU), and compile the app's
    scripts with Streamlit's magic (an AST pass, about as much). The packages and the scripts do not change during a
    test run, so both are done once a test process, as the server does them."""
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test

    scan = manifest_scanner.scan_component_manifests
    found: list = []

    def once(*args, **kwargs):
        if not found:
            found.append(scan(*args, **kwargs))
        return list(found[0])

    compiled = ScriptCache()  # by each script's path: AppTest.from_function's scripts have paths of their own
    manifest_scanner.scan_component_manifests = once
    app_test.ScriptCache = lambda: compiled
    yield
    manifest_scanner.scan_component_manifests = scan
    app_test.ScriptCache = ScriptCache


@pytest.fixture(autouse=True)
def no_learner_child_left():
    """A test that ran a learner's loop (Your loop starts a child ahead of the next Run) leaves no child, nor its
    step's cgroup, to the tests after it: they check that nothing of theirs is left."""
    yield
    sandboxed = sys.modules.get("loop.yours.sandboxed")
    if sandboxed is not None:
        sandboxed.cool()


@pytest.fixture
def no_child_ahead(monkeypatch):
    """Your loop starts a learner's child ahead of Run when it opens (a second of CPU, the SDK's import, in the
    sandbox). A test that makes its runs in this process (tests/learner.py), or none, would only end it unused."""
    from pages.views import yours

    monkeypatch.setattr(yours, "warm_up", lambda: None)


@pytest.fixture
def fake_api():
    """A running fake Anthropic server; `fake_api.url` is its base URL."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def no_key_in_environment(monkeypatch):
    """No key or base URL from the machine's environment: the test gives the page its own."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _given_folder() -> Path:
    """A folder under /tmp that an operator readied for commands: as root, given to `nobody` (uid 65534).

    Loopscope changes no folder it is given, so the test does what docs/security.md asks of a user.
    """
    from loop.tools.workspace import sandbox_user

    folder = Path(tempfile.mkdtemp(prefix="loopscope-test-ws-"))
    if os.geteuid() == 0:
        os.chown(folder, *sandbox_user())
    return folder


@pytest.fixture
def shared():
    """A workspace the user gives: a folder under /tmp that commands (as `nobody`, when root) may write."""
    folder = _given_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["made", "given"])
def workspace(request):
    """Each test twice: in a workspace Loopscope makes for a run (as root, a tmpfs under a folder only root may
    list), and in a folder the user gives (on disk, under /tmp)."""
    if request.param == "made":
        from loop.tools import Workspace

        with Workspace.make() as made:
            yield made
        return
    folder = _given_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def live_with(tag: str) -> list[int]:
    """Live processes (zombies are dead: PID 1 here may reap late) whose command line or environment holds `tag`.

    A command's own pids mean nothing outside its PID namespace, so what it started is found by a tag it
    carries: an argument (`sleep {tag}`) or a variable (`export LOOPSCOPE_TEST_TAG={tag}`).
    """
    found = []
    needle = tag.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{name}/cmdline", "rb") as f:
                held = needle in f.read()
            if not held:
                with open(f"/proc/{name}/environ", "rb") as f:
                    held = needle in f.read()
        except (OSError, IndexError):
            continue
        if held and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def settle(tag: str, seconds: float = 2.0) -> list[int]:
    """What still carries `tag` after giving SIGKILL a moment to land."""
    import time

    deadline = time.monotonic() + seconds
    while (left := live_with(tag)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@pytest.fixture
def tag():
    """A string no other process holds (also a valid `sleep` argument); whatever holds it after the test is killed."""
    import secrets

    value = f"313.7{secrets.randbelow(10**6):06d}"
    yield value
    for pid in live_with(value):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


@pytest.fixture
def closed_port():
    """A loopback port nothing listens on, for as long as the test runs: bound here and never listened on, so a
    connection to it is refused (no other process can take it meanwhile; port 9 may be open on some machines)."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


# -- the browser tests: one app server and one Chromium for all of them (each test opens its own browser context) --

@pytest.fixture(scope="session")
def app_server(runs_folder, short_waits):
    """One `streamlit run app.py` for every browser test of this process (a pytest-xdist worker starts its own):
    `(url, process)`. It inherits the session's environment: saved runs in the temporary folder, waits scaled down.
    A test that needs a server with another environment starts its own with `serve_app`."""
    from tests.browser import serve_app

    started = []
    with serve_app(started=started) as address:
        yield address, started[0]


class _SharedChromium:
    """Debian's Chromium, launched on first use and kept for the rest of the session.

    A sync Playwright marks its asyncio loop as this thread's running loop between its calls, and `asyncio.run` or
    another `sync_playwright()` refuses to start under a running loop. So for a test that does not ask for this
    browser the mark is set aside and put back after (`aside`): the browser stays open, idle, and the next browser
    test finds it with its kept contexts' caches warm. (Stopping it instead cost a launch and a cold context each
    time the tests went from a browser test to another and back: 3-4 s of the machine's CPU each time.)"""

    def __init__(self) -> None:
        self.playwright = None
        self.browser = None
        self.loop = None  # Playwright's loop while it is set aside for a test that does not use this browser
        self.kept: list = []  # cleared contexts for the next tests
        self.sizes: dict = {}  # each context's own viewport, as it was made
        self.origins: dict = {}  # each context's origins: where it may have stored something

    @contextlib.contextmanager
    def aside(self):
        """No running loop in this thread while the block runs (a test's own `asyncio.run`, its own Playwright)."""
        import asyncio

        self.back()
        self.loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        try:
            yield
        finally:
            self.back()

    def back(self) -> None:
        """Playwright's loop marked running again, as its next call expects (see `aside`)."""
        import asyncio

        if self.loop is not None:
            asyncio.events._set_running_loop(self.loop)
            self.loop = None

    def get(self):
        from playwright.sync_api import sync_playwright

        from tests.browser import CHROMIUM, launch

        self.back()
        if not Path(CHROMIUM).exists():
            pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium. Install it with "
                        "`sudo apt-get install -y chromium` (or `make chromium`), then run the tests again.")
        if self.browser is None or not self.browser.is_connected():
            self.stop()
            self.playwright = sync_playwright().start()
            self.browser = launch(self.playwright)
        return self.browser

    def context(self, width: int, height: int, any_size: bool = False):
        """A browser context as a new browser has one: no cookies, no storage, no permissions. One a test before
        used, cleared (`keep`), when there is one: the app's scripts and fonts are then already in its cache. A new
        context fetches and compiles Streamlit's scripts again: about 2 s of the machine's CPU a page, measured.
        Its pages are `width`×`height` (`any_size`: whatever size it was made with; `page` sets each page's)."""
        self.back()
        if self.browser is not None and self.browser.is_connected():
            fits = [c for c in self.kept if self.sizes.get(c) == (width, height)]
            if fits or (any_size and self.kept):
                context = (fits or self.kept)[-1]
                self.kept.remove(context)
                return context
        context = self.get().new_context(viewport={"width": width, "height": height})
        self.sizes[context] = (width, height)
        origins = self.origins[context] = set()
        context.on("request", lambda request: origins.add(_origin(request.url)))
        return context

    def page(self, width: int, height: int):
        """A page of `width`×`height` in a context of `context`'s (any kept one: a test's page is sized before it
        opens anything, so one context serves every size, and fewer are made cold)."""
        context = self.context(width, height, any_size=True)
        page = context.new_page()
        if self.sizes.get(context) != (width, height):
            page.set_viewport_size({"width": width, "height": height})
        return context, page

    def keep(self, context, width: int = 0, height: int = 0) -> None:
        """After a test: the context's pages closed, and its cookies, permissions and the storage of every origin it
        reached (localStorage, IndexedDB, …) cleared, as a new browser has them; its cache of scripts is kept."""
        self.back()
        try:
            page = context.pages[0] if context.pages else context.new_page()
            cdp = context.new_cdp_session(page)
            for origin in filter(None, self.origins.get(context, ())):
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            cdp.detach()
            for page in context.pages:
                page.close()
            context.clear_cookies()
            context.clear_permissions()
        except Exception:  # a context the test broke (its browser gone): not kept
            self.origins.pop(context, None)
            self.sizes.pop(context, None)
            with contextlib.suppress(Exception):
                context.close()
            return
        self.origins[context].clear()
        self.kept.append(context)

    def stop(self) -> None:
        self.back()
        self.kept, self.sizes, self.origins = [], {}, {}
        browser, playwright, self.browser, self.playwright = self.browser, self.playwright, None, None
        if browser is not None:
            with contextlib.suppress(Exception):
                browser.close()
        if playwright is not None:
            playwright.stop()


_chromium = _SharedChromium()


@pytest.fixture
def chromium():
    """The shared Chromium (see _SharedChromium); open pages with `new_page`, each in a context of its own."""
    return _chromium.get()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test that does not use Chromium (it is not in the `browser` tier, tests/tiers.py) runs with the shared
    Chromium's loop set aside (`_SharedChromium.aside`)."""
    if _chromium.playwright is None or item.get_closest_marker("browser"):
        yield
        return
    with _chromium.aside():
        yield


def pytest_sessionfinish(session):
    _chromium.stop()


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""


@pytest.fixture
def new_page(chromium):
    """`new_page(width, height)`: a page in a browser context of its own, as another browser has one: no cookies,
    no storage, its own connection. The context is cleared after the test and kept for the next (`_SharedChromium`)."""
    contexts = []

    def open_page(width: int = 1600, height: int = 1000):
        context, page = _chromium.page(width, height)
        contexts.append(context)
        return page

    yield open_page
    for context in contexts:
        _chromium.keep(context)


@pytest.fixture(scope="module")
def module_tab():
    """One page at 1280×800 for all the tests of a module, in a browser context of its own: each look opens a URL in
    it (a new session of the app), with the app's scripts and fonts already in the browser's cache. For tests that
    only look: its cookies and storage are shared by the module's tests, as one browser's are. (A context of
    `_SharedChromium`'s, cleared after the module.)"""
    context, page = _chromium.page(1280, 800)
    yield page
    _chromium.keep(context)

