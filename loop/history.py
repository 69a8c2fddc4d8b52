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

    __slots__ = ("first", "later", "length")

    def __init__(self, messages: list | None = None):
        self.first: list = list(messages or [])  # slot j's first value
        self.later: dict[int, tuple[list[int], list]] = {}  # slot j -> (steps, values) written after its first
        self.length = len(self.first)  # of the newest version

    def put(self, version: int, slot: int, message: object) -> None:
        """`message` is at `slot` from step `version` on (versions only grow)."""
        if slot == len(self.first):
            self.first.append(message)
        elif slot < len(self.first):
            steps, values = self.later.setdefault(slot, ([], []))
            steps.append(version)
            values.append(message)
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

    def rewritten_since(self, after: int, upto: int, n: int) -> int | None:
        """The lowest slot below `n` given a new value at a step in (after, upto], or None: whether the history
        at `upto` starts with the one at `after`."""
        low = None
        for slot, (steps, _) in self.later.items():
            if slot < n and (low is None or slot < low):
                k = bisect_right(steps, after)
                if k < len(steps) and steps[k] <= upto:
                    low = slot
        return low

    def until(self, version: int, length: int) -> "History":
        """A copy holding the versions up to step `version`, whose newest has `length` messages (for a fork)."""
        copy = History()
        copy.first = list(self.first)
        for slot, (steps, values) in self.later.items():
            k = bisect_right(steps, version)
            if k:
                copy.later[slot] = (steps[:k], values[:k])
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
        return history
