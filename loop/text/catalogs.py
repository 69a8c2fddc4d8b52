"""The words Loopscope shows, in every language that has a catalog: gettext over `locales/`.

Messages are the English text itself (the gettext way), so English needs no
catalog and a message missing from one falls back to English. Each other
language is one file, `locales/<lang>/LC_MESSAGES/loopscope.po`, that any
translator's tool opens; it is compiled with Babel when first used, in memory,
so there is never a `.mo` to go stale. `make messages` extracts the messages
from the code (`t("…")` on the pages; `N_("…")`, `N_n("…", "…")`, `say(lang, "…")`
and `say_n(lang, "…", "…", n)` here) and merges them into every catalog.

A `Note` is a message and its values, to be said later in whatever language
the reader has then: an import's warnings, why a file cannot be read.

No Streamlit here: the engine (stage notes, the scripted model, the CLI) and
the pages share these catalogs.
"""

from __future__ import annotations

import functools
import gettext
import io
from pathlib import Path
from string import Formatter
from typing import Callable

LOCALES = Path(__file__).resolve().parents[2] / "locales"
DOMAIN = "loopscope"
SOURCE = "en"  # the language of the messages themselves


def N_(text: str) -> str:
    """Mark `text` as a message where it is defined; it is translated where it is shown."""
    return text


def N_n(singular: str, plural: str) -> tuple[str, str]:
    """Mark a message with a plural form where it is defined; a Note of it says the form for its value `n`."""
    return singular, plural


def catalog_path(lang: str) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of `lang` (nothing to translate for English or a language without one).

    Babel compiles the `.po` once a process; fuzzy entries are left out, as
    `pybabel compile` leaves them out, so an unchecked guess shows as English.
    """
    path = catalog_path(lang)
    if lang == SOURCE or not path.is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        catalog = read_po(f, locale=lang, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _display_name(lang: str) -> str:
    try:
        from babel import Locale

        return Locale.parse(lang).get_display_name(lang) or lang
    except Exception:  # an unknown code still works, shown as it is
        return lang


@functools.cache
def languages() -> dict[str, str]:
    """{code: name in that language}: English, then every language with a catalog under locales/."""
    found = sorted(p.parent.parent.name for p in LOCALES.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    return {code: _display_name(code) for code in [SOURCE, *[c for c in found if c != SOURCE]]}


def say(lang: str, text: str, **values) -> str:
    """`text` in `lang`, with `values` filled in ({name} placeholders)."""
    words = translations(lang).gettext(text)
    return words.format(**values) if values else words


def say_n(lang: str, singular: str, plural: str, n: int, **values) -> str:
    """The form of a message for the number `n` in `lang` (`n` is also a value to fill in)."""
    return translations(lang).ngettext(singular, plural, n).format(n=n, **values)


def size_words(n: int) -> str:
    """`8 MiB`, `512 KiB`, `100 B`: a size in bytes as a person reads it, the same in every language."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def known(lang: str | None) -> str:
    """`lang` when Loopscope has that language, else English."""
    return lang if lang in languages() else SOURCE


AND = N_("{list}, {item}")  # a list of values (places, keys), one after the other
_FORMATTER = Formatter()


class Note:
    """Something Loopscope says, to be said in any language later: a message (its English, marked with `N_`, or
    `N_n` for one with a plural form, its count the value `n`) and its values.

    A value is data (a file's name, a line number, a JSON path, an id, the JSON parser's own words), put in as it
    is in every language; a list of values, joined as the language joins a list; or another Note (a place such as
    "line 12"), said in the same language. `render(lang)` says it: English for the command line and the logs, the
    page's language on a page. A Note crosses a process boundary as JSON (`to_json`, `from_json`).
    """

    __slots__ = ("message", "values")

    def __init__(self, message: str | tuple[str, str], /, **values: object) -> None:
        self.message = tuple(message) if isinstance(message, list) else message
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

        catalog = translations(lang)
        words = catalog.ngettext(*self.message, self.values["n"]) if isinstance(self.message, tuple) \
            else catalog.gettext(self.message)
        return _fill(words, lambda name, spec: said(self.values[name], spec))

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
