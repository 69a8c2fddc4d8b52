"""The follower pages of this server process, woken by the server when their class moves.

One watcher a process (a daemon thread, started by the first follower page): it keeps the follower sessions of
this process by class code, reads each watched class once every `FRESH` seconds for all of them, and asks a page
to rerun when its class's version is not the one that page drew, or the class ended; the page run draws the new
step (or, away, where the class is now). Every `BEAT` seconds it writes the heartbeats of the pages still open,
one transaction a class. Idle pages cost the server no run of its own while the class stands still (each page's
slow safety-net timer aside: following.py `_watch`).

A page whose script is running when its class moves is not interrupted (a student's click may be on its way): it
is woken once that run is over, unless the run drew the new version already.

How a session is found and asked to rerun takes Streamlit's private parts: internals.py (`session_id`, `rerun`,
`live`); where they are off, no page is registered here, and each follower's page reads its class on its own timer.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from .internals import live, rerun

_LOGGER = logging.getLogger(__name__)

FRESH = 0.1  # seconds between two reads of the watched classes
BEAT = 3.0  # seconds between two heartbeats of the open follower pages
ENDED = -1  # the "version" of a class that ended or is gone


@dataclass
class Watched:
    """What the watcher knows of one follower page (a Streamlit session)."""

    code: str
    drawn: int  # the class's version the page's last run drew
    owner: str | None  # the browser id, for its heartbeats
    away: bool  # the student stepped away from the class
    woken: int | None = None  # the version it was last woken for (not woken again for it)
    step: str | None = None  # the step's fragment, which a move of the class's cursor alone reruns (None: the page)
    shape: tuple | None = None  # the class as the page drew it, but for its cursor (see `shape`)


class Watcher:
    """The registry of follower pages and the thread that wakes them (see the module's docstring).

    `read(code)` is the class's state (None: no such class); `beat(code, [(owner, away), ...])` writes heartbeats;
    `wake(session_id, fragment)` asks that page (or only its fragment `fragment`, when not None) to rerun, and what
    came of it is told to `woke`; `live(session_id)` says whether the page is still open.
    """

    def __init__(self, read: Callable, beat: Callable, wake: Callable[[str, str | None], None],
                 live: Callable[[str], bool],
                 clock: Callable[[], float], threaded: bool = True):
        self.read, self.beat, self.wake, self.live, self.clock = read, beat, wake, live, clock
        self.threaded = threaded  # (a test calls `once` itself)
        self.pages: dict[str, Watched] = {}
        self.lock = threading.Lock()
        self.some = threading.Condition(self.lock)  # signalled when a page registers
        self.beaten = 0.0
        self.thread: threading.Thread | None = None

    def register(self, session_id: str, code: str, drawn: int, owner: str | None, away: bool,
                 drawn_shape: tuple | None = None) -> None:
        with self.lock:
            last = self.pages.get(session_id)
            self.pages[session_id] = Watched(code, drawn, owner, away,
                                             step=last.step if last is not None and last.code == code else None,
                                             shape=drawn_shape)
            if self.thread is None and self.threaded:
                self.thread = threading.Thread(target=self._run, name="loopscope-class-watcher", daemon=True)
                self.thread.start()
            self.some.notify()

    def inside(self, session_id: str, fragment: str) -> None:
        """The page draws its step in the fragment `fragment`: a follower's next wake may rerun that alone."""
        with self.lock:
            page = self.pages.get(session_id)
            if page is not None:
                page.step = fragment

    def drew(self, session_id: str, version: int) -> None:
        """The page's step, rerun alone, drew the class's version `version`."""
        with self.lock:
            page = self.pages.get(session_id)
            if page is not None:
                page.drawn = version

    def forget(self, session_id: str) -> None:
        with self.lock:
            self.pages.pop(session_id, None)

    def _run(self) -> None:
        while True:
            with self.lock:
                while not self.pages:
                    self.some.wait()
            try:
                self.once()
            except Exception:  # a store that failed this time: the next round reads it again
                _LOGGER.exception("the class watcher's round failed")
            with self.lock:
                self.some.wait(FRESH)  # (a register during the wait only makes the next round earlier)

    def once(self) -> None:
        """One round: read each watched class once, wake the pages behind it, and beat when it is time."""
        with self.lock:
            pages = dict(self.pages)
        versions: dict[str, int] = {}
        shapes: dict[str, tuple] = {}
        for code in {p.code for p in pages.values()}:
            try:
                state = self.read(code)
            except Exception:
                continue
            versions[code] = ENDED if state is None or state.ended else state.version
            shapes[code] = shape(state)
        for session_id, page in pages.items():
            now = versions.get(page.code)
            if now is None or now in (page.drawn, page.woken):
                continue
            page.woken = now
            # Following, and only the class's cursor or its steps moved: the step alone (following.py `_sync`).
            # Otherwise (away, another run, a question, the end): the whole page.
            alone = not page.away and now != ENDED and page.shape is not None and page.shape == shapes.get(page.code)
            self.wake(session_id, page.step if alone else None)
        if self.clock() - self.beaten >= BEAT:
            self.beaten = self.clock()
            self._beat(pages, versions)

    def woke(self, session_id: str, answer: str) -> None:
        """What waking the page gave (called where the wake ran): a gone page is dropped, a busy one tried again."""
        with self.lock:
            page = self.pages.get(session_id)
            if page is None:
                return
            if answer == "gone" or answer == "woken" and page.woken == ENDED:  # the page says the class ended
                self.pages.pop(session_id, None)
            elif answer == "busy":
                page.woken = None

    def _beat(self, pages: dict[str, Watched], versions: dict[str, int]) -> None:
        by_class: dict[str, list[tuple[str, bool]]] = {}
        for session_id, page in pages.items():
            if page.owner is None or versions.get(page.code, ENDED) == ENDED:
                continue
            if not self.live(session_id):
                self.forget(session_id)
                continue
            by_class.setdefault(page.code, []).append((page.owner, page.away))
        for code, followers in by_class.items():
            try:
                self.beat(code, followers)
            except Exception:
                _LOGGER.exception("the heartbeats of class %s were not written", code)


def shape(state) -> tuple | None:
    """What of a class's state a page draws outside its step: its run and its question (the step draws the cursor
    and the steps recorded). Two versions of the same shape differ in what the step alone shows."""
    if state is None or getattr(state, "ended", False):
        return None
    return tuple(getattr(state, name, None) for name in ("run_id", "question", "revealed"))


_watcher: Watcher | None = None
_watcher_lock = threading.Lock()


def watcher(read: Callable, beat: Callable, clock: Callable[[], float]) -> Watcher:
    """The process's watcher (made on first use, with the functions of its first caller)."""
    global _watcher
    with _watcher_lock:
        if _watcher is None:
            made: list[Watcher] = []
            _watcher = Watcher(read, beat, lambda sid, fragment: rerun(sid, made[0].woke, fragment), live, clock)
            made.append(_watcher)
        return _watcher
