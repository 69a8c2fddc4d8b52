"""One thread's `messages` at every step, each version of a message kept once.

The chapter's loop only appends to `messages`, so the history at any step is a
prefix of the final one. Compaction breaks that: micro-compact replaces old
tool results in place, auto-compact replaces the whole history with a summary.
Copying the history at every step would make memory grow with steps times
messages; instead each position of the list (a slot) keeps the values it has
held and the step each was written at, and the history at step v is, slot by
slot, the value written last at or before v. Appending is one list append; a
rewrite of k messages adds k entries; the history at a step costs a slice plus
one lookup per slot that was ever rewritten.
"""

from __future__ import annotations

from bisect import bisect_right


class History:
    """Every version of one thread's history, shared between steps (see the module's docstring)."""

    __slots__ = ("first", "later", "length", "writes", "written", "_lowest")

    def __init__(self, messages: list | None = None):
        self.first: list = list(messages or [])  # slot j's first value
        self.later: dict[int, tuple[list[int], list]] = {}  # slot j -> (steps, values) written after its first
        self.length = len(self.first)  # of the newest version
        self.writes: list[int] = []  # the step of every later value, in order (steps only grow) ...
        self.written: list[int] = []  # ... and the slot it went to
        self._lowest: list[int] | None = None  # written[k:]'s lowest slot, for each k (made when asked)

    def put(self, version: int, slot: int, message: object) -> None:
        """`message` is at `slot` from step `version` on (versions only grow)."""
        if slot == len(self.first):
            self.first.append(message)
        elif slot < len(self.first):
            steps, values = self.later.setdefault(slot, ([], []))
            steps.append(version)
            values.append(message)
            self.writes.append(version)
            self.written.append(slot)
            self._lowest = None
        else:  # pragma: no cover - a caller bug: slots are filled in order
            raise IndexError(f"slot {slot} of a history of {len(self.first)}")

    def record(self, version: int, messages: list, rewritten=()) -> None:
        """The thread's history is `messages` after step `version`: slots in `rewritten` and new ones are stored."""
        for slot in rewritten:
            if slot < min(self.length, len(messages)):
                self.put(version, slot, messages[slot])
        for slot in range(self.length, len(messages)):
            self.put(version, slot, messages[slot])
        self.length = len(messages)

    def message(self, version: int, slot: int) -> object:
        """The value of `slot` at step `version`."""
        later = self.later.get(slot)
        if later is not None:
            k = bisect_right(later[0], version)
            if k:
                return later[1][k - 1]
        return self.first[slot]

    def at(self, version: int, n: int) -> list:
        """The first `n` messages as they were after step `version` (a new list)."""
        out = self.first[:n]
        for slot, (steps, values) in self.later.items():
            if slot < n:
                k = bisect_right(steps, version)
                if k:
                    out[slot] = values[k - 1]
        return out

    def window(self, version: int, start: int, end: int) -> list:
        """Messages [start, end) as they were after step `version`, without building the rest."""
        return [self.message(version, j) for j in range(start, end)]

    def view(self, version: int, n: int) -> "HistoryView":
        """The first `n` messages after step `version` as a read-only sequence that builds nothing."""
        return HistoryView(self, version, n)

    def rewritten_since(self, after: int, upto: int, n: int) -> int | None:
        """The lowest slot below `n` given a new value at a step in (after, upto], or None: whether the history
        at `upto` starts with the one at `after`."""
        lo, hi = bisect_right(self.writes, after), bisect_right(self.writes, upto)
        if lo == hi or self.lowest_from(lo) >= n:
            return None
        return min(slot for slot in self.written[lo:hi] if slot < n) if any(
            slot < n for slot in self.written[lo:hi]) else None

    def lowest_from(self, k: int) -> int:
        """The lowest slot written by the k-th later value or any after it (a large number when none)."""
        if self._lowest is None:
            lowest, low = [0] * (len(self.written) + 1), 1 << 62
            lowest[-1] = low
            for i in range(len(self.written) - 1, -1, -1):
                low = min(low, self.written[i])
                lowest[i] = low
            self._lowest = lowest
        return self._lowest[k]

    def prefix_of_newest(self, version: int, n: int) -> bool:
        """Are the first `n` messages after step `version` still the newest version's first `n`?"""
        return self.lowest_from(bisect_right(self.writes, version)) >= n and n <= self.length

    def until(self, version: int, length: int) -> "History":
        """A copy holding the versions up to step `version`, whose newest has `length` messages (for a fork)."""
        copy = History()
        copy.first = list(self.first)
        for slot, (steps, values) in self.later.items():
            k = bisect_right(steps, version)
            if k:
                copy.later[slot] = (steps[:k], values[:k])
        k = bisect_right(self.writes, version)
        copy.writes, copy.written = self.writes[:k], self.written[:k]
        copy.length = length
        return copy

    @classmethod
    def from_timelines(cls, timelines: list[list[tuple[int, object]]], length: int) -> "History":
        """A history from each slot's (step, value) pairs, oldest first; `length` is the newest version's."""
        history = cls()
        history.first = [timeline[0][1] for timeline in timelines]
        for slot, timeline in enumerate(timelines):
            if len(timeline) > 1:
                history.later[slot] = ([v for v, _ in timeline[1:]], [m for _, m in timeline[1:]])
        history.length = length
        order = sorted((v, slot) for slot, (steps, _) in history.later.items() for v in steps)
        history.writes, history.written = [v for v, _ in order], [slot for _, slot in order]
        return history


class HistoryView:
    """A thread's history at one step, read message by message (len and [i]); nothing is copied."""

    __slots__ = ("history", "version", "n")

    def __init__(self, history: History, version: int, n: int):
        self.history, self.version, self.n = history, version, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if not isinstance(i, int):
            raise TypeError("a HistoryView reads one message at a time")
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.history.message(self.version, i)
