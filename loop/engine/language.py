"""The line a real system prompt ends with when the learner reads another language than English.

The runner, a sub-agent and the mistakes page ask the model for the learner's language with it; the scripted
model reads it back (`asked_for`) to answer in that language.
"""

from __future__ import annotations

from ..text.catalogs import languages

LANGUAGE_LINE = "The learner reads {name}: write your text in {name}."


def english_name(lang: str) -> str:
    from babel import Locale

    return Locale.parse(lang).get_display_name("en")


def system_prompt(lang: str, system: str) -> str:
    """`system` with a line asking for the learner's language (none for English, the prompt's own language)."""
    if lang == "en" or LANGUAGE_LINE.split("{")[0] in system:
        return system
    return f"{system} {LANGUAGE_LINE.format(name=english_name(lang))}"


def asked_for(system: object) -> str | None:
    """The language a system prompt asks for with the line above; None when it asks for none."""
    if isinstance(system, str) and LANGUAGE_LINE.split("{")[0] in system:
        for lang in languages():
            if lang != "en" and LANGUAGE_LINE.format(name=english_name(lang)) in system:
                return lang
    return None
