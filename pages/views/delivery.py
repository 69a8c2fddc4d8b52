"""A run's messages reach the browser in bursts: one wake of the server's event loop, and few packets, for the many
messages a script run sends at once.

Streamlit hands each message of a run from the script thread to the server's event loop on its own
(`AppSession._on_scriptrunner_event` does one `call_soon_threadsafe` a message: a write to the loop's self-pipe, a
wake of its thread and the GIL handed over, each time), and its WebSocket sender writes each message in its own
write, so with TCP_NODELAY (sockets.py) each leaves in a packet of its own. A cursor move sends about 30 messages
(bench/cursor.py): with the bursts, its run wakes the loop about 10 times instead of 29. The loop still wakes
more than once a run because the script thread lets the GIL go whenever it waits for the system (the self-pipe
write included), and the loop then takes the events so far.

`deliver_in_bursts()` (once a process, from app.py, as `no_delay()`) changes two things, nothing else:

1. The events a script thread emits while the event loop has not yet handled the ones before are handled together,
   in the order they were emitted, by one callback: one wake for a burst. Each is handled as before (the handler
   still checks which ScriptRunner sent it, so a stale runner's events are treated as they were).
2. The frames a sender writes in one turn of the event loop leave together: its socket is corked (TCP_CORK, Linux)
   before the first and uncorked by a callback the loop runs right after the sender's turn.
   Nothing waits for a timer: a message alone goes as soon as before.

Streamlit internals used (private; streamlit is pinned 1.67.0): `AppSession._on_scriptrunner_event`,
`._handle_scriptrunner_event_on_event_loop`, `._call_soon_on_event_loop`, `._event_loop`;
`StarletteSessionClient.write_forward_msg` and `._websocket` (a Starlette WebSocket whose `_send` leads, through
Starlette's wrappers, to uvicorn's protocol and its `transport`). When they are not as expected (another version),
nothing is installed and the app sends as Streamlit does.
"""

from __future__ import annotations

import inspect
import logging
import socket
import threading
from typing import Any

_LOGGER = logging.getLogger(__name__)

_done = threading.Event()
_lock = threading.Lock()

# The arguments of AppSession._on_scriptrunner_event in the version this was written for, in their order
EVENT_ARGS = ("self", "sender", "event", "forward_msg", "exception", "client_state", "page_script_hash",
              "fragment_ids_this_run", "pages", "run_descriptor")
_BURST = "_loopscope_burst"  # a session's events not handled yet (an attribute of the AppSession)
_replaced: list = []  # Streamlit's functions replaced here (see _one_wake)
_CORK = "_loopscope_cork"  # a client's socket, once looked for (an attribute of the StarletteSessionClient)


def deliver_in_bursts() -> list[str]:
    """Install both changes, once a process. Returns what was installed this call ("wake", "cork"; empty when
    already done, or when Streamlit's internals are not the expected ones)."""
    if _done.is_set():
        return []
    with _lock:
        if _done.is_set():
            return []
        installed = []
        if _one_wake():
            installed.append("wake")
        if _corked():
            installed.append("cork")
        _done.set()
        return installed


# -- 1. one wake of the event loop for the events a script thread emitted meanwhile ------------------------------

class Burst:
    """The events of one session not handled yet, in the order they came."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple] = []


def _one_wake() -> bool:
    try:
        from streamlit.runtime.app_session import AppSession
    except ImportError:
        return False
    names = ("_on_scriptrunner_event", "_handle_scriptrunner_event_on_event_loop", "_call_soon_on_event_loop")
    if not all(callable(getattr(AppSession, name, None)) for name in names):
        return False
    try:
        args = tuple(inspect.signature(AppSession._on_scriptrunner_event).parameters)
        handler_args = tuple(inspect.signature(AppSession._handle_scriptrunner_event_on_event_loop).parameters)
    except (TypeError, ValueError):
        return False
    if args != EVENT_ARGS or handler_args != EVENT_ARGS:
        return False
    # The ScriptRunners already running hold Streamlit's function by a weak reference (their signal keeps a
    # WeakMethod): kept alive here, their events still reach their sessions, the way they did.
    _replaced.append(AppSession._on_scriptrunner_event)
    AppSession._on_scriptrunner_event = on_scriptrunner_event
    return True


def on_scriptrunner_event(self, sender, event, forward_msg=None, exception=None, client_state=None,
                          page_script_hash=None, fragment_ids_this_run=None, pages=None, run_descriptor=None) -> None:
    """AppSession._on_scriptrunner_event, called from a script thread (or the loop): the event joins the session's
    burst; the first event of a burst asks the loop for the one callback that will handle them all."""
    burst = self.__dict__.get(_BURST)
    if burst is None:
        burst = self.__dict__.setdefault(_BURST, Burst())  # (atomic: two threads get the same one)
    item = (sender, event, forward_msg, exception, client_state, page_script_hash, fragment_ids_this_run, pages,
            run_descriptor)
    with burst.lock:
        burst.events.append(item)
        if len(burst.events) > 1:
            return  # the callback asked for by the first one has not taken them yet: it will take this one too
    try:
        self._call_soon_on_event_loop(lambda: _handle(self, burst))
    except BaseException:
        with burst.lock:  # the loop refused: the next event asks again
            burst.events.clear()
        raise


def _handle(session, burst: Burst) -> None:
    """On the event loop: handle the events of the burst, in order, each as Streamlit does. An event whose handler
    fails is reported as the loop reports a failed callback, and the ones after it are still handled."""
    with burst.lock:
        events, burst.events = burst.events, []
    for item in events:
        try:
            session._handle_scriptrunner_event_on_event_loop(*item)
        except Exception as exc:
            session._event_loop.call_exception_handler({
                "message": "Exception in callback AppSession._handle_scriptrunner_event_on_event_loop",
                "exception": exc,
            })


# -- 2. the frames of one turn of a sender leave together -------------------------------------------------------

def _corked() -> bool:
    if not hasattr(socket, "TCP_CORK"):
        return False
    try:
        from streamlit.web.server.starlette.starlette_websocket import StarletteSessionClient
    except ImportError:
        return False
    write = getattr(StarletteSessionClient, "write_forward_msg", None)
    if not callable(write):
        return False

    def write_forward_msg(self, msg) -> None:
        write(self, msg)  # (queues the payload and, when the sender waits for one, schedules its turn)
        _cork_for_this_turn(self)

    write_forward_msg.__doc__ = write.__doc__
    StarletteSessionClient.write_forward_msg = write_forward_msg
    return True


def _cork_for_this_turn(client) -> None:
    """Cork the client's socket, and uncork it by a callback scheduled after the sender's turn: the sender's task
    writes every payload queued when it runs without giving the loop back (a queue that has items and an open
    socket do not suspend it), so what it writes in that turn leaves in as few packets as fit."""
    found = client.__dict__.get(_CORK, False)
    if found is False:
        found = client.__dict__[_CORK] = _Cork.of(client)
    if found is not None:
        found.cork()


class _Cork:
    """A client's TCP socket and the loop it is written from."""

    def __init__(self, sock, loop) -> None:
        self.sock, self.loop, self.held = sock, loop, False

    @staticmethod
    def of(client) -> "_Cork | None":
        import asyncio

        transport = _transport(getattr(getattr(client, "_websocket", None), "_send", None))
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            return None
        try:
            return _Cork(sock, asyncio.get_running_loop())
        except RuntimeError:  # not on the loop: leave this client as it is
            return None

    def cork(self) -> None:
        if self.held:
            return
        if not self._set(1):
            return
        self.held = True
        self.loop.call_soon(self.uncork)  # after the sender's turn, scheduled before this by the payload's put

    def uncork(self) -> None:
        self.held = False
        self._set(0)  # (pushes what is held at once)

    def _set(self, on: int) -> bool:
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, on)
        except OSError:  # closed meanwhile
            return False
        return True


def _transport(send: Any, depth: int = 0):
    """uvicorn's transport behind a Starlette WebSocket's `send`: Starlette wraps it in closures (its exception
    middleware's `sender`); at the end is the protocol's bound method, whose object holds the transport."""
    import asyncio

    if send is None or depth > 8:
        return None
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if isinstance(transport, asyncio.Transport):
        return transport
    for cell in getattr(send, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(inner):
            found = _transport(inner, depth + 1)
            if found is not None:
                return found
    return None
