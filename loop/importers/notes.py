"""The warnings of one import: each said once, in order, with repeated kinds counted.

A long log can hold thousands of records of one kind that an import passes
over; a list with one line for each would bury the few that matter. Repeats
are counted instead, with the first few places named.
"""

from __future__ import annotations

SHOWN = 5  # places named for a counted warning


class Notes:
    """Warnings in the order they were found: plain lines and counted groups."""

    def __init__(self) -> None:
        self._order: list[tuple[str, str]] = []  # ("line", text) or ("group", key)
        self._groups: dict[str, list] = {}  # key -> [count, places]

    def warn(self, text: str) -> None:
        """One warning, said as it is."""
        self._order.append(("line", text))

    def count(self, what: str, where: str) -> None:
        """One more case of `what` (e.g. "passed over 'summary' records"), found at `where` (e.g. "line 3")."""
        group = self._groups.get(what)
        if group is None:
            group = self._groups[what] = [0, []]
            self._order.append(("group", what))
        group[0] += 1
        if len(group[1]) < SHOWN:
            group[1].append(where)

    def __len__(self) -> int:
        return len(self._order)

    def render(self) -> list[str]:
        out = []
        for kind, text in self._order:
            if kind == "line":
                out.append(text)
                continue
            n, places = self._groups[text]
            more = ", …" if n > len(places) else ""
            out.append(f"{text} ×{n}: {', '.join(places)}{more}")
        return out
