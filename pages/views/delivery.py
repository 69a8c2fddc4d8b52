"""A run's messages reach the server's event loop in bursts: one wake of the loop for the many messages a script run
sends at once.

Streamlit hands each message of a run from the script thread to the server's event loop on its own (one
`call_soon_threadsafe` a message: a write to the loop's self-pipe, a wake of its thread and the GIL handed over,
each time), and its WebSocket sender writes each message in its own write, so with TCP_NODELAY (sockets.py) each
leaves in a packet of its own. A cursor move sends about 30 messages (bench/cursor.py): with the bursts, its run
wakes the loop about 10 times instead of 29. The loop still wakes more than once a run because the script thread
lets the GIL go whenever it waits for the system (the self-pipe write included), and the loop then takes the
events so far.

The bursts change one thing: the events a script thread emits while the event loop has not yet handled the ones
before are handled together, in the order they were emitted, by one callback. Each is handled as before (the
handler still checks which ScriptRunner sent it, so a stale runner's events are treated as they were). Nothing
waits for a timer: an event alone is handed over as soon as before.

Where they are put between Streamlit's script threads and its loop, once a process (app.py), takes Streamlit's
private parts: internals.py `deliver_in_bursts` (on another Streamlit, nothing is put there, and the app works as
Streamlit does).

Not done: corking the socket (TCP_CORK) around what the sender writes in one turn, so those frames leave in one
packet. Measured on top of the bursts (bench/cursor.py, 9 runs each, side by side), it saved nothing measurable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Burst:
    """The events of one session not handled yet, in the order they came."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple] = []

    def join(self, event: tuple, ask: Callable[[], None], closed: Callable[[], bool]) -> None:
        """Called from a script thread (or the loop): `event` joins the burst. The first event of a burst calls
        `ask()`, which asks the loop for the one callback that will `handle` them all; `closed()` says the loop is
        closed (then the event is dropped, as Streamlit drops it)."""
        with self.lock:
            self.events.append(event)
            if len(self.events) > 1:
                return  # the callback the first one asked for is queued and has not taken them yet: it takes this too
            # Asked for under the lock (asking does not block): an event joins a burst only once its callback is in
            # the loop's queue, so a callback the loop queues meanwhile (Streamlit's message of a failed browser
            # request, which must come after these events) still comes after them.
            try:
                ask()
            except BaseException:
                self.events.pop()  # the loop refused this one: the next event asks again
                raise
            if closed():
                self.events.clear()

    def handle(self, handle: Callable[[tuple], None], failed: Callable[[Exception], None]) -> None:
        """On the event loop: handle the events of the burst, in order, each as Streamlit does. An event whose
        handler fails is told to `failed` (the loop reports it as a failed callback), and the ones after it are
        still handled."""
        with self.lock:
            events, self.events = self.events, []
        for event in events:
            try:
                handle(event)
            except Exception as exc:
                failed(exc)
