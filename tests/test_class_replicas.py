"""A class on several replicas behind HAProxy (deploy/): sticky, private stats, a replica killed mid-class.

Each class is deploy/classroom.py's: real `streamlit run` replicas sharing one
runs store, and Debian's haproxy with deploy/haproxy.cfg in front, on free
loopback ports. The students are tests/wire.py's protocol clients; each keeps
its cookies as a browser does (the balancer's sticky cookie and the page's
browser id) and sends its own User-Agent, by which the balancer's log names it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from tests.wire import Follower, Wire
from tests.postgres import postgres_server  # noqa: F401  (a fixture)
from tests.browser import free_port
from deploy.classroom import COOKIE, CONFIG, ROOT, Classroom, haproxy
from loop.files import browser_id
from loop.files.runs import RunsStore
from tests.fake_server import FakeAnthropic
from tests.test_runs_server_killed import STAGES, click, expected, plan

END = (10, 10)  # two-tools ends at its tenth step


def listening(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on 127.0.0.1:`port`: the kernel's own tables say who bound a
    port, where an answer on it could come from any process that took it first."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()  # sl, local address, remote address, state (0A: LISTEN), ..., inode
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                    return True
    return False


def _said_taken(logs: list[Path]) -> bool:
    """Whether a replica (Streamlit) or the balancer (HAProxy) said in its log that its port was taken."""
    said = "".join(log.read_text(errors="replace") for log in logs if log.exists())
    return "is not available" in said or "Address already in use" in said or "cannot bind" in said


def _taken(room: Classroom) -> bool:
    """Whether a port of `room` went to another process between being picked free and being bound."""
    if _said_taken([r.log for r in room.replicas] + [room.balancer_log]):
        return True
    replicas = all(r.alive() and listening(r.process.pid, r.port) for r in room.replicas)
    balancer = room.balancer is not None and room.balancer.poll() is None and listening(room.balancer.pid, room.port)
    stats = not room.stats_password or (balancer and listening(room.balancer.pid, room.stats_port))
    return not (replicas and balancer and stats)


@contextlib.contextmanager
def classroom(n: int, folder: Path, **options):
    """A class of `n` replicas on free loopback ports, started, and stopped after. A port is picked free, then bound
    later by another process: one that was taken meanwhile is seen (the replica or the balancer exits, or another
    process holds the port) and the class is started again on other ports."""
    for attempt in range(3):
        ports = [free_port() for _ in range(n + 2)]
        room = Classroom(ports[1:-1], port=ports[0], host="127.0.0.1", folder=folder / f"class-{attempt}",
                         runs=folder / "runs", stats_port=ports[-1], **options)
        try:
            room.start()
        except RuntimeError:
            room.stop()
            if attempt == 2 or not _said_taken([r.log for r in room.replicas] + [room.balancer_log]):
                raise
            continue
        if not _taken(room):
            break
        room.stop()
        if attempt == 2:
            raise RuntimeError("the class's ports were taken by other processes three times")
    try:
        yield room
    finally:
        room.stop()


def by_student(room: Classroom, prefix: str) -> dict[str, list]:
    """The balancer's logged requests of each student whose User-Agent starts with `prefix`."""
    found: dict[str, list] = {}
    for request in room.requests():
        if request.agent.startswith(prefix):
            found.setdefault(request.agent, []).append(request)
    return found


def get(url: str, auth: tuple[str, str] | None = None) -> tuple[int | None, str]:
    """(status, body) of GET `url`; (None, "") when nothing answers."""
    request = urllib.request.Request(url)
    if auth:
        import base64

        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError:
        return None, ""


# -- one class of three replicas: stickiness, the stats page, a key that never reaches the shared folder --
PASSWORD = secrets.token_urlsafe(12)
CANARY = "sk-ant-api03-CLASSCANARY" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def fake():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="module")
def three(tmp_path_factory, fake):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["ANTHROPIC_BASE_URL"] = fake.url  # the sidebar's default base URL: the fake server; no key anywhere
    with classroom(3, tmp_path_factory.mktemp("class3"), stats_password=PASSWORD, env=env) as room:
        yield room


def test_every_request_of_a_student_reaches_one_replica_and_students_are_spread(three):
    async def student(n: int) -> Wire:
        agent = f"sticky student {n}"
        wire = Wire(three.url, agent=agent)
        await wire.open()
        for _ in range(3):
            await wire.rerun("live-step")
        await wire.close()
        again = Wire(three.url, wire.cookies, agent=agent)  # a reload: the same browser, its cookies sent
        await again.open()
        assert again.shows("Saved runs · 1"), "the reloaded page does not offer the student's run"
        for _ in range(2):
            await again.rerun("live-step")
        await again.close()
        assert not wire.errors and not again.errors, (wire.errors, again.errors)
        return again

    async def class_of_six() -> list[Wire]:
        return await asyncio.wait_for(asyncio.gather(*(student(n) for n in range(6))), timeout=180)

    wires = asyncio.run(class_of_six())
    logged = by_student(three, "sticky student")
    assert len(logged) == 6
    on = {}
    for agent, requests in logged.items():
        # the page, /_stcore/health, /_stcore/host-config and the WebSocket, twice: all on one replica
        assert len(requests) == 8, [(r.method, r.path) for r in requests]
        assert [r.path for r in requests].count("/_stcore/stream") == 2
        assert {r.status for r in requests} <= {200, 101}
        servers = {r.server for r in requests}
        assert len(servers) == 1, f"{agent}'s requests went to {servers}"
        on[agent] = servers.pop()
    assert set(on.values()) == {"r1", "r2", "r3"}, f"six new browsers were not spread over the replicas: {on}"
    for n, wire in enumerate(wires):  # the cookie each kept names the replica the log says it used
        assert wire.cookies[COOKIE] == on[f"sticky student {n}"]


def test_the_stats_page_needs_its_password_and_the_class_address_shows_none(three):
    assert get(three.stats_url)[0] == 401
    assert get(three.stats_url, ("loopscope", "wrong" + PASSWORD))[0] == 401
    assert get(three.stats_url, ("admin", PASSWORD))[0] == 401
    status, page = get(three.stats_url, ("loopscope", PASSWORD))
    assert status == 200 and "Statistics Report" in page
    deadline = time.monotonic() + 20
    while True:  # each replica checked at least once ("UP 1/3" before its first check)
        rows = three.stats()
        states = [rows[name]["status"] for name in ("r1", "r2", "r3")]
        if states == ["UP"] * 3 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert states == ["UP"] * 3 and {rows[n]["check_status"] for n in ("r1", "r2", "r3")} == {"L7OK"}
    for path in ("/haproxy?stats", "/stats", "/;csv", "/haproxy-status"):  # HAProxy's usual stats addresses
        status, page = get(three.url + path)
        assert "Statistics Report" not in page and "pxname" not in page, path


def test_a_replicas_commands_run_in_its_sandbox_and_the_shared_store_is_private(three):
    """Each replica is the app as `make run` serves it: its commands run as docs/security.md says."""
    import pwd
    import stat

    async def ask() -> Wire:
        wire = Wire(three.url, agent="sandbox student")
        await wire.open()
        await wire.rerun("set-scenario", string_value="A task of my own…")
        await wire.rerun("set-task", string_value="Which user am I?")
        await wire.rerun("new-run")
        for _ in range(12):
            await wire.rerun("live-step")
            if wire.shows("The loop has ended"):
                break
        assert not wire.errors, wire.errors
        await wire.close()
        return wire

    wire = asyncio.run(asyncio.wait_for(ask(), timeout=120))
    user = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name  # as root: never root
    # The history is sent as HTML: the answer's Markdown rendered, its indented output a code block.
    assert wire.shows("I ran <code>whoami</code>") and wire.shows(f"<pre><code>{user}\n</code></pre>"), \
        "the command's output is not the sandbox's user"
    assert stat.S_IMODE(three.runs.stat().st_mode) == 0o700  # no command (nobody) can list or read the runs
    for path in three.runs.iterdir():
        assert path.is_dir() or stat.S_IMODE(path.stat().st_mode) == 0o600, path


async def set_up_a_real_model(wire: Wire) -> None:
    """What a student does in the sidebar: an Anthropic model, a key typed in, no approval gate, New run."""
    await wire.rerun("set-model", string_value="An Anthropic model")
    await wire.rerun("set-api-key", string_value=CANARY)
    await wire.rerun("set-approve", bool_value=False)
    await wire.rerun("new-run")
    assert not wire.errors, wire.errors


def test_a_typed_key_reaches_the_model_from_each_replica_and_never_the_shared_folder(three, fake):
    """A student on a real model (the fake server) whose replica dies types the key again on the next one."""
    agent = "key student"

    async def before() -> Wire:
        wire = Wire(three.url, agent=agent)
        await wire.open()
        await set_up_a_real_model(wire)
        for _ in range(4):
            await wire.rerun("live-step")
        assert wire.status() == (4, 4), wire.status()
        return wire

    wire = asyncio.run(asyncio.wait_for(before(), timeout=120))
    used = len(fake.headers)
    assert used >= 1 and all(CANARY in h.get("authorization", "") + h.get("x-api-key", "") for h in fake.headers)
    first = three.replica(wire.cookies[COOKIE])
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()

    async def after() -> Wire:
        with pytest.raises(Exception):  # the page's connection died with its replica
            await wire.rerun("live-step")
        again = Wire(three.url, wire.cookies, agent=agent, query=wire.query)
        await again.open()
        assert again.cookies[COOKIE] != first.name  # the balancer moved it
        assert again.shows("Saved runs · 1") and again.shows("API key for this run")  # the key was not kept
        await again.rerun("resume-api-key", string_value=CANARY)
        await again.rerun("resume-run")
        assert again.status() == (4, 4), again.status()
        while not again.shows("The loop has ended"):
            await again.rerun("live-step")
        assert not again.errors, again.errors
        await again.close()
        return again

    again = asyncio.run(asyncio.wait_for(after(), timeout=120))
    assert len(fake.headers) > used
    assert all(CANARY in h.get("authorization", "") + h.get("x-api-key", "") for h in fake.headers[used:])
    moved = {r.server for r in by_student(three, agent)[agent][-4:]}
    assert moved == {again.cookies[COOKIE]}
    written = [p for folder in (three.runs, three.folder) for p in folder.rglob("*") if p.is_file()]
    assert any(p.name == "runs.sqlite3" for p in written) and any(p.name == "balancer.log" for p in written)
    holding = [str(p) for p in written if CANARY[-16:].encode() in p.read_bytes()]  # the key, or its random part
    assert holding == [], "the key was written"


def test_a_real_browser_whose_replica_dies_reconnects_to_a_live_one_and_resumes(three, new_page):
    """Streamlit's own page, in Chromium: it reconnects through the balancer by itself; Resume brings the run back."""
    from tests.browser import IDLE, resume_saved_run

    page = new_page(1400, 900)  # a browser of its own (the shared Chromium's): no cookie of the balancer's yet
    page.goto(three.url, timeout=120_000)
    page.locator("h3", has_text="Step 0 of 0").first.wait_for(timeout=120_000)
    for k in (1, 2, 3):
        page.wait_for_selector(IDLE, timeout=60_000)
        page.locator(".st-key-live-step button").first.click()
        page.locator("h3", has_text=f"Step {k} of {k}").first.wait_for(timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    first = three.replica({c["name"]: c["value"] for c in page.context.cookies()}[COOKIE])
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    # No reload: the page notices, reconnects, and the new replica offers the saved run.
    page.get_by_text("Saved runs · 1").first.wait_for(timeout=120_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    now = {c["name"]: c["value"] for c in page.context.cookies()}[COOKIE]
    assert now != first.name and three.replica(now).alive()
    resume_saved_run(page, "Saved runs · 1", "Resumed: 3 steps, at step 3.")
    page.locator("h3", has_text="Step 3 of 3").first.wait_for(timeout=60_000)
    assert not page.locator("[data-testid='stException']").count()


# -- a replica killed with SIGKILL while four students step on it --
@dataclass
class Student:
    agent: str
    target: int  # Step clicks before the end of its plan (the kill may cut them short)
    back: bool  # goes Back once, before its last step
    think: float  # seconds between two clicks
    wire: Wire | None = None
    cookies: dict = field(default_factory=dict)
    query: str = ""  # the address bar: the page follows the cursor (?scenario=…&step=…)
    seen: tuple[int, int] | None = None  # the last "Step k of n" the page was sent
    pending: str | None = None  # the click under way when its replica died
    cut: bool = False  # its connection died with its replica
    clicks_after_kill: int = 0


async def step(student: Student, killed: asyncio.Event, clicks: list) -> None:
    wire = student.wire
    try:
        for action in plan(student):
            await click(student, wire, action)
            clicks.append(student.agent)
            student.clicks_after_kill += killed.is_set()
        await wire.close()
    except Exception:  # its replica died under this click
        student.cut = True
    student.cookies, student.query = dict(wire.cookies), wire.query


async def come_back(url: str, student: Student) -> Wire:
    """The page reconnects (its address bar, its cookies) and the student presses Resume, then steps to the end."""
    wire = Wire(url, student.cookies, agent=student.agent, query=student.query)
    await wire.open()
    assert "step=" in student.query  # the link rebuilds the scenario at that step; the saved run is offered beside
    assert wire.shows("Saved runs · 1"), f"{student.agent}: its run is not offered"
    await wire.rerun("resume-run")
    assert not wire.errors, wire.errors
    assert wire.status() in expected(student), (student, wire.status())
    while wire.status() != END:
        await wire.rerun("live-step")
    assert wire.shows("The loop has ended") and not wire.errors, wire.errors
    await wire.close()
    return wire


def test_a_replica_killed_mid_class_loses_no_step_and_no_other_student_sees_an_error(tmp_path):
    with classroom(2, tmp_path) as room:  # and no stats password
        stats_port = room.stats_port
        # Four on each replica: the students arrive one by one, and the balancer gives each new
        # browser the replica with fewer open pages.
        plans = [(3, True, 0.02), (5, True, 0.05), (7, False, 0.1), (9, True, 0.2)]

        async def lesson() -> tuple[list[Student], list[Student], str]:
            students = []
            for n in range(8):
                student = Student(f"class student {n}", 10, False, 0.4)
                student.wire = Wire(room.url, agent=student.agent)
                await student.wire.open()
                assert student.wire.shows("Step 0 of 0")
                students.append(student)
            on = {s.agent: s.wire.cookies[COOKIE] for s in students}
            assert sorted(on.values()) == ["r1"] * 4 + ["r2"] * 4, on
            victim = "r1"
            doomed = [s for s in students if on[s.agent] == victim]
            others = [s for s in students if on[s.agent] != victim]
            for student, (target, back, think) in zip(doomed, plans):
                student.target, student.back, student.think = target, back, think
            killed, clicks = asyncio.Event(), []
            tasks = [asyncio.create_task(step(s, killed, clicks)) for s in students]
            while sum(a in {s.agent for s in doomed} for a in clicks) < 12:  # mid-lesson on the doomed replica
                await asyncio.sleep(0.01)
            process = room.replica(victim).process
            os.kill(process.pid, signal.SIGKILL)
            await asyncio.to_thread(process.wait)
            killed.set()
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
            assert any(s.pending for s in doomed), "the kill landed between clicks: nobody was cut off"
            # Their pages reconnect through the balancer, all at once, as the class's browsers would.
            await asyncio.wait_for(asyncio.gather(*(come_back(room.url, s) for s in doomed)), timeout=180)
            return doomed, others, victim

        doomed, others, victim = asyncio.run(lesson())
        live = "r2"
        assert room.replica(victim).process.returncode == -signal.SIGKILL
        for student in others:  # the other replica's students stepped through the kill and on to the end
            assert not student.cut and not student.wire.errors, (student.agent, student.wire.errors)
            assert student.seen == END and student.wire.shows("The loop has ended")
        assert sum(s.clicks_after_kill for s in others) > 0, "the other students had finished before the kill"
        logged = by_student(room, "class student")
        for student in others:
            assert {r.server for r in logged[student.agent]} == {live}
        for student in doomed:
            servers = [r.server for r in logged[student.agent]]
            assert servers[:4] == [victim] * 4  # its first page, on the replica that died
            back = servers[servers.index(live):]
            assert back and set(back) == {live}, servers  # after the kill: the live one only
        log = room.balancer_log.read_text()
        assert f"Server replicas/{victim} is DOWN" in log
        assert get(f"http://127.0.0.1:{stats_port}/")[0] is None  # no stats page without a password

    store = RunsStore(tmp_path / "runs")
    key = store.secret()
    for student in doomed + others:
        owner = browser_id.owner(browser_id.verify(key, student.cookies["loopscope_browser"]))
        [saved] = store.list(owner)
        trace, _ = store.load(owner, saved.id)
        assert [s.stage for s in trace.steps] == STAGES, student.agent
        assert trace.cursor == len(STAGES) - 1


# -- the configuration and the command line --
def test_the_configuration_is_valid_for_make_class_and_for_compose(tmp_path):
    # Two replicas here, two on a second machine (docs/deploy.md: `--remote` on the balancer's machine)
    room = Classroom([8501, 8502], folder=tmp_path, remote=["10.0.0.2:8501", "10.0.0.2:8502"])
    backend = tmp_path / "backend.cfg"
    backend.write_text(room.backend())
    assert room.backend().splitlines()[1:] == [
        "    server r1 127.0.0.1:8501 cookie r1", "    server r2 127.0.0.1:8502 cookie r2",
        "    server r3 10.0.0.2:8501 cookie r3", "    server r4 10.0.0.2:8502 cookie r4"]
    for second, env in ((backend, {}), (ROOT / "deploy" / "compose-backend.cfg", {}),
                        (backend, {"LOOPSCOPE_STATS_PASSWORD": "x"})):
        checked = subprocess.run([haproxy(), "-c", "-f", str(CONFIG), "-f", str(second)], capture_output=True,
                                 text=True, env={"PATH": os.environ["PATH"], **env})
        assert checked.returncode == 0 and "WARNING" not in checked.stderr + checked.stdout, checked.stderr


def test_the_balancer_limits_new_browsers_by_address_and_tells_the_replicas_the_address_it_saw(tmp_path):
    """deploy/haproxy.cfg's stick table: a WebSocket without the browser id's cookie is a new browser; past
    LOOPSCOPE_NEW_BROWSERS_A_MINUTE of them from one address the balancer answers 429. And what the replicas read as
    the browser's address (X-Forwarded-For) is the one the balancer saw, never one the browser sent."""
    import http.server
    import threading

    seen: list[str | None] = []

    class Replica(http.server.BaseHTTPRequestHandler):  # a stand-in: "ok" to everything, the header it was given kept
        def do_GET(self):
            if self.path.startswith("/_stcore/stream"):
                seen.append(self.headers.get("X-Forwarded-For"))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    replica = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Replica)
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    port = free_port()
    backend = tmp_path / "backend.cfg"
    backend.write_text(f"backend replicas\n    server r1 127.0.0.1:{replica.server_port} cookie r1\n")
    env = {"PATH": os.environ["PATH"], "LOOPSCOPE_BIND": f"127.0.0.1:{port}", "LOOPSCOPE_NEW_BROWSERS_A_MINUTE": "3"}
    balancer = subprocess.Popen([haproxy(), "-db", "-f", str(CONFIG), "-f", str(backend)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def status(path: str, **headers: str) -> int | None:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    try:
        deadline = time.monotonic() + 30
        while status("/") != 200:  # the balancer is up, and sends to the replica
            assert balancer.poll() is None and time.monotonic() < deadline, "the balancer did not start"
            time.sleep(0.1)
        new = [status("/_stcore/stream", **{"X-Forwarded-For": "203.0.113.9"}) for _ in range(4)]
        assert new == [200, 200, 200, 429]
        assert status("/_stcore/stream", Cookie="loopscope_browser=an-id") == 200  # a browser that has its id
        assert status("/") == status("/_stcore/health") == 200  # the page itself, and the rest, are not counted
        assert seen and set(seen) == {"127.0.0.1"}  # the address the balancer saw, not the one the browser said
    finally:
        balancer.terminate()
        balancer.wait(15)
        replica.shutdown()


def _session_of(pid: int) -> set[int]:
    """The processes of the session `pid` leads."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == pid:  # the session id
                found.add(int(entry))
    return found


def _consecutive_free_ports(n: int) -> int:
    import socket

    for _ in range(50):
        first = free_port()
        sockets = []
        try:
            for port in range(first, first + n):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return first
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free ports in a row")


def _children_named(pid: int, name: bytes) -> list[int]:
    """The children of `pid` whose command line holds `name`."""
    found = []
    for child in _session_of(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):  # a process that ended meanwhile
            if _parent(child) == pid and name in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
    return found


@contextlib.contextmanager
def launched_class(tmp_path: Path):
    """`python deploy/classroom.py --replicas 1` on free ports, as a teacher starts it: (the launcher, the lines it
    printed so far, its port). The ports are picked free and bound later by the launcher's processes: when another
    process took one meanwhile (the class says it could not start, or another process holds the port) the class
    is started again on other ports."""
    import threading

    for attempt in range(3):
        port = _consecutive_free_ports(2)  # the balancer's, and the replica's after it
        env = {**os.environ, "LOOPSCOPE_RUNS": str(tmp_path / "runs")}
        launcher = subprocess.Popen([sys.executable, str(ROOT / "deploy" / "classroom.py"), "--replicas", "1",
                                     "--port", str(port), "--host", "127.0.0.1",
                                     "--folder", str(tmp_path / f"class-{attempt}")],
                                    cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)  # its own process group: Ctrl-C goes to the group
        lines: list[str] = []
        reader = threading.Thread(target=lambda lines=lines, out=launcher.stdout: lines.extend(out), daemon=True)
        reader.start()
        deadline = time.monotonic() + 120
        while not any("Ctrl-C stops them all" in line for line in lines) and launcher.poll() is None:
            assert time.monotonic() < deadline, "timed out: " + "".join(lines)
            time.sleep(0.05)
        running = launcher.poll() is None
        if running and any(listening(p, port + 1) for p in _children_named(launcher.pid, b"streamlit")) \
                and any(listening(p, port) for p in _children_named(launcher.pid, b"haproxy")):
            try:
                yield launcher, lines, port, reader
            finally:
                if launcher.poll() is None:
                    os.killpg(launcher.pid, signal.SIGKILL)
                    launcher.wait()
            return
        if running:
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        reader.join(10)
        said = "".join(lines)  # HAProxy's warnings go to the launcher's terminal, the replica's output to its log
        taken = running or _said_taken(list((tmp_path / f"class-{attempt}").glob("*.log"))) or \
            "Address already in use" in said or "cannot bind" in said
        if attempt == 2 or not taken:
            raise AssertionError("the class did not start: " + said)


def test_make_class_restarts_a_dead_replica_and_ctrl_c_stops_everything(tmp_path):
    with launched_class(tmp_path) as (launcher, lines, port, reader):
        def wait_for(what, seconds: float = 120) -> None:
            deadline = time.monotonic() + seconds
            while not what():
                assert launcher.poll() is None, "".join(lines)
                assert time.monotonic() < deadline, "timed out: " + "".join(lines)
                time.sleep(0.05)

        health = f"http://127.0.0.1:{port}/_stcore/health"
        wait_for(lambda: any("Ctrl-C stops them all" in line for line in lines))  # started, and watching
        assert get(health)[0] == 200
        [replica] = _children_named(launcher.pid, b"streamlit")
        os.kill(replica, signal.SIGKILL)
        wait_for(lambda: any("starting it again" in line for line in lines), 30)
        wait_for(lambda: get(health)[0] == 200)  # started again, and back in the balancer
        os.killpg(launcher.pid, signal.SIGINT)  # Ctrl-C in the terminal
        assert launcher.wait(30) == 0, "".join(lines)
        reader.join(10)
        deadline = time.monotonic() + 10
        while _session_of(launcher.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _session_of(launcher.pid), "a process of the class outlived Ctrl-C"
        assert f"http://127.0.0.1:{port}" in "".join(lines)
        assert get(health)[0] is None


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_port_is_told_apart_by_the_process_that_listens_on_it_not_by_an_answer():
    # What the class's start relies on: a port another process took between being picked and being bound is
    # that process's, even when something answers on it.
    import socket

    with socket.socket() as ours:
        ours.bind(("127.0.0.1", 0))
        port = ours.getsockname()[1]
        assert not listening(os.getpid(), port)  # bound, not listening yet
        ours.listen()
        assert listening(os.getpid(), port)
        assert not listening(os.getppid(), port)


# -- a class across replicas: the teacher on one, a student on another, the student's replica killed mid-class --
async def follows_to(student: Follower, step: tuple[int, int]) -> None:
    """Take what the server sends the student's page (it is woken when the class moves) until it shows `step`."""
    try:
        await asyncio.wait_for(student.until(step), timeout=120)
    except asyncio.TimeoutError:
        raise AssertionError(f"{student.agent}'s page never showed step {step}; it showed {sorted(student.shown)}")


# On PostgreSQL, as replicas on several machines share a class. On SQLite: a class on one server is
# tests/test_browser_class.py's, two processes on one store file tests/test_classes.py's, and a replica killed
# under a browser the real browser's test above.
@pytest.mark.parametrize("store", ["postgres"])
def test_a_student_on_another_replica_follows_and_goes_on_following_after_its_replica_is_killed(
        store, tmp_path, request):
    env = dict(os.environ)
    env["LOOPSCOPE_DATABASE_URL"] = request.getfixturevalue("postgres_server").database()
    with classroom(2, tmp_path, env=env) as room:
        async def lesson() -> tuple[Wire, Follower, Follower]:
            teacher = Wire(room.url, {COOKIE: "r1"}, agent="class teacher")  # sticky cookies: the teacher on r1,
            await teacher.open()
            await teacher.rerun("present", bool_value=True)
            await teacher.rerun("live-step")
            await teacher.rerun("classroom-start")
            code = teacher.params["class"]
            student = Follower(room.url, code, agent="class follower", cookies={COOKIE: "r2"})  # the student on r2
            await student.open()
            assert (1, 1) in student.shown and f"class={code}" in student.query
            for k in (2, 3):
                await teacher.rerun("live-step")
                await follows_to(student, (k, k))
            assert "step=3" in student.query  # the address bar follows the class
            doomed = room.replica(student.cookies[COOKIE])
            assert doomed.name == "r2" and teacher.cookies[COOKIE] == "r1"
            doomed.process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(doomed.process.wait)
            with pytest.raises(ConnectionClosed):  # the page's connection died with its replica
                await asyncio.wait_for(student.until((99, 99)), timeout=60)
            await teacher.rerun("live-step")  # the class goes on meanwhile
            # The page reconnects through the balancer, with its cookies and its address bar.
            again = Follower(room.url, code, agent="class follower", cookies=student.cookies, query=student.query)
            await again.open()
            assert again.cookies[COOKIE] == "r1"  # the balancer sent it to the live replica
            assert (4, 4) in again.shown  # it lands where the class is now, not where it was cut off
            await teacher.rerun("live-step")
            await follows_to(again, (5, 5))
            await teacher.rerun("live-back")
            await follows_to(again, (4, 5))
            assert not (teacher.errors or student.errors or again.errors), (teacher.errors, again.errors)
            await teacher.close()
            await again.close()
            return teacher, student, again

        teacher, student, again = asyncio.run(asyncio.wait_for(lesson(), timeout=240))
        assert "step=4" in again.query
        logged = by_student(room, "class follower")["class follower"]
        servers = [r.server for r in logged]
        assert servers[:4] == ["r2"] * 4 and set(servers[4:]) == {"r1"}, servers
