"""A run's messages reach the server's event loop in bursts: one wake of the loop for the many messages a script run
sends at once.

Streamlit hands each message of a run from the script thread to the server's event loop on its own
(`AppSession._on_scriptrunner_event` does one `call_soon_threadsafe` a message: a write to the loop's self-pipe, a
wake of its thread and the GIL handed over, each time), and its WebSocket sender writes each message in its own
write, so with TCP_NODELAY (sockets.py) each leaves in a packet of its own. A cursor move sends about 30 messages
(bench/cursor.py): with the bursts, its run wakes the loop about 10 times instead of 29. The loop still wakes
more than once a run because the script thread lets the GIL go whenever it waits for the system (the self-pipe
write included), and the loop then takes the events so far.

`deliver_in_bursts()` (once a process, from app.py, as `no_delay()`) changes one thing: the events a script thread
emits while the event loop has not yet handled the ones before are handled together, in the order they were emitted,
by one callback. Each is handled as before (the handler still checks which ScriptRunner sent it, so a stale runner's
events are treated as they were). Nothing waits for a timer: an event alone is handed over as soon as before.

Not done: corking the socket (TCP_CORK) around what the sender writes in one turn, so those frames leave in one
packet. Measured on top of the bursts (bench/cursor.py, 9 runs each, side by side), it saved nothing measurable.

Streamlit internals used (private; streamlit is pinned 1.67.0): `AppSession._on_scriptrunner_event`,
`._handle_scriptrunner_event_on_event_loop`, `._call_soon_on_event_loop`, `._event_loop`. When they are not as
expected (another version), nothing is installed and the app works as Streamlit does.
"""

from __future__ import annotations

import inspect
import threading

_done = threading.Event()
_lock = threading.Lock()

# The arguments of AppSession._on_scriptrunner_event in the version this was written for, in their order
EVENT_ARGS = ("self", "sender", "event", "forward_msg", "exception", "client_state", "page_script_hash",
              "fragment_ids_this_run", "pages", "run_descriptor")
_BURST = "_loopscope_burst"  # a session's events not handled yet (an attribute of the AppSession)
_replaced: list = []  # Streamlit's functions replaced here (see _one_wake)


def deliver_in_bursts() -> list[str]:
    """Install the bursts, once a process. Returns what was installed this call (["wake"]; empty when already done,
    or when Streamlit's internals are not the expected ones)."""
    if _done.is_set():
        return []
    with _lock:
        if _done.is_set():
            return []
        installed = []
        if _one_wake():
            installed.append("wake")
        _done.set()
        return installed


# -- one wake of the event loop for the events a script thread emitted meanwhile ---------------------------------

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
            return  # the callback asked for by the first one is queued and has not taken them yet: it takes this too
        # Asked for under the lock (call_soon_threadsafe does not block): an event joins a burst only once its
        # callback is in the loop's queue, so a callback the loop queues meanwhile (Streamlit's message of a failed
        # browser request, which must come after these events) still comes after them.
        try:
            self._call_soon_on_event_loop(lambda: _handle(self, burst))
        except BaseException:
            burst.events.pop()  # the loop refused this one: the next event asks again
            raise
        if self._event_loop.is_closed():  # (Streamlit drops an event for a closed loop, and so does the burst)
            burst.events.clear()


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
