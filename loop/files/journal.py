"""A saved run as JSON lines, one step a line: how the runs store keeps each step, and how it exports a run.

Line 1 holds the run's facts, `{"meta": {...}, "settings": {...}}` (never a key).
Then one line a step, `{"step": {...}, "messages": [...]}`, with the messages
that step added to its thread (a compact step also says what it rewrote, a
sub-agent's first step which thread it starts: transcript.journal_line). `jq` reads it; the Replay page and `python -m loop import`
open it. Journals that older versions kept as files also hold `{"cursor": k}`
lines (the last one wins) and may end in a line cut by a crash.
"""

from __future__ import annotations

import json

from . import transcript
from ..text.catalogs import N_, Note
from ..text.redact import without_secrets
from ..engine.trace import Trace


def head_line(meta: dict, settings: dict | None) -> str:
    return json.dumps({"meta": meta, "settings": without_secrets(settings or {})}, ensure_ascii=False)


def step_line(trace: Trace, index: int) -> str:
    """Step `index` of `trace` and what it did to its thread's history (transcript.journal_line)."""
    return json.dumps(transcript.journal_line(trace, trace.steps[index]), ensure_ascii=False)


def read(data: bytes, name: str = "journal") -> tuple[dict, list[dict], object]:
    """(facts, step records, last cursor or None) of a journal file.

    A line cut by a crash ends the journal: the steps before it are kept. A
    journal that is not one (a line of another shape) raises `TranscriptError`,
    never anything else.
    """
    head: dict = {}
    records: list[dict] = []
    cursor = None
    for n, line in enumerate(data.splitlines(), 1):  # bytes: a crash can cut a line in the middle of a character
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past reading
            break  # a line cut by a crash: keep what came before it
        if transcript.too_deep(record):
            raise transcript.TranscriptError(transcript.AT, where=_line(name, n), said=Note(N_("nested too deeply to read")))
        if n == 1:
            if not isinstance(record, dict):
                raise transcript.TranscriptError(transcript.AT, where=_line(name, 1),
                                                 said=Note(N_("not the facts of a saved run")))
            head = record
            continue
        if isinstance(record, dict) and set(record) == {"cursor"}:
            cursor = record["cursor"]
            continue
        if not is_step(record):
            raise transcript.TranscriptError(transcript.AT, where=_line(name, n), said=Note(transcript.NOT_STEP))
        records.append(record)
    return head, records, cursor


def _line(name: str, n: int) -> Note:
    return Note(N_("{file}, line {n}"), file=name, n=n)


def is_step(record: object) -> bool:
    return (isinstance(record, dict) and isinstance(record.get("step"), dict)
            and isinstance(record.get("messages"), list))


def to_trace(head: dict, records: list[dict], cursor: object = None) -> tuple[Trace, dict]:
    """The trace the journal holds (cursor restored, else at its last step) and its settings."""
    replayed = transcript.Journal()
    for n, record in enumerate(records, 2):
        replayed.add(record, Note(N_("step line {n}"), n=n))
    meta = head.get("meta") if isinstance(head.get("meta"), dict) else {}
    settings = head.get("settings") if isinstance(head.get("settings"), dict) else {}
    trace = transcript.from_dict(replayed.transcript(meta), strict=False)
    try:
        trace.goto(int(cursor))  # type: ignore[arg-type]
    except (ValueError, TypeError, OverflowError):
        trace.last()
    return trace, settings
