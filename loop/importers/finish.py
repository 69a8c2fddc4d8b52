"""What was read becomes the import's answer: the trace derived from the history, and every broken rule and odd
block said."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..engine import rules
from ..engine.trace import MAIN as MAIN_THREAD, Trace
from ..files import transcript
from ..text.catalogs import N_
from .common import OF_THREAD, Parsed, quoted
from .derive import trace_from_history, trace_from_threads
from .failed import ImportFailed
from .notes import WHERE_FROM, Note, Notes, in_thread

MAX_MESSAGES = 50_000  # ten times the longest log the benchmarks replay; a file of a million tiny messages is refused
MAX_STEPS = 250_000  # about five steps a turn: what MAX_MESSAGES gives
SHOWN_VIOLATIONS = 20
KNOWN_BLOCKS = {"text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
BREAKS = N_("{where}: breaks an API rule, kept as recorded: {rule}")  # the rule in the API's own words
MORE_BROKEN = N_("… and {n} more places that break the API's tool-use rules (`python -m loop check` lists them all)")
AFTER_COMPACTION = N_("{where} (after compaction {k})")


class Thread(NamedTuple):
    """One thread of a Claude Code log: the main conversation or a sub-agent's (sidechain)."""

    id: str  # pass it as import_bytes(..., thread=id)
    label: str
    n_records: int  # its user and assistant records


@dataclass
class Imported:
    trace: Trace
    format: str  # e.g. "loopscope", "claude-code", "anthropic-messages", "openai-chat", "course-trace"
    notes: list[Note] = field(default_factory=list)  # the warnings, each to say in any language (Note.render)
    threads: list[Thread] = field(default_factory=list)  # Claude Code logs: every thread, the main one first
    thread: str | None = None  # the thread imported (Claude Code logs)
    logs: list[str] = field(default_factory=list)  # several files read as one session: their names, its own log first

    @property
    def warnings(self) -> list[str]:
        """The warnings in English: the command line's, and the transcript's record (meta["imported"])."""
        return [note.render() for note in self.notes]


def finish(parsed: Parsed, fmt: str, notes: Notes, name: str, threads: list, chosen: str | None) -> Imported:
    """The trace of what was read: its steps derived, its broken rules and odd blocks said."""
    if not parsed.messages:
        said = notes.items()[:3]
        if said:
            raise ImportFailed(N_("read as {format}, but no message could be read: {said}"), format=fmt, said=said)
        raise ImportFailed(N_("read as {format}, but no message could be read"), format=fmt)
    not_too_long(len(parsed.messages), 0)
    derived: list[str] = []
    meta = dict(parsed.meta)
    if parsed.threads:  # sub-agents, or a history rewritten on the way: every thread, every stretch
        trace = trace_from_threads(parsed.threads, meta, parsed.tool_details, warnings=derived)
    else:
        trace = trace_from_history(parsed.messages, meta, parsed.responses, parsed.tool_details,
                                   times=parsed.times, warnings=derived, origins=parsed.origins)
    not_too_long(sum(len(t.messages) for t in trace.threads.values()), len(trace.steps))
    for note in derived:
        notes.add(_located(note, parsed.origins))
    if parsed.threads:
        _broken_threads(trace, parsed.origins, notes)
    else:
        broken_rules(parsed.messages, parsed.origins, notes)
    _unknown_blocks(parsed, notes)
    meta["imported"] = {"format": fmt, "source": name, "warnings": notes.render(),  # in English: the record
                        **({"thread": chosen} if chosen else {})}
    return Imported(trace, fmt, notes.items(), threads, chosen)


def not_too_long(n_messages: int, n_steps: int) -> None:
    """Refuse a history longer than any a person replays (MAX_MESSAGES, MAX_STEPS), before it costs more."""
    if n_messages > MAX_MESSAGES:
        raise ImportFailed(N_("it holds {n:,} messages, over the limit of {limit:,}; nothing was read"), n=n_messages,
                           limit=MAX_MESSAGES)
    if n_steps > MAX_STEPS:
        raise ImportFailed(N_("it makes {n:,} steps, over the limit of {limit:,}; nothing was read"), n=n_steps,
                           limit=MAX_STEPS)


def _located(note: Note, origins: list) -> Note:
    """A note about `messages.N` (its value `where`) with where message N came from in the file, when that says more."""
    where = note.values.get("where")
    if isinstance(where, str) and where.startswith("messages.") and where[9:].split(".")[0].isdigit():
        index = int(where[9:].split(".")[0])
        if index < len(origins) and origins[index] != f"messages[{index}]":
            return note.with_values(where=Note(WHERE_FROM, where=where, origin=origins[index]))
    return note


def broken_rules(messages: list, origins: list, notes: Notes) -> None:
    """Each place `messages` breaks the API's tool-use rules, said (the first SHOWN_VIOLATIONS; then how many more)."""
    broken = rules.check(messages, as_request=False)
    for violation in broken[:SHOWN_VIOLATIONS]:
        notes.add(_located(Note(BREAKS, where=violation.where, rule=violation.message), origins))
    if len(broken) > SHOWN_VIOLATIONS:
        notes.warn(MORE_BROKEN, n=len(broken) - SHOWN_VIOLATIONS)


def _broken_threads(trace: Trace, origins: list, notes: Notes) -> None:
    """`broken_rules` for a trace of several threads or stretches: every final history and every one sent."""
    broken = transcript.violations(trace)
    for where, violation in broken[:SHOWN_VIOLATIONS]:
        said = Note(BREAKS, where=violation.where, rule=violation.message)
        if not where:
            notes.add(_located(said, origins))
        elif where.startswith("thread "):
            notes.add(in_thread(where.removeprefix("thread "), said))
        else:  # "steps[i]"
            notes.warn(N_("the history sent at step {step}: {said}"), step=int(where[6:-1]) + 1, said=said)
    if len(broken) > SHOWN_VIOLATIONS:
        notes.warn(MORE_BROKEN, n=len(broken) - SHOWN_VIOLATIONS)


def _place_in(thread: str, k: int):
    """How message i of stretch k of `thread` is named in a warning: with its thread and stretch, so that places
    of several threads listed together can be told apart."""
    def place(i: int) -> str | Note:
        where: str | Note = f"messages.{i}"
        if thread != MAIN_THREAD:
            where = Note(OF_THREAD, where=where, thread=thread)
        return Note(AFTER_COMPACTION, where=where, k=k) if k else where
    return place


def _unknown_blocks(parsed: Parsed, notes: Notes, place=lambda i: f"messages.{i}") -> None:
    if parsed.threads:  # every stretch of every thread, each as a history of its own
        for thread in parsed.threads:
            for k, segment in enumerate(thread.segments):
                _unknown_blocks(Parsed(messages=segment.messages, responses=segment.responses), notes,
                                _place_in(thread.id, k))
        return
    for i, message in enumerate(parsed.messages):
        for block in rules.blocks(message):
            kind = block.get("type") if isinstance(block, dict) else None
            if not (isinstance(kind, str) and kind in KNOWN_BLOCKS):
                notes.count(N_("kept blocks of type {kind}, which Loopscope shows raw"), place(i),
                            kind=quoted(kind))
    for i, recorded in parsed.responses.items():
        content = recorded.get("content")
        # a response whose message is in the history was counted above; one never appended was not
        message = parsed.messages[i] if 0 <= i < len(parsed.messages) else None
        appended = isinstance(message, dict) and content is message.get("content")
        for block in content if isinstance(content, list) and not appended else []:
            kind = block.get("type") if isinstance(block, dict) else None
            if not (isinstance(kind, str) and kind in KNOWN_BLOCKS):
                notes.count(N_("kept blocks of type {kind} in recorded responses, which Loopscope shows raw"),
                            Note(N_("the call for {where}"), where=place(i)), kind=quoted(kind))
