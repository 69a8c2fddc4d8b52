"""What a caller hands over: bytes, a file, several files (a session with its sub-agents' logs), a zip or a folder.

Each is bounded before it is read (its size, the number of logs, a zip's expanded size), and every failure is an
`ImportFailed` naming the file: nothing a file holds crashes the page or the command that asked.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from ..text.catalogs import N_
from . import claude_code
from .failed import CANNOT_READ, NAMED, OVER_FILES, OVER_UPLOAD, THE_FILE, THE_FILES, UNEXPECTED, UNZIPPED, \
    ImportFailed, listed, named, too_big
from .finish import Imported, finish
from .formats import read_claude_code, read_data
from .notes import FILE_LINE, Note, Notes
from .reading import decode, parse

DEFAULT_MAX_BYTES = 100_000_000  # 100 MB: a long Claude Code session is a few MB; this is far past any real one
MAX_FILES = 2000  # in one upload or zip: a session with that many sub-agents is far past any seen


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
            raise ImportFailed(too_big(len(data), max_bytes))
        return read_data(data if isinstance(data, bytes) else bytes(data), name or "the file", thread)
    except ImportFailed as exc:
        raise named(label, exc) from None
    except MemoryError:  # not a bug of ours: the caller's limit (importers/isolated.py) says what it was
        raise
    except Exception as exc:  # never crash the page that called us; say what happened instead
        raise ImportFailed(UNEXPECTED, name=label, error=f"{type(exc).__name__}: {exc}") from exc


def import_file(path: str | Path, name: str | None = None, *, thread: str | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """`import_bytes` on a file; one too big is refused before it is read."""
    path = Path(path)
    label = name or path.name
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ImportFailed(NAMED, name=label, said=too_big(size, max_bytes))
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFailed(CANNOT_READ, name=label, error=exc.strerror) from None
    if _is_zip(label, data):  # a session zipped with its sub-agents' logs: read as the page's upload reads it
        return import_files([(label, data)], thread=thread, max_bytes=max_bytes)
    return import_bytes(data, label, thread=thread, max_bytes=max_bytes)


def _is_zip(name: str, data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" or (name.lower().endswith(".zip") and data[:2] == b"PK")


def import_files(files: list[tuple[str, bytes]], *, thread: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """Several files as one: a Claude Code session log with its sub-agents' logs (`subagents/agent-<id>.jsonl`),
    given as the files themselves, or as a zip of them. A single file that is not a zip is `import_bytes`."""
    label = listed([name for name, _ in files]) or Note(THE_FILES)
    try:
        entries = _unzipped(files, max_bytes)
        if len(entries) == 1:
            name, data = entries[0]
            return import_bytes(data, name, thread=thread, max_bytes=max_bytes)
        return _session(entries, thread)
    except ImportFailed as exc:
        said = str(exc)
        mentioned = any(said.startswith(f"{name}:") or said.startswith(f"{name} ") for name, _ in files)
        raise (exc if mentioned else named(label, exc)) from None
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
                raise ImportFailed(NAMED, name=label, said=too_big(total, max_bytes))
            out.append((label, path.read_bytes()))
        except OSError as exc:
            raise ImportFailed(CANNOT_READ, name=label, error=exc.strerror) from None
    return out


def _unzipped(files: list[tuple[str, bytes]], max_bytes: int) -> list[tuple[str, bytes]]:
    """The files, each zip among them replaced by the logs it holds (its size checked before it is expanded)."""
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
                    raise ImportFailed(UNZIPPED, name=name, said=too_big(total + expanded, max_bytes))
                for member in members:
                    with archive.open(member) as f:
                        body = f.read(max_bytes - total + 1)  # a header that lies about the size stops here too
                    total += len(body)
                    if total > max_bytes:
                        raise ImportFailed(UNZIPPED, name=name, said=too_big(total, max_bytes))
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
            raise ImportFailed(too_big(total, max_bytes))
    if not out:
        raise ImportFailed(N_("no file was given"))
    return out


def _session(entries: list[tuple[str, bytes]], thread: str | None) -> Imported:
    """Several JSON Lines files read as one Claude Code session: the session's log and its sub-agents' logs."""
    notes = Notes()
    logs = []
    for name, data in entries:
        try:
            text = decode(data)
            if not text or text.isspace():
                notes.warn(N_("{file}: empty; passed over"), file=name)
                continue
            value, records = parse(text, notes)
        except ImportFailed as exc:
            raise named(name, exc) from None
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
    combined, places = combine(logs)
    parsed, threads, chosen = read_claude_code(combined, notes, thread, place=places.__getitem__)
    source = logs[0][0] + (f" with {len(logs) - 1} sub-agent log(s)" if len(logs) > 1 else "")
    imported = finish(parsed, "claude-code", notes, source, threads, chosen)
    imported.logs = [name for name, _ in logs]
    return imported


def combine(logs: list[tuple[str, list]]) -> tuple[list, list]:
    """Several logs' records as one list, each record at its own position, and where each came from
    ("agent-ab.jsonl, line 3"): the records and their places, for `claude_code.read`."""
    places: list = []
    combined = []
    for name, records in logs:
        for line, record in records:
            combined.append((len(places), record))
            places.append(Note(FILE_LINE, file=name, n=line))
    return combined, places
