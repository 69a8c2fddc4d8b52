"""Loopscope's own files: a saved transcript, and a run's journal (one step a line), read back."""

from __future__ import annotations

from ..files import transcript
from ..text.catalogs import N_
from .derive import cover_the_rest
from .failed import ImportFailed
from .finish import Imported, broken_rules, not_too_long
from .notes import Note, Notes, on_line


def read_transcript(data: dict, notes: Notes, fmt: str = "loopscope") -> Imported:
    """A Loopscope transcript (and its branches), loaded without the pairing check: each broken rule is said."""
    family = [data, *(b for b in data.get("branches") or [] if isinstance(b, dict))]  # a branch is a trace too
    not_too_long(*(sum(len(t.get(k)) for t in family if isinstance(t.get(k), list)) for k in ("messages", "steps")))
    try:
        trace = transcript.from_dict(data, strict=False)
    except transcript.TranscriptError as exc:
        raise ImportFailed(N_("a Loopscope transcript that cannot be loaded: {error}"), error=exc.note) from None
    for trace_or_branch in (trace, *trace.branches):
        rest = cover_the_rest(trace_or_branch)
        if rest:
            notes.add(rest if trace_or_branch is trace else Note(N_("a branch: {said}"), said=rest))
    broken_rules(trace.messages, [], notes)
    return Imported(trace, fmt, notes.items())


def is_journal(records: list) -> bool:
    """JSON Lines whose first line is a run's facts ({"meta": ...}), not a step."""
    return bool(records) and isinstance(records[0][1], dict) and "meta" in records[0][1] \
        and "step" not in records[0][1]


def read_journal(records: list, notes: Notes) -> Imported:
    """A run saved in the runs folder: the first line its facts, then a step and the messages it added a line."""
    head = records[0][1]
    journal = transcript.Journal()
    for n, record in records[1:]:
        if isinstance(record, dict) and set(record) == {"cursor"}:
            continue
        try:
            journal.add(record if isinstance(record, dict) else {}, on_line(n))
        except transcript.TranscriptError:
            notes.count(N_("passed over lines that are not a step of the run"), on_line(n))
    meta = head.get("meta") if isinstance(head.get("meta"), dict) else {}
    return read_transcript(journal.transcript(meta), notes, "loopscope-journal")
