"""Text for a terminal: control characters from a file or a command are shown, never obeyed.

A transcript, a log or a command's output can hold terminal escapes (`ESC]0;…BEL`
retitles the window, `ESC[31m` recolours it, others rewrite the screen or the
clipboard) and bidirectional overrides that reorder what is seen. The CLI prints
such text through `printable`, which writes each of them as a visible escape.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and Unicode's bidirectional embeddings, overrides and isolates
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """`text` with every control character (but tab and newline) written as `\\x..` or `\\u....`."""
    return _HIDDEN.sub(_shown, str(text))


# A colour or cursor sequence (CSI), a window title or link (OSC): what a terminal obeys and does not print
_SEQUENCES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def as_shown(text: str) -> str:
    """What a terminal shows of a program's output: its colour and cursor sequences left out, a line rewritten
    after a carriage return kept as its last version (the rest of its control characters are for `printable`)."""
    lines = []
    for line in _SEQUENCES.sub("", text).split("\n"):
        lines.append(line.rsplit("\r", 1)[-1] if "\r" in line.rstrip("\r") else line.rstrip("\r"))
    return "\n".join(lines)
