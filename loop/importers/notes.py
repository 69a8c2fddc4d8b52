"""The warnings of one import: each said once, in order, with repeated kinds counted, in any language.

A long log can hold thousands of records of one kind that an import passes
over; a list with one line for each would bury the few that matter. Repeats
are counted instead, with the first few places named.

A warning is a `Note` (loop/text/catalogs.py): a message marked with `N_` where it
is written, and the values that fill it, said in English for the command line
and the transcript's record, in the page's language on Replay.
"""

from __future__ import annotations

from ..text.catalogs import N_, SOURCE, Note

SHOWN = 5  # places named for a counted warning

GROUP = N_("{what} ×{n}: {places}")
GROUP_MORE = N_("{what} ×{n}: {places}, …")  # more places than the SHOWN named
LINE = N_("line {n}")
FILE_LINE = N_("{file}, line {n}")
IN_THREAD = N_("thread {thread}: {said}")
WHERE_FROM = N_("{where} ({origin})")  # messages.3 (line 12): where in the file a message came from


def on_line(n: int) -> Note:
    """Where a record is: "line 12"."""
    return Note(LINE, n=n)


def in_thread(thread: str, said: Note | str) -> Note:
    """`said`, about the thread `thread` (not the main one): "thread agent-ab: ..."."""
    return Note(IN_THREAD, thread=thread, said=said)


class Notes:
    """Warnings in the order they were found: single notes and counted groups."""

    def __init__(self) -> None:
        self._order: list[tuple[str, object]] = []  # ("note", Note) or ("group", key)
        self._groups: dict[str, list] = {}  # key (the English) -> [what, count, places]

    def warn(self, message: str | tuple[str, str], /, **values: object) -> None:
        """One warning: `message` (marked with N_) with its values."""
        self._order.append(("note", Note(message, **values)))

    def add(self, note: Note) -> None:
        """One warning made elsewhere (derive.py's)."""
        self._order.append(("note", note))

    def count(self, message: str | tuple[str, str], where: Note | str, /, **values: object) -> None:
        """One more case of `message` (e.g. "passed over records without a type"), found at `where` (data such as
        "messages.3", or a Note such as `line(3)`)."""
        what = Note(message, **values)
        key = what.render()  # one group for what reads the same
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = [what, 0, []]
            self._order.append(("group", key))
        group[1] += 1
        if len(group[2]) < SHOWN:
            group[2].append(where)

    def __len__(self) -> int:
        return len(self._order)

    def items(self) -> list[Note]:
        """Every warning as a Note, a counted group as one."""
        out = []
        for kind, value in self._order:
            if kind == "note":
                out.append(value)
                continue
            what, n, places = self._groups[value]
            out.append(Note(GROUP_MORE if n > len(places) else GROUP, what=what, n=n, places=list(places)))
        return out

    def render(self, lang: str = SOURCE) -> list[str]:
        return [note.render(lang) for note in self.items()]
