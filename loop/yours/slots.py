"""How many learners' programs run at once: a few a browser, a few a server, the rest wait their turn in line.

Each run holds a sandbox allowed a GiB of memory: on a class server, six at once held 5.8 GB. A run takes a
slot before its sandbox starts and gives it back when it ends; a browser (`owner`) holds at most `per_owner`
slots and the server at most `total`. A run that finds none waits in a first-come line, and is told where it
stands (`on_wait(ahead)`) each time that changes, so a page can say so. The operator sets both:
LOOPSCOPE_YOURS_RUNS (4 by default, on 2 cores) and LOOPSCOPE_YOURS_RUNS_PER_BROWSER (2: Check runs two
scenarios at once).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

TOTAL_VARIABLE = "LOOPSCOPE_YOURS_RUNS"
PER_OWNER_VARIABLE = "LOOPSCOPE_YOURS_RUNS_PER_BROWSER"
TOTAL, PER_OWNER = 4, 2


def _setting(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


class Slots:
    """The runs under way, by owner, and the line of those waiting."""

    def __init__(self):
        self.lock = threading.Condition()
        self.running: dict[object, int] = {}
        self.line: list[tuple[object, object]] = []  # (ticket, owner), first come first

    @contextmanager
    def taken(self, owner: object = None, on_wait: Callable[[int | None], None] | None = None,
              timeout: float | None = None) -> Iterator[None]:
        """Hold a slot for `owner` (None: one of its own) while the block runs; wait in line for one first, told
        how many runs are ahead (`on_wait(n)`), then `on_wait(None)` when its turn comes.

        TimeoutError when none was free within `timeout` seconds."""
        total, per_owner = _setting(TOTAL_VARIABLE, TOTAL), _setting(PER_OWNER_VARIABLE, PER_OWNER)
        owner = object() if owner is None else owner
        ticket = object()
        with self.lock:
            self.line.append((ticket, owner))
            said = None
            try:
                while True:
                    # first in line among those whose owner has room: nobody is passed over by a later comer
                    ready = [t for t, o in self.line if self.running.get(o, 0) < per_owner]
                    if ready and ready[0] is ticket and sum(self.running.values()) < total:
                        break
                    ahead = [t for t, _ in self.line].index(ticket) + sum(self.running.values())
                    if on_wait is not None and ahead != said:
                        said = ahead
                        on_wait(ahead)
                    if not self.lock.wait(timeout):
                        raise TimeoutError("no run slot")
            finally:
                self.line = [(t, o) for t, o in self.line if t is not ticket]
            self.running[owner] = self.running.get(owner, 0) + 1
        if said is not None and on_wait is not None:
            on_wait(None)  # its turn came: nothing ahead any more
        try:
            yield
        finally:
            with self.lock:
                self.running[owner] -= 1
                if not self.running[owner]:
                    del self.running[owner]
                self.lock.notify_all()


SLOTS = Slots()  # the server's
