"""A browser tab as Streamlit's server sees it, without drawing anything: the protocol client that tests
and bench/load.py use to act as students.

`Wire` speaks Streamlit's own WebSocket protocol (a click is the message the
page sends; the deltas streamed back are searched for what the page would
show); `drive_wire` sends N of them through the two-tools scenario at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time

AGENT = "loopscope-wire student"  # + the student's number: the User-Agent each wire student sends
WIDGETS = ("button", "radio", "checkbox", "text_input", "text_area", "selectbox", "number_input")  # the ones Wire can use by key
ENDED = "The loop has ended"


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


# -- one student whose browser is on another machine: Streamlit's own protocol --
class Wire:
    """One browser tab as the server sees it: a WebSocket speaking Streamlit's protobuf messages.

    It sends what the page sends on a click (a rerun with the button's trigger
    set, in the fragment the button is drawn in, the URL's query string and the
    page), reads the deltas the server streams back, and keeps the widget ids
    and the query string the server hands it, as the page does. Rendering is
    left out: that is the work each student's own machine does.

    It keeps cookies as a browser does and sends them with every request: the
    ones the server's answers set (`Set-Cookie`: a load balancer's sticky
    cookie, deploy/haproxy.cfg) and the one the page sets (the browser's id,
    handed out by a component whose script sets `document.cookie`). Pass
    `cookies` from an earlier Wire to come back as the same browser, and its
    `query` (the address bar's) to reconnect as the page does. Opening first
    loads the page and asks `/_stcore/health` and `/_stcore/host-config`, as
    the page does before it connects; `agent` is the User-Agent it sends.
    """

    def __init__(self, url: str, cookies: dict[str, str] | None = None, agent: str = "loopscope-wire",
                 query: str = ""):
        self.base, self.agent = url, agent
        self.url = url.replace("http", "ws", 1) + "/_stcore/stream"
        self.query, self.page, self.widgets, self.fragments = query, "", {}, {}
        self.cookies = dict(cookies or {})
        self.text: list[bytes] = []  # the raw deltas of the last run, searched for what the page would show
        self.errors: list[str] = []
        self.timers: dict[str, float] = {}  # fragment id: seconds between two of its reruns, as the page's timer
        self.early = False  # the last run finished early: a rerun (st.rerun) follows it
        self.sent = 0  # the messages sent to the server
        self.session_id = ""  # the server's session for this page (its first run's new_session says it)

    async def open(self) -> None:
        import websockets

        for path in ("/", "/_stcore/health", "/_stcore/host-config"):
            await asyncio.to_thread(self._get, path)
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None, ping_interval=None,
                                           additional_headers=self._cookie_header(), user_agent_header=self.agent)
        self._keep(self.ws.response.headers.get_all("Set-Cookie"))
        await self.rerun()

    def _get(self, path: str) -> None:
        import urllib.request

        request = urllib.request.Request(self.base + path, headers={"User-Agent": self.agent, **self._cookie_header()})
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            self._keep(response.headers.get_all("Set-Cookie") or [])

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}

    def _keep(self, set_cookies: list[str]) -> None:
        """Keep what `Set-Cookie` headers set (name and value: this client visits one site, over http)."""
        for header in set_cookies:
            pair, *attributes = header.split(";")
            name, _, value = pair.partition("=")
            if any(a.strip().lower() == "max-age=0" for a in attributes):
                self.cookies.pop(name.strip(), None)
            else:
                self.cookies[name.strip()] = value.strip()

    async def rerun(self, widget: str | None = None, **value) -> None:
        """Send one rerun and read until the script finishes.

        With `widget` (a user key), the rerun is a click on that button, or with
        `value` (as Streamlit's WidgetState has it: `string_value="…"`,
        `bool_value=False`) that widget set to a value, as a student types or chooses.
        """
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_script_hash = self.page
        if widget is not None:
            msg.rerun_script.fragment_id = self.fragments.get(widget, "")
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = self.widgets[widget]
            if value:
                for field, given in value.items():
                    setattr(state, field, given)
            else:
                state.trigger_value = True
        await self._send(msg)
        self.text = []
        await self.finished()

    async def reconnect(self) -> None:
        """The connection dropped and comes back, as the browser's page does it: to the same session (its id sent
        in the WebSocket's subprotocols, after the XSRF token), asking for a run only if the page has a fragment's
        timer (Streamlit's frontend, `handleConnectionStateChanged`: a page that had run before asks for one only
        then, or when a run was under way)."""
        import websockets

        with contextlib.suppress(Exception):
            await self.ws.close()
        token = self.cookies.get("_streamlit_xsrf", "none")
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit", token, self.session_id],
                                           max_size=None, ping_interval=None,
                                           additional_headers=self._cookie_header(), user_agent_header=self.agent)
        if self.timers:
            from streamlit.proto.BackMsg_pb2 import BackMsg

            msg = BackMsg()
            msg.rerun_script.query_string = self.query
            msg.rerun_script.page_script_hash = self.page
            await self._send(msg)

    async def _send(self, msg) -> None:
        self.sent += 1
        await self.ws.send(msg.SerializeToString())

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
        if kind == "new_session":
            self.session_id = msg.new_session.initialize.session_id  # a page that reconnects names it (`reconnect`)
        if kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "navigation" and msg.navigation.page_script_hash:
            self.page = msg.navigation.page_script_hash
        elif kind == "auto_rerun":  # a fragment the page's own timer reruns (st.fragment's run_every)
            self.timers[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "delta":
            if b'class="ls-ahead"' not in raw:  # the steps beside the cursor, sent ahead (pages/views/ahead.py):
                self.text.append(raw)  # what the page holds for a click, not what it shows
            if msg.delta.WhichOneof("type") == "new_element":
                self._element(msg.delta.new_element, msg.delta.fragment_id)
        if kind == "script_finished":
            self.early = msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN
        return kind == "script_finished"

    def _element(self, element, fragment: str) -> None:
        what = element.WhichOneof("type")
        if what in WIDGETS and "-" in getattr(element, what).id:
            widget_id = getattr(element, what).id
            key = widget_id.split("-", 2)[-1]  # "$$ID-<hash>-<key>"
            self.widgets[key], self.fragments[key] = widget_id, fragment
        elif what == "bidi_component" and element.bidi_component.WhichOneof("data") == "json":
            data = json.loads(element.bidi_component.json)
            if isinstance(data, dict) and isinstance(data.get("cookie"), str):  # what its script does in a browser
                self._keep([data["cookie"]])
        elif what == "exception":
            self.errors.append(f"exception: {element.exception.message[:200]}")
        elif what == "alert" and element.alert.format == element.alert.ERROR:
            self.errors.append(f"error shown: {element.alert.body[:200]}")

    @property
    def params(self) -> dict[str, str]:
        """The address bar's query string, as a dict."""
        return dict(p.split("=", 1) for p in self.query.split("&") if "=" in p)

    def shows(self, text: str) -> bool:
        needle = text.encode()
        return any(needle in raw for raw in self.text)

    def status(self) -> tuple[int, int] | None:
        """(k, n) of the last "Step k of n" the page was sent, even in a run cut short."""
        found = [m for raw in self.text for m in re.finditer(rb"Step (\d+) of (\d+)", raw)]
        return (int(found[-1].group(1)), int(found[-1].group(2))) if found else None

    async def close(self) -> None:
        await self.ws.close()


class Follower(Wire):
    """A student's tab on a class (`/?class=CODE`, pages/views/following.py): nothing is clicked. As a browser's
    page, it takes each run the server starts by itself (the server reruns the page when the class moves:
    pages/views/wake.py) and sends nothing for it; and, as the browser's frontend, it reruns any fragment whose
    timer the server asks for (st.fragment's run_every). `shown` notes each "Step k of n" the page is sent, with
    when its heading arrived; `runs` counts the script runs the server sent after the page opened, `sent` the
    messages the page sent (its first run's included)."""

    def __init__(self, url: str, code: str, agent: str = "loopscope-wire follower", cookies: dict | None = None,
                 query: str = ""):
        super().__init__(url, cookies, agent, query or f"class={code}")
        self.shown: dict[tuple[int, int], float] = {}  # (k, n): time.perf_counter() when the page was sent it
        self.runs = 0
        self.last: list[bytes] = []  # what the last run the server started by itself sent

    async def finished(self) -> None:
        """Read until the run that the page ends on finishes (through any st.rerun), noting the steps sent."""
        while True:
            done = await self._next()
            if done and not self.early:
                return

    async def _next(self) -> bool:
        """Read one message, noting the steps sent; True at the end of a script run."""
        done = await self._read()
        if self.text:
            self._note(self.text[-1])
        return done

    def _note(self, raw: bytes) -> None:
        for m in re.finditer(rb"Step (\d+) of (\d+)", raw):
            self.shown.setdefault((int(m.group(1)), int(m.group(2))), time.perf_counter())

    async def until(self, step: tuple[int, int]) -> None:
        """Take what the server sends until the end of the run that sent the page `step`'s heading (`last` is what
        that run sent); at once if it was sent already. A dead connection raises."""
        if step in self.shown:
            return
        while True:
            if await self._next():
                self._ran()
                if step in self.shown:
                    return

    def _ran(self) -> None:
        self.runs += 1
        self.last, self.text = self.text, []

    async def listen(self) -> None:
        """Take what the server sends, run after run, until the connection closes or the task is cancelled."""
        while True:
            if await self._next():
                self._ran()

    async def tick(self) -> None:
        """What the page's timer does: ask a rerun of each fragment that asked for one (the answer is `listen`'s)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        for fragment in list(self.timers):
            msg = BackMsg()
            msg.rerun_script.query_string = self.query
            msg.rerun_script.page_script_hash = self.page
            msg.rerun_script.fragment_id = fragment
            msg.rerun_script.is_auto_rerun = True
            await self._send(msg)

    async def follow(self, stop: asyncio.Event, phase: float = 0.0) -> None:
        """Be the page until `stop` is set: take the runs the server sends, and tick the fragments' timers, if any
        (`phase`, a fraction of the interval, delays the first tick: the pages were opened at different moments)."""
        listening = asyncio.create_task(self.listen())
        timing = asyncio.create_task(self._timers(phase))
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({listening, timing, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (listening, timing, stopped):
                task.cancel()
            await asyncio.gather(listening, timing, stopped, return_exceptions=True)
        for task in (listening, timing):  # a dropped connection, said
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()

    async def _timers(self, phase: float) -> None:
        if not self.timers:
            await asyncio.Event().wait()  # (no timer now: a page gets none later without a run of its own)
        due = time.perf_counter() + phase * min(self.timers.values())
        while True:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))  # the page's own timer
            await self.tick()
            due = max(due + min(self.timers.values()), time.perf_counter())


async def wire_student(url: str, n: int, max_steps: int, think_ms: int, times: list[float], errors: list[str],
                       bell: Bell | None = None, opens: list[float] | None = None):
    wire = Wire(url, agent=f"{AGENT} {n}")  # the balancer's log names each student by it
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
