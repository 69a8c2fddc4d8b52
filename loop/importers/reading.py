"""Bytes to JSON: a file's text decoded, then read as one JSON value or as JSON Lines (one value a line).

What cannot be read is said where it is: a line that is not JSON is passed over and counted, the last line cut
short is said so, and two records written on one line (a log appended to by two writers at once) are both read.
"""

from __future__ import annotations

import json

from ..files import transcript
from ..text.catalogs import N_
from .failed import NAMED, ImportFailed
from .notes import Note, Notes, on_line

TOO_DEEP = N_("its JSON is nested too deeply to read (over {levels} levels)")


def decode(data: bytes) -> str:
    """The file's text: UTF-8, a byte order mark dropped; anything else is refused, saying where."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise ImportFailed(N_("the file is UTF-16 text; Loopscope reads UTF-8 (save it again as UTF-8)"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportFailed(N_("not UTF-8 text: line {line}, byte {byte} ({hex}) cannot be decoded"), line=line,
                           byte=exc.start, hex=f"0x{data[exc.start]:02x}") from None
    return text.removeprefix("\ufeff")


def parse(text: str, notes: Notes) -> tuple[object, list | None]:
    """(the JSON value, None), or (None, [(line number, value), ...]) for JSON Lines."""
    try:
        value = transcript.parse_json(text)
    except json.JSONDecodeError as exc:
        whole = exc
    except transcript.NumberTooLong as exc:
        raise ImportFailed(str(exc)) from None  # one message, marked N_ in transcript.py
    except RecursionError:
        raise ImportFailed(N_("its JSON is nested too deeply to read")) from None
    else:
        if transcript.too_deep(value):
            raise ImportFailed(TOO_DEEP, levels=transcript.MAX_DEPTH)
        return value, None
    lines = text.split("\n")  # not splitlines(): a JSON string may hold U+2028, which it would split on
    records, bad = [], []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            values = [transcript.parse_json(raw)]
        except json.JSONDecodeError as exc:
            values = glued(raw)
            if values is None:
                bad.append((n, exc))
                continue
            notes.count(N_("lines that hold two or more records written one after another; each record is read"),
                        on_line(n))
        except transcript.NumberTooLong as exc:
            raise ImportFailed(NAMED, name=on_line(n), said=Note(str(exc))) from None
        except RecursionError:
            raise ImportFailed(NAMED, name=on_line(n), said=Note(N_("its JSON is nested too deeply to read"))) \
                from None
        for value in values:
            if transcript.too_deep(value):
                raise ImportFailed(NAMED, name=on_line(n), said=Note(TOO_DEEP, levels=transcript.MAX_DEPTH))
            records.append((n, value))
    first_ok = bool(records) and (not bad or records[0][0] < bad[0][0])
    if not records or not (first_ok or len(records) > len(bad)):
        raise ImportFailed(N_("line {line}: not valid JSON ({error}, column {column})"), line=whole.lineno,
                           error=whole.msg, column=whole.colno)
    last = max(records[-1][0], bad[-1][0] if bad else 0)
    for n, exc in bad:
        if n == last:
            notes.warn(N_("line {line}: cut short, not valid JSON ({error}, column {column}); the lines before it are "
                          "imported"), line=n, error=exc.msg, column=exc.colno)
        else:
            notes.count(N_("passed over lines that are not valid JSON"), on_line(n))
    return None, records


MAX_GLUED = 64  # records on one line at most: two writers at once glue a few, never thousands


def glued(raw: str) -> list | None:
    """The JSON objects of a line that holds several written one after another (`{...}{...}`), or None when the
    line is not wholly such objects (a line cut short, or text that is no JSON)."""
    decoder = json.JSONDecoder()
    values, at, end = [], 0, len(raw.rstrip())
    while at < end:
        while raw[at].isspace():
            at += 1
        try:
            value, at = decoder.raw_decode(raw, at)
        except (ValueError, RecursionError):  # no JSON here, a number too long, nesting too deep: not records
            return None
        if not isinstance(value, dict) or len(values) == MAX_GLUED:
            return None
        values.append(value)
    return values if len(values) > 1 else None
