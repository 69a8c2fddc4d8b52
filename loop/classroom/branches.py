"""The branches a student makes on their copy of the class's run (a fork, Break it here), held within bounds.

Each branch is a run with a workspace of its own (a tmpfs mount, a lock file held open): a student who breaks the
copy a hundred times must not leave a hundred of them open on the server. A follower's page draws one branch, the
newest, and no branch picker, so a branch is left the moment another is made: it is closed then (its workspace and
cgroups removed; its steps stay readable, for the comparison a broken branch draws beside the loop it was forked
from). At most `KEPT` branches are kept at all, the oldest dropped first; Back to the class closes them all.
"""

from __future__ import annotations

from typing import Iterator, Protocol

from ..engine.trace import Trace

KEPT = 3  # branches a copy keeps; only the newest holds a workspace


class Closable(Protocol):
    trace: Trace

    def close(self) -> None: ...


class Branches:
    """A student's branches, newest last (see the module's docstring)."""

    def __init__(self, kept: int = KEPT):
        self.kept = max(1, kept)
        self.runs: list[Closable] = []
        self._closed: set[int] = set()  # ids of the runs closed (a run is closed once)

    def add(self, run: Closable) -> None:
        """`run` is the branch shown from now on: every other is left, so closed; the oldest beyond `kept` dropped."""
        for other in self.runs:
            self._close(other)
        self.runs.append(run)
        while len(self.runs) > self.kept:
            self._forget(self.runs.pop(0))

    def close(self) -> None:
        """Close and drop every branch (Back to the class, the end of the page's session)."""
        for run in self.runs:
            self._close(run)
        for run in list(self.runs):
            self._forget(run)
        self.runs.clear()

    @property
    def current(self) -> Closable | None:
        return self.runs[-1] if self.runs else None

    def traces(self) -> list[Trace]:
        return [run.trace for run in self.runs]

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[Closable]:
        return iter(self.runs)

    def _close(self, run: Closable) -> None:
        if id(run) in self._closed:
            return
        self._closed.add(id(run))
        run.close()

    def _forget(self, run: Closable) -> None:
        self._close(run)
        self._closed.discard(id(run))
