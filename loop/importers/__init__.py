"""Importers: every file format people replay becomes Loopscope's own trace.

`import_bytes(data, name)` detects the format, converts, and returns the trace
with a list of warnings (what was passed over or repaired, and where): notes
that can be said in any language (notes.py), `Imported.warnings` in English. A
file that cannot be read at all raises `ImportFailed` with one clear message: a Note too (its `note`), English
as `str()`, in the page's language on Replay.

Formats, told apart by their shape, not their file name:

    loopscope            Loopscope's transcript (transcript.py)
    loopscope-journal    a run saved in the runs folder (runs.py), one step a line
    claude-code          a Claude Code session log (.jsonl), see claude_code.py
    anthropic-messages   a bare `messages` list
    anthropic-request    a request body {model, system, messages, tools, max_tokens}
    anthropic-responses  a list of response Message objects
    openai-chat          OpenAI chat completions messages, or a request body holding them
    course-trace         the course's recorded traces (learn-claude-code), see course.py

Every format but Loopscope's own yields a history; `derive.trace_from_history`
turns it into the steps a live run would have made, so every view works on it.
A history that breaks the API's pairing rules is kept as it is and each broken
rule is a warning (the pairs view shows the orphans).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..engine import rules
from ..files import transcript
from ..text.catalogs import N_
from ..engine.trace import MAIN as MAIN_THREAD, Trace
from . import anthropic_api, claude_code, course, openai_chat
from .common import OF_THREAD, Parsed, describe_json, quoted
from .derive import cover_the_rest, trace_from_history, trace_from_threads
from .notes import FILE_LINE, WHERE_FROM, Note, Notes, in_thread, on_line

DEFAULT_MAX_BYTES = 100_000_000  # 100 MB: a long Claude Code session is a few MB; this is far past any real one
MAX_MESSAGES = 50_000  # ten times the longest log the benchmarks replay; a file of a million tiny messages is refused
MAX_STEPS = 250_000  # about five steps a turn: what MAX_MESSAGES gives
SHOWN_VIOLATIONS = 20
KNOWN_BLOCKS = {"text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
KNOWN_FORMATS = N_("a Loopscope transcript, a Claude Code session log (.jsonl), an Anthropic messages list, request "
                    "body or list of responses, OpenAI chat messages or a request body, or a learn-claude-code trace")
NAMED = N_("{name}: {said}")  # a reason, about the file it names
THE_FILE = N_("the file")
THE_FILES = N_("the files")
UNEXPECTED = N_("{name}: the import failed on something Loopscope did not expect ({error}); please report it with "
                "the file")
CANNOT_READ = N_("{name}: cannot read it ({error})")
OVER_FILES = N_("{n} logs, over the limit of {limit} in one import")
OVER_UPLOAD = N_("{n} files, over the limit of {limit} in one import")
UNZIPPED = N_("{name}: {said} once unzipped")
TOO_DEEP = N_("its JSON is nested too deeply to read (over {levels} levels)")

__all__ = ["DEFAULT_MAX_BYTES", "MAX_MESSAGES", "MAX_STEPS", "ImportFailed", "Imported", "Note", "Thread",
           "import_bytes", "import_file", "import_files", "import_path", "trace_from_history"]


class ImportFailed(ValueError):
    """The file cannot be read as any known format; the message says why.

    Its reason is a Note (notes.py), `note`, said in any language: `ImportFailed(N_("… {name} …"), name=...)`, or
    a Note made elsewhere. `str()` of it is the English (the command line's).
    """

    def __init__(self, message: str | Note, /, **values: object) -> None:
        self.note = message if isinstance(message, Note) else Note(message, **values)
        super().__init__(self.note.render())


def _named(name: object, exc: ImportFailed) -> ImportFailed:
    return ImportFailed(NAMED, name=name, said=exc.note)


def _listed(names: list[str]) -> Note | str:
    """Up to three names, and how many more: "a, b, c and 4 more"."""
    shown = ", ".join(names[:3])
    return Note(N_("{names} and {n} more"), names=shown, n=len(names) - 3) if len(names) > 3 else shown


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


def import_file(path: str | Path, name: str | None = None, *, thread: str | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """`import_bytes` on a file; one too big is refused before it is read."""
    path = Path(path)
    label = name or path.name
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ImportFailed(NAMED, name=label, said=_too_big(size, max_bytes))
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFailed(CANNOT_READ, name=label, error=exc.strerror) from None
    if _is_zip(label, data):  # a session zipped with its sub-agents' logs: read as the page's upload reads it
        return import_files([(label, data)], thread=thread, max_bytes=max_bytes)
    return import_bytes(data, label, thread=thread, max_bytes=max_bytes)


def _is_zip(name: str, data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" or (name.lower().endswith(".zip") and data[:2] == b"PK")


MAX_FILES = 2000  # in one upload or zip: a session with that many sub-agents is far past any seen


def import_files(files: list[tuple[str, bytes]], *, thread: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """Several files as one: a Claude Code session log with its sub-agents' logs (`subagents/agent-<id>.jsonl`),
    given as the files themselves, or as a zip of them. A single file that is not a zip is `import_bytes`."""
    label = _listed([name for name, _ in files]) or Note(THE_FILES)
    try:
        entries = _unzipped(files, max_bytes)
        if len(entries) == 1:
            name, data = entries[0]
            return import_bytes(data, name, thread=thread, max_bytes=max_bytes)
        return _session(entries, thread)
    except ImportFailed as exc:
        said = str(exc)
        named = any(said.startswith(f"{name}:") or said.startswith(f"{name} ") for name, _ in files)
        raise (exc if named else _named(label, exc)) from None
    except MemoryError:  # not a bug of ours: the caller's limit (importers/isolated.py) says what it was
        raise
    except Exception as exc:  # never crash the page that called us
        raise ImportFailed(UNEXPECTED, name=label, error=f"{type(exc).__name__}: {exc}") from exc


def import_path(path: str | Path, *, thread: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """A file, a zip, or a folder: a folder (or a session log with a `<session>/subagents/` folder beside it)
    is read as one Claude Code session with its sub-agents' logs."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        if not found:
            raise ImportFailed(N_("{name}: the folder holds no .jsonl log"), name=path.name)
        return import_files(_read_all(found, path, max_bytes), thread=thread, max_bytes=max_bytes)
    beside = path.with_suffix("") / "subagents"
    if path.suffix == ".jsonl" and beside.is_dir():
        found = sorted(p for p in beside.glob("agent-*.jsonl") if p.is_file())
        if found:
            return import_files(_read_all([path, *found], path.parent, max_bytes), thread=thread, max_bytes=max_bytes)
    return import_file(path, thread=thread, max_bytes=max_bytes)


def _read_all(paths: list[Path], base: Path, max_bytes: int) -> list[tuple[str, bytes]]:
    out, total = [], 0
    if len(paths) > MAX_FILES:
        raise ImportFailed(NAMED, name=base.name, said=Note(OVER_FILES, n=len(paths), limit=MAX_FILES))
    for path in paths:
        label = str(path.relative_to(base)) if path.is_relative_to(base) else path.name
        try:
            total += path.stat().st_size
            if total > max_bytes:
                raise ImportFailed(NAMED, name=label, said=_too_big(total, max_bytes))
            out.append((label, path.read_bytes()))
        except OSError as exc:
            raise ImportFailed(CANNOT_READ, name=label, error=exc.strerror) from None
    return out


def _unzipped(files: list[tuple[str, bytes]], max_bytes: int) -> list[tuple[str, bytes]]:
    """The files, each zip among them replaced by the logs it holds (its size checked before it is expanded)."""
    import io
    import zipfile

    out: list[tuple[str, bytes]] = []
    total = 0
    for name, data in files:
        if not _is_zip(name, data):
            total += len(data)
            out.append((name, data))
        else:
            try:
                archive = zipfile.ZipFile(io.BytesIO(data))
                members = [m for m in archive.infolist() if not m.is_dir() and m.filename.endswith(".jsonl")
                           and not m.filename.startswith("__MACOSX/")]
                if not members:
                    raise ImportFailed(N_("{name}: the zip holds no .jsonl log"), name=name)
                if len(members) > MAX_FILES:
                    raise ImportFailed(NAMED, name=name, said=Note(OVER_FILES, n=len(members), limit=MAX_FILES))
                expanded = sum(m.file_size for m in members)
                if total + expanded > max_bytes:  # said before anything is expanded (a zip bomb stops here)
                    raise ImportFailed(UNZIPPED, name=name, said=_too_big(total + expanded, max_bytes))
                for member in members:
                    with archive.open(member) as f:
                        body = f.read(max_bytes - total + 1)  # a header that lies about the size stops here too
                    total += len(body)
                    if total > max_bytes:
                        raise ImportFailed(UNZIPPED, name=name, said=_too_big(total, max_bytes))
                    out.append((member.filename, body))
            except ImportFailed:
                raise
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError) as exc:
                raise ImportFailed(N_("{name}: not a zip Loopscope can open ({error})"), name=name, error=str(exc)) \
                    from None
            except (RuntimeError, OSError) as exc:  # an encrypted member, a broken stream
                raise ImportFailed(N_("{name}: a log in the zip cannot be read ({error})"), name=name,
                                   error=str(exc)) from None
        if len(out) > MAX_FILES:
            raise ImportFailed(OVER_UPLOAD, n=len(out), limit=MAX_FILES)
        if total > max_bytes:
            raise ImportFailed(_too_big(total, max_bytes))
    if not out:
        raise ImportFailed(N_("no file was given"))
    return out


def _session(entries: list[tuple[str, bytes]], thread: str | None) -> Imported:
    """Several JSON Lines files read as one Claude Code session: the session's log and its sub-agents' logs."""
    notes = Notes()
    logs = []
    for name, data in entries:
        try:
            text = _decode(data)
            if not text or text.isspace():
                notes.warn(N_("{file}: empty; passed over"), file=name)
                continue
            value, records = _parse(text, notes)
        except ImportFailed as exc:
            raise _named(name, exc) from None
        if records is None:
            records = [(1, value)]
        if not any(claude_code.looks_like(r) for _, r in records):
            raise ImportFailed(N_("{name} is not a Claude Code log; several files are read together only as one "
                                  "Claude Code session and its sub-agents' logs"), name=name)
        logs.append((name, records))
    if not logs:
        raise ImportFailed(N_("every file is empty"))
    mains = [name for name, records in logs if any(
        isinstance(r, dict) and r.get("type") in claude_code.MESSAGE_TYPES and r.get("isSidechain") is False
        for _, r in records)]
    if len(mains) > 1:
        raise ImportFailed(N_("several sessions' logs ({names}): give one session's log with its subagents/ files"),
                           names=", ".join(mains[:4]))
    logs.sort(key=lambda log: (log[0] not in mains, log[0]))
    places: list[str] = []
    combined = []
    for name, records in logs:
        for line, record in records:
            combined.append((len(places), record))
            places.append(Note(FILE_LINE, file=name, n=line))
    try:
        parsed, listing, chosen = claude_code.read(combined, notes, thread, place=places.__getitem__)
    except claude_code.UnknownThread as exc:
        raise ImportFailed(exc.note) from None
    source = logs[0][0] + (f" with {len(logs) - 1} sub-agent log(s)" if len(logs) > 1 else "")
    imported = _finish(parsed, "claude-code", notes, source, [Thread(*t) for t in listing], chosen)
    imported.logs = [name for name, _ in logs]
    return imported


def import_bytes(data: bytes, name: str = "", *, thread: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """Detect the format of `data` and import it.

    `thread` picks a thread of a Claude Code log (see `Imported.threads`); the
    main conversation is imported by default. A file over `max_bytes` is
    refused before it is parsed.
    """
    label = name or Note(THE_FILE)
    try:
        if len(data) > max_bytes:  # before anything else touches it
            raise ImportFailed(_too_big(len(data), max_bytes))
        return _import(data if isinstance(data, bytes) else bytes(data), name or "the file", thread)
    except ImportFailed as exc:
        raise _named(label, exc) from None
    except MemoryError:  # not a bug of ours: the caller's limit (importers/isolated.py) says what it was
        raise
    except Exception as exc:  # never crash the page that called us; say what happened instead
        raise ImportFailed(UNEXPECTED, name=label, error=f"{type(exc).__name__}: {exc}") from exc


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def _too_big(size: int, limit: int) -> Note:
    return Note(N_("the file is {size}, over the import limit of {limit}; nothing was read (raise the limit with "
                   "max_bytes, or --max-mb on the command line)"), size=_size(size), limit=_size(limit))


def _import(data: bytes, name: str, thread: str | None) -> Imported:
    text = _decode(data)
    if not text or text.isspace():
        raise ImportFailed(N_("the file is empty"))
    notes = Notes()
    value, records = _parse(text, notes)
    threads: list[Thread] = []
    chosen = None
    if records is not None:
        if records and isinstance(records[0][1], dict) and "meta" in records[0][1] and "step" not in records[0][1]:
            return _journal(records, notes)
        if any(claude_code.looks_like(r) for _, r in records):
            fmt = "claude-code"
            parsed, listing, chosen = _claude_code(records, notes, thread)
            threads = [Thread(*t) for t in listing]
            thread = None
        elif all(isinstance(r, dict) and "role" in r for _, r in records):
            value = [r for _, r in records]  # one message a line: read as a list
            fmt, parsed = _by_shape(value, notes)
        else:
            raise ImportFailed(N_("JSON Lines, but not a log of any known format: the first line holds {what}. "
                                  "Loopscope reads {formats}"), what=describe_json(records[0][1]),
                               formats=Note(KNOWN_FORMATS))
    else:
        if isinstance(value, dict) and value.get("format") == transcript.FORMAT:
            return _loopscope(value, notes)
        if claude_code.looks_like(value):  # a log of one line
            fmt = "claude-code"
            parsed, listing, chosen = _claude_code([(1, value)], notes, thread)
            threads = [Thread(*t) for t in listing]
            thread = None
        else:
            fmt, parsed = _by_shape(value, notes)
    if thread is not None:
        notes.warn(N_("thread {thread} was asked for, but only Claude Code logs have threads; it is ignored"),
                   thread=repr(thread))
    return _finish(parsed, fmt, notes, name, threads, chosen)


def _finish(parsed: Parsed, fmt: str, notes: Notes, name: str, threads: list, chosen: str | None) -> Imported:
    """The trace of what was read: its steps derived, its broken rules and odd blocks said."""
    if not parsed.messages:
        said = notes.items()[:3]
        if said:
            raise ImportFailed(N_("read as {format}, but no message could be read: {said}"), format=fmt, said=said)
        raise ImportFailed(N_("read as {format}, but no message could be read"), format=fmt)
    _not_too_long(len(parsed.messages), 0)
    derived: list[str] = []
    meta = dict(parsed.meta)
    if parsed.threads:  # sub-agents, or a history rewritten on the way: every thread, every stretch
        trace = trace_from_threads(parsed.threads, meta, parsed.tool_details, warnings=derived)
    else:
        trace = trace_from_history(parsed.messages, meta, parsed.responses, parsed.tool_details,
                                   times=parsed.times, warnings=derived, origins=parsed.origins)
    _not_too_long(sum(len(t.messages) for t in trace.threads.values()), len(trace.steps))
    for note in derived:
        notes.add(_located(note, parsed.origins))
    if parsed.threads:
        _broken_threads(trace, parsed.origins, notes)
    else:
        _broken_rules(parsed.messages, parsed.origins, notes)
    _unknown_blocks(parsed, notes)
    meta["imported"] = {"format": fmt, "source": name, "warnings": notes.render(),  # in English: the record
                        **({"thread": chosen} if chosen else {})}
    return Imported(trace, fmt, notes.items(), threads, chosen)


def _decode(data: bytes) -> str:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise ImportFailed(N_("the file is UTF-16 text; Loopscope reads UTF-8 (save it again as UTF-8)"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportFailed(N_("not UTF-8 text: line {line}, byte {byte} ({hex}) cannot be decoded"), line=line,
                           byte=exc.start, hex=f"0x{data[exc.start]:02x}") from None
    return text.removeprefix("\ufeff")


def _parse(text: str, notes: Notes) -> tuple[object, list | None]:
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
            records.append((n, transcript.parse_json(raw)))
        except json.JSONDecodeError as exc:
            bad.append((n, exc))
        except transcript.NumberTooLong as exc:
            raise ImportFailed(NAMED, name=on_line(n), said=Note(str(exc))) from None
        except RecursionError:
            raise ImportFailed(NAMED, name=on_line(n), said=Note(N_("its JSON is nested too deeply to read"))) \
                from None
        if records and records[-1][0] == n and transcript.too_deep(records[-1][1]):
            raise ImportFailed(NAMED, name=on_line(n), said=Note(TOO_DEEP, levels=transcript.MAX_DEPTH))
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


def _by_shape(value: object, notes: Notes) -> tuple[str, Parsed]:
    """A JSON value (not a Loopscope transcript, not a Claude Code log) by its shape."""
    if course.looks_like(value):
        return "course-trace", course.read(value, notes)
    if _wrapped_request(value):  # {provider, request, baseURL}: a recorder's envelope around the body sent
        fmt, parsed = _by_shape(value["request"], notes)
        around = {k: v for k, v in value.items() if k != "request"}
        if around:
            parsed.meta["recorded_with"] = around
            notes.warn(N_("a recorded request: the body under request is imported; the fields around it ({fields}) "
                          "are kept in the transcript (`recorded_with`)"), fields=", ".join(around))
        return fmt, parsed
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        tools = value.get("tools") if isinstance(value.get("tools"), list) else []
        if openai_chat.looks_like(value["messages"]) or any(isinstance(t, dict) and "function" in t for t in tools):
            return "openai-chat", openai_chat.read_request(value, notes)
        return "anthropic-request", anthropic_api.read_request(value, notes)
    if anthropic_api.is_response(value):
        return "anthropic-responses", anthropic_api.read_responses([value], notes)
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        if all(anthropic_api.is_response(v) for v in value):
            return "anthropic-responses", anthropic_api.read_responses(value, notes)
        if any(isinstance(v, dict) and "role" in v for v in value):
            if openai_chat.looks_like(value):
                return "openai-chat", openai_chat.read_messages(value, notes)
            return "anthropic-messages", anthropic_api.read_messages(value, notes)
    raise ImportFailed(N_("valid JSON but not a transcript of any known format: it is {what}. Loopscope reads "
                          "{formats}"), what=describe_json(value), formats=Note(KNOWN_FORMATS))


def _wrapped_request(value: object) -> bool:
    return isinstance(value, dict) and "messages" not in value and isinstance(value.get("request"), dict) \
        and isinstance(value["request"].get("messages"), list)


def _claude_code(records: list, notes: Notes, thread: str | None) -> tuple[Parsed, list, str]:
    try:
        return claude_code.read(records, notes, thread)
    except claude_code.UnknownThread as exc:
        raise ImportFailed(exc.note) from None


def _not_too_long(n_messages: int, n_steps: int) -> None:
    """Refuse a history longer than any a person replays (MAX_MESSAGES, MAX_STEPS), before it costs more."""
    if n_messages > MAX_MESSAGES:
        raise ImportFailed(N_("it holds {n:,} messages, over the limit of {limit:,}; nothing was read"), n=n_messages,
                           limit=MAX_MESSAGES)
    if n_steps > MAX_STEPS:
        raise ImportFailed(N_("it makes {n:,} steps, over the limit of {limit:,}; nothing was read"), n=n_steps,
                           limit=MAX_STEPS)


def _loopscope(data: dict, notes: Notes, fmt: str = "loopscope") -> Imported:
    family = [data, *(b for b in data.get("branches") or [] if isinstance(b, dict))]  # a branch is a trace too
    _not_too_long(*(sum(len(t.get(k)) for t in family if isinstance(t.get(k), list)) for k in ("messages", "steps")))
    try:
        trace = transcript.from_dict(data, strict=False)
    except transcript.TranscriptError as exc:
        raise ImportFailed(N_("a Loopscope transcript that cannot be loaded: {error}"), error=exc.note) from None
    for trace_or_branch in (trace, *trace.branches):
        rest = cover_the_rest(trace_or_branch)
        if rest:
            notes.add(rest if trace_or_branch is trace else Note(N_("a branch: {said}"), said=rest))
    _broken_rules(trace.messages, [], notes)
    return Imported(trace, fmt, notes.items())


def _journal(records: list, notes: Notes) -> Imported:
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
    return _loopscope(journal.transcript(meta), notes, "loopscope-journal")


BREAKS = N_("{where}: breaks an API rule, kept as recorded: {rule}")  # the rule in the API's own words
MORE_BROKEN = N_("… and {n} more places that break the API's tool-use rules (`python -m loop check` lists them all)")


def _located(note: Note, origins: list) -> Note:
    """A note about `messages.N` (its value `where`) with where message N came from in the file, when that says more."""
    where = note.values.get("where")
    if isinstance(where, str) and where.startswith("messages.") and where[9:].split(".")[0].isdigit():
        index = int(where[9:].split(".")[0])
        if index < len(origins) and origins[index] != f"messages[{index}]":
            return note.with_values(where=Note(WHERE_FROM, where=where, origin=origins[index]))
    return note


def _broken_rules(messages: list, origins: list, notes: Notes) -> None:
    broken = rules.check(messages, as_request=False)
    for violation in broken[:SHOWN_VIOLATIONS]:
        notes.add(_located(Note(BREAKS, where=violation.where, rule=violation.message), origins))
    if len(broken) > SHOWN_VIOLATIONS:
        notes.warn(MORE_BROKEN, n=len(broken) - SHOWN_VIOLATIONS)


def _broken_threads(trace: Trace, origins: list, notes: Notes) -> None:
    """`_broken_rules` for a trace of several threads or stretches: every final history and every one sent."""
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


AFTER_COMPACTION = N_("{where} (after compaction {k})")


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
