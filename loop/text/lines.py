"""One line of text from any value: what a label, a list or a narration shows of a longer text.

Here, below every other part, so that the importers (a thread's label) and the views (a step's line) cut text
the same way without one importing the other.
"""

from __future__ import annotations

import json
import re


def clip(text: str, width: int) -> str:
    """`text` in at most `width` characters, "…" where it was cut, at a word's end when one is near: half a
    word ("circ…") reads as a word of its own."""
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space >= width - 24:
        cut = cut[:space]
    return cut + "…"


def short(value: object, width: int = 80) -> str:
    """One line of at most `width` characters; JSON for anything that is not a string."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    # runs of spaces, tabs and line ends become one space; other controls stay, for the printer to show as marks
    # (str.split() would drop \x1c to \x1f and \x85 unseen)
    return clip(" ".join(_SPACES.split(text.strip(" \t\n\r"))), width)


_SPACES = re.compile(r"[ \t\n\r]+")
