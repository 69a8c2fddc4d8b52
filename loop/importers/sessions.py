"""A Claude Code sessions folder (~/.claude/projects/<encoded cwd>/<session>.jsonl), listed without importing it.

A long session is megabytes; a folder holds hundreds. The list reads what it
needs and no more: the head of each log (its date, project and first request)
and its size; its sub-agents, compactions and errors are counted by looking for
the keys that mark them in the raw bytes (`"agentId":"…"`, `"subtype":"compact_boundary"`, `"is_error":true`),
not by parsing every line, a chunk at a time and at most `SCAN_BYTES` of a log. A key written inside a string of
the log is escaped there (`\\"is_error\\"`), so only the records' own keys are counted.

The folder is the user's, written by whatever their agent ran, and the server may be root: only regular files are
read, every name opened from its folder's descriptor without following a link (loop/files/regular.py). A link, a
FIFO, a device or a socket named `*.jsonl`, or a project folder that is a link, is not listed and is said
(`Listing.refused`), never opened. `read_session` reads a listed session's logs the same way, within a limit.

Whether a page may list a folder of the server's machine at all is `refused()`: only when the operator said so
(`LIST_VARIABLE`), the server listens on loopback alone, and it does not serve a class.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..files import regular
from ..files.regular import NotRegular, TooBig, not_read
from ..text.catalogs import N_
from .notes import Note

DEFAULT_DIR = Path("~/.claude/projects")
SESSIONS_VARIABLE = "LOOPSCOPE_SESSIONS_DIR"  # the folder Replay lists; unset: Replay lists none
LIST_VARIABLE = "LOOPSCOPE_LIST_SESSIONS"  # "1": the operator says this server is theirs alone, so it may list it
CLASSROOM_VARIABLE = "LOOPSCOPE_CLASSROOM"  # set by deploy/classroom.py on every replica it starts
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEAD_BYTES = 64 * 1024  # where a session's first request is looked for: it is in its first few records
SCAN_BYTES = 256 * 2**20  # of a log, looked through for the marks counted: past any log an import takes
REQUEST_CHARS = 120
MAX_LOGS = 2000  # sub-agents' logs read with a session, as an import takes them (importers.MAX_FILES)

_AGENT = re.compile(rb'"agentId": ?"([^"\\]{1,200})"')
_COMPACTION = (b'"subtype":"compact_boundary"', b'"subtype": "compact_boundary"')  # compact JSON, or Python's
_ERROR = (b'"is_error":true', b'"is_error": true')
_KEEP = 512  # the end of a chunk looked at again with the next one: longer than any mark (an agent id is 200 at most)
_seen: dict[tuple, "Session"] = {}  # a session unchanged since it was last listed (same size and time): not read again

OFF = N_("The sessions folder is not listed: {variable} is not set.")
NOT_SAID = N_("The sessions folder is not listed: {variable} is not set to 1. Set it only where this server is yours "
              "alone: whoever opens this page can open every session in the folder.")
BEYOND_LOOPBACK = N_("The sessions folder is not listed: this server listens on {address}, beyond this machine "
                     "(server.address), and your sessions are yours alone. Run it with --server.address 127.0.0.1 "
                     "to list them.")
IN_A_CLASS = N_("The sessions folder is not listed: this server serves a class through the balancer.")
NOT_A_FOLDER = N_("The sessions folder is not listed: {path} is not a folder.")
CANNOT_READ = N_("{name}: cannot read it ({error})")


@dataclass(frozen=True, slots=True)
class Session:
    """One session's log, as the list shows it."""

    path: Path
    project: str  # the folder it is in (Claude Code's encoded working directory), or its `cwd` when it says it
    modified: float  # the log's last write, seconds since the epoch: the list is newest first
    first_request: str | None  # None: none in the head of the log
    size: int  # bytes: its log and its sub-agents' logs
    sub_agents: int  # distinct agent ids its logs name, and sub-agent logs beside it
    compactions: int
    errors: int  # tool_results marked is_error
    folder: Path = Path()  # the folder listed: the log is opened again from it, following no link

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.modified, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    @property
    def names(self) -> list[str]:
        """The names from the folder listed down to the log."""
        return list(self.path.relative_to(self.folder).parts)


@dataclass
class Listing:
    """A folder listed: its sessions, newest first, and what in it was not read, and why (a Note each)."""

    sessions: list[Session] = field(default_factory=list)
    refused: list[Note] = field(default_factory=list)


def sessions(folder: str | Path) -> list[Session]:
    """Every session log in `folder` (a projects folder, or one project's folder), newest first."""
    return listing(folder).sessions


def listing(folder: str | Path) -> Listing:
    """Every session log in `folder` (a projects folder, or one project's folder), newest first, and each name that
    looks like one but is not a regular file (a link, a FIFO, a device), said and never opened. OSError when the
    folder itself cannot be opened."""
    folder = Path(folder).expanduser()
    found = Listing()
    top = regular.open_folder(folder)
    try:
        logs: list[list[str]] = []
        for name, kind in regular.entries(top):
            if name.startswith("."):  # hidden, as a shell's `*` leaves it out
                continue
            if name.endswith(".jsonl"):
                logs.append([name])
            elif kind == "folder":
                try:
                    inner = regular.open_in(top, [name], "folder")
                except NotRegular as exc:  # made a link since it was listed
                    found.refused.append(exc.note)
                    continue
                except OSError:
                    continue
                try:
                    logs += [[name, log] for log, _ in regular.entries(inner)
                             if log.endswith(".jsonl") and not log.startswith(".")]
                finally:
                    os.close(inner)
            elif kind == "link":  # a project's folder, perhaps: not followed
                found.refused.append(not_read(name, kind))
        for names in logs:
            try:
                found.sessions.append(_session(top, names, folder, found.refused))
            except NotRegular as exc:  # the log, or its project's folder since it was listed
                found.refused.append(exc.note)
            except OSError:  # removed or unreadable while listing: not listed
                continue
    finally:
        os.close(top)
    found.sessions.sort(key=lambda s: (-s.modified, str(s.path)))
    return found


def _beside(top: int, names: list[str]) -> tuple[list[list[str]], list[Note]]:
    """The sub-agents' logs of the session at `names` (`<session>/subagents/agent-*.jsonl`): the names of those that
    are regular files, below `top`, and why each other one is not read."""
    stem = [*names[:-1], names[-1].removesuffix(".jsonl")]
    try:
        folder = regular.open_in(top, [*stem, "subagents"], "folder")
    except NotRegular as exc:
        return [], ([] if exc.kind == "file" else [exc.note])
    except OSError:  # none (the usual case)
        return [], []
    try:
        found, refused = [], []
        for name, kind in regular.entries(folder):
            if not (name.startswith("agent-") and name.endswith(".jsonl")):
                continue
            if kind != "file":
                refused.append(not_read("/".join([*stem, "subagents", name]), kind))
            elif len(found) < MAX_LOGS:
                found.append([*stem, "subagents", name])
        return found, refused
    finally:
        os.close(folder)


def _stat(top: int, names: list[str]) -> os.stat_result:
    fd = regular.open_in(top, names)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _session(top: int, names: list[str], folder: Path, refused: list[Note]) -> Session:
    stat = _stat(top, names)
    beside, not_beside = _beside(top, names)
    refused += not_beside
    stamps = [(stat.st_size, stat.st_mtime_ns)]
    for log in list(beside):
        try:
            info = _stat(top, log)
            stamps.append((info.st_size, info.st_mtime_ns))
        except NotRegular as exc:  # swapped since it was listed
            refused.append(exc.note)
            beside.remove(log)
        except OSError:
            beside.remove(log)
    path = folder.joinpath(*names)
    key = (str(path), str(folder), tuple(stamps), tuple(log[-1] for log in beside))
    if key in _seen:
        return _seen[key]
    agents: set[bytes] = {log[-1].removeprefix("agent-").removesuffix(".jsonl").encode() for log in beside}
    counts = [0, 0]  # compactions, errors
    head = _scan(top, names, agents, counts, HEAD_BYTES)
    for log in beside:
        try:
            _scan(top, log, agents, counts, 0)
        except OSError:  # removed, or swapped for a link, since: its marks are not counted
            continue
    agents = {a for a in agents if not a.startswith(b"acompact")}  # a compaction's own call: no sub-agent
    request, cwd = _head(head)
    project = cwd or (names[0] if len(names) > 1 else folder.name)
    found = _seen[key] = Session(path, project, stat.st_mtime, request, sum(s[0] for s in stamps), len(agents),
                                 counts[0], counts[1], folder)
    return found


def _scan(top: int, names: list[str], agents: set[bytes], counts: list[int], head_bytes: int) -> bytes:
    """Look through the log at `names` (its first SCAN_BYTES, a chunk at a time) for the marks counted; its head."""
    fd = regular.open_in(top, names)
    head, tail = b"", b""
    try:
        for chunk in regular.chunks(fd, SCAN_BYTES):
            if len(head) < head_bytes:
                head += chunk[:head_bytes - len(head)]
            data = tail + chunk
            # Each mark is counted where it starts: in this chunk, unless in its last _KEEP bytes, which the next
            # chunk looks at again (a mark cut by the chunk's end is whole there).
            counted = len(data) - _KEEP
            agents.update(m.group(1) for m in _AGENT.finditer(data) if m.start() < counted)
            counts[0] += sum(_count(data, mark, counted) for mark in _COMPACTION)
            counts[1] += sum(_count(data, mark, counted) for mark in _ERROR)
            tail = data[max(counted, 0):]
    finally:
        os.close(fd)
    agents.update(_AGENT.findall(tail))  # the end of the log: counted whole
    counts[0] += sum(tail.count(mark) for mark in _COMPACTION)
    counts[1] += sum(tail.count(mark) for mark in _ERROR)
    return head


def _count(data: bytes, mark: bytes, before: int) -> int:
    """How many times `mark` starts in `data` before `before`."""
    return data.count(mark, 0, before + len(mark) - 1) if before > 0 else 0


def read_session(folder: str | Path, names: list[str], max_bytes: int) -> list[tuple[str, bytes]]:
    """A listed session's log and its sub-agents' logs, (name, bytes) as importers.import_files takes them (named
    from the log's own folder), read from `folder` without following a link, at most `max_bytes` together.
    ImportFailed says why not."""
    from . import ImportFailed  # the importers' package: only where a session is opened

    label = "/".join(names)
    try:
        top = regular.open_folder(folder)
    except OSError as exc:
        raise ImportFailed(CANNOT_READ, name=str(folder), error=exc.strerror or str(exc)) from None
    try:
        beside, _ = _beside(top, names)  # those that are not regular files are passed over, as the list said
        files, total = [], 0
        for log in [names, *beside]:
            try:
                fd = regular.open_in(top, log)
            except NotRegular as exc:
                if log is names:
                    raise ImportFailed(exc.note) from None
                continue
            try:
                data = regular.read_at(fd, 0, max_bytes - total + 1)  # never more than the limit, however big
            finally:
                os.close(fd)
            total += len(data)
            if total > max_bytes:  # the session's logs together
                raise TooBig(label, total, max_bytes)
            files.append(("/".join(log[len(names) - 1:]), data))
        return files
    except TooBig as exc:
        raise ImportFailed(exc.note) from None
    except OSError as exc:
        raise ImportFailed(CANNOT_READ, name=label, error=exc.strerror or str(exc)) from None
    finally:
        os.close(top)


def _head(head: bytes) -> tuple[str | None, str | None]:
    """The first request of the main thread, and the working directory, from the head of the log."""
    cwd = None
    for raw in head.split(b"\n"):
        try:
            record = json.loads(raw)
        except ValueError:  # a line cut by HEAD_BYTES, or not JSON
            continue
        if not isinstance(record, dict):
            continue
        cwd = cwd or (record.get("cwd") if isinstance(record.get("cwd"), str) else None)
        if record.get("type") != "user" or record.get("isSidechain") or record.get("isMeta") \
                or record.get("isCompactSummary"):
            continue
        text = _text(record.get("message"))
        if text:
            return _short(text), cwd
    return None, cwd


def _text(message: object) -> str | None:
    """A user message's own words: its text, not a tool_result."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip() or None
    if isinstance(content, list):
        words = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]
        if words and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return " ".join(words).strip() or None
    return None


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REQUEST_CHARS else line[:REQUEST_CHARS - 1] + "…"


def size_label(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{n / 1e3:.0f} KB" if n >= 1000 else f"{n} B"


def refused(address: str | None, environ: dict | None = None) -> Note | None:
    """Why a page must not list the sessions folder (a Note), or None: it may.

    The folder is the user's own: a page lists it only when the operator says so (`LIST_VARIABLE` set to 1 beside
    the folder's variable: no address proves a server is one person's, a proxy or another user of the machine
    reaches loopback too), the server listens on loopback alone (Streamlit's `server.address`; unset, it listens
    on every interface), and no class is served through the balancer.
    """
    environ = os.environ if environ is None else environ
    folder = environ.get(SESSIONS_VARIABLE)
    if not folder:
        return Note(OFF, variable=SESSIONS_VARIABLE)
    if environ.get(LIST_VARIABLE, "").strip() != "1":
        return Note(NOT_SAID, variable=LIST_VARIABLE)
    if environ.get(CLASSROOM_VARIABLE):
        return Note(IN_A_CLASS)
    if (address or "").strip("[]") not in LOOPBACK:
        return Note(BEYOND_LOOPBACK, address=address or "0.0.0.0")
    if not Path(folder).expanduser().is_dir():
        return Note(NOT_A_FOLDER, path=folder)
    return None
