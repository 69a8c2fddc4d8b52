"""The interface language a browser asks for (its Accept-Language header), among the languages Loopscope has."""

from __future__ import annotations


def accepted(header: str | None, known: list[str] | dict[str, str]) -> str | None:
    """The language of `known` the header prefers most (`ja,en-US;q=0.8` → ja; `zh-CN` → zh), or None.

    Quality values are honoured, `*` and malformed parts ignored; a longer tag counts for its primary language.
    """
    if not header or len(header) > 1000:
        return None
    wanted: list[tuple[float, int, str]] = []
    for n, part in enumerate(header.split(",")[:50]):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        primary = tag.strip().split("-", 1)[0].lower()
        if primary in known and quality > 0:
            wanted.append((-quality, n, primary))
    return min(wanted)[2] if wanted else None
