"""The words Loopscope shows, in every language that has a catalog: gettext over `locales/`.

Messages are the English text itself (the gettext way), so English needs no
catalog and a message missing from one falls back to English. Each other
language is one file, `locales/<lang>/LC_MESSAGES/loopscope.po`, that any
translator's tool opens; it is compiled with Babel when first used, in memory,
so there is never a `.mo` to go stale. `make messages` extracts the messages
from the code (`t("…")` on the pages; `N_("…")`, `say(lang, "…")` and
`say_n(lang, "…", "…", n)` here) and merges them into every catalog.

No Streamlit here: the engine (stage notes, the scripted model, the CLI) and
the pages share these catalogs.
"""

from __future__ import annotations

import functools
import gettext
import io
from pathlib import Path

LOCALES = Path(__file__).resolve().parent.parent / "locales"
DOMAIN = "loopscope"
SOURCE = "en"  # the language of the messages themselves


def N_(text: str) -> str:
    """Mark `text` as a message where it is defined; it is translated where it is shown."""
    return text


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


def known(lang: str | None) -> str:
    """`lang` when Loopscope has that language, else English."""
    return lang if lang in languages() else SOURCE
