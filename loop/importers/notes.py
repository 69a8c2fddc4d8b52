"""The warnings of one import: each said once, in order, with repeated kinds counted, in any language.

A long log can hold thousands of records of one kind that an import passes
over; a list with one line for each would bury the few that matter. Repeats
are counted instead, with the first few places named.

A warning is a `Note`: an English message marked with `N_` where it is
written, with `{named}` placeholders, and the values that fill them. A value
is data (a file's name, a line number, an id, a role, the JSON parser's own
words), put in as it is in every language, or another Note (a place such as
"line 12"), said in the same language as the warning. `Note.render(lang)`
says it in a language: English for the command line and the transcript's
record, the page's language on Replay. A Note crosses a process boundary as
JSON (`to_json`, `from_json`: see isolated.py).
"""

from __future__ import annotations

from string import Formatter
from typing import Callable

from ..catalogs import N_, SOURCE, translations

SHOWN = 5  # places named for a counted warning

GROUP = N_("{what} ×{n}: {places}")
GROUP_MORE = N_("{what} ×{n}: {places}, …")  # more places than the SHOWN named
AND = N_("{list}, {item}")  # the places of a counted warning, one after the other
LINE = N_("line {n}")
FILE_LINE = N_("{file}, line {n}")
IN_THREAD = N_("thread {thread}: {said}")
WHERE_FROM = N_("{where} ({origin})")  # messages.3 (line 12): where in the file a message came from

_FORMATTER = Formatter()


class Note:
    """One thing an import says: a message (the English text, marked with `N_`) and its values."""

    __slots__ = ("message", "values")

    def __init__(self, message: str, /, **values: object) -> None:
        self.message = message
        for name, value in values.items():  # a log's every record may make one: the usual values pass as they are
            if type(value) not in _KEPT:
                values[name] = _value(value)
        self.values = values

    def render(self, lang: str = SOURCE, data: Callable[[object], str] = str) -> str:
        """The note in `lang` (English when its catalog lacks the message), its values filled in.

        `data` writes each value that is data (a str or an int), e.g. as inline code on a page, where the
        message's own words are Markdown; by default as it is. A value that is a Note is said in `lang` too.
        """
        def said(value: object, spec: str) -> str:
            if isinstance(value, Note):
                return value.render(lang, data)
            if isinstance(value, list):  # places: "line 3, line 9", joined as the language joins a list
                items = [said(item, "") for item in value]
                joined = items[0] if items else ""
                for item in items[1:]:
                    pieces = {"list": joined, "item": item}
                    joined = _fill(translations(lang).gettext(AND), lambda name, _, pieces=pieces: pieces[name])
                return joined
            return data(format(value, spec) if spec else value)

        return _fill(translations(lang).gettext(self.message), lambda name, spec: said(self.values[name], spec))

    def to_json(self) -> dict:
        return {"message": self.message, "values": {name: _to_json(v) for name, v in self.values.items()}}

    @classmethod
    def from_json(cls, value: dict) -> Note:
        return cls(value["message"], **{name: _from_json(v) for name, v in value["values"].items()})

    def with_values(self, **values: object) -> Note:
        return Note(self.message, **{**self.values, **values})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Note) and (self.message, self.values) == (other.message, other.values)

    def __hash__(self) -> int:
        return hash(self.message)

    def __repr__(self) -> str:
        return f"Note({self.render()!r})"


def on_line(n: int) -> Note:
    """Where a record is: "line 12"."""
    return Note(LINE, n=n)


def in_thread(thread: str, said: Note | str) -> Note:
    """`said`, about the thread `thread` (not the main one): "thread agent-ab: ..."."""
    return Note(IN_THREAD, thread=thread, said=said)


_KEPT = (str, int, Note)


def _value(value: object) -> object:
    """A value as a Note keeps it: a Note, a list of values, a str, or an int; anything else as its str()."""
    if isinstance(value, (Note, str)) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return str(value)


def _to_json(value: object) -> object:
    if isinstance(value, Note):
        return value.to_json()
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    return value


def _from_json(value: object) -> object:
    if isinstance(value, dict):
        return Note.from_json(value)
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _fill(template: str, value: Callable[[str, str], str]) -> str:
    """`template` with each {name} (or {name:spec}) replaced by value(name, spec); {{ and }} as in str.format."""
    out = []
    for literal, name, spec, _ in _FORMATTER.parse(template):
        out.append(literal)
        if name is not None:
            out.append(value(name, spec or ""))
    return "".join(out)


class Notes:
    """Warnings in the order they were found: single notes and counted groups."""

    def __init__(self) -> None:
        self._order: list[tuple[str, object]] = []  # ("note", Note) or ("group", key)
        self._groups: dict[str, list] = {}  # key (the English) -> [what, count, places]

    def warn(self, message: str, /, **values: object) -> None:
        """One warning: `message` (marked with N_) with its values."""
        self._order.append(("note", Note(message, **values)))

    def add(self, note: Note) -> None:
        """One warning made elsewhere (derive.py's)."""
        self._order.append(("note", note))

    def count(self, message: str, where: Note | str, /, **values: object) -> None:
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
