"""A Claude Code sessions folder (~/.claude/projects/<encoded cwd>/<session>.jsonl), listed without importing it.

A long session is megabytes; a folder holds hundreds. The list reads what it
needs and no more: the head of each log (its date, project and first request)
and its size; its sub-agents, compactions and errors are counted by looking for
the keys that mark them in the raw bytes (`"agentId":"…"`, `"subtype":"compact_boundary"`, `"is_error":true`),
not by parsing every line. A key written inside a string of the log is escaped
there (`\\"is_error\\"`), so only the records' own keys are counted.

Whether a page may list a folder of the server's machine at all is `refused()`: only when the server is the
user's own (it listens on loopback alone, and does not serve a class).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..text.catalogs import N_
from .notes import Note

DEFAULT_DIR = Path("~/.claude/projects")
SESSIONS_VARIABLE = "LOOPSCOPE_SESSIONS_DIR"  # the folder Replay lists; unset: Replay lists none
CLASSROOM_VARIABLE = "LOOPSCOPE_CLASSROOM"  # set by deploy/classroom.py on every replica it starts
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEAD_BYTES = 64 * 1024  # where a session's first request is looked for: it is in its first few records
REQUEST_CHARS = 120

_AGENT = re.compile(rb'"agentId": ?"([^"\\]{1,200})"')
_COMPACTION = (b'"subtype":"compact_boundary"', b'"subtype": "compact_boundary"')  # compact JSON, or Python's
_ERROR = (b'"is_error":true', b'"is_error": true')
_seen: dict[tuple, "Session"] = {}  # a session unchanged since it was last listed (same size and time): not read again

OFF = N_("The sessions folder is not listed: {variable} is not set.")
BEYOND_LOOPBACK = N_("The sessions folder is not listed: this server listens on {address}, beyond this machine "
                     "(server.address), and your sessions are yours alone. Run it with --server.address 127.0.0.1 "
                     "to list them.")
IN_A_CLASS = N_("The sessions folder is not listed: this server serves a class through the balancer.")
NOT_A_FOLDER = N_("The sessions folder is not listed: {path} is not a folder.")


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

    @property
    def date(self) -> str:
        return datetime.fromtimestamp(self.modified, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def sessions(folder: str | Path) -> list[Session]:
    """Every session log in `folder` (a projects folder, or one project's folder), newest first."""
    folder = Path(folder).expanduser()
    logs = [p for p in folder.glob("*.jsonl")] + [p for p in folder.glob("*/*.jsonl")]
    found = []
    for path in logs:
        try:
            found.append(_session(path, folder))
        except OSError:  # removed or unreadable while listing: not listed
            continue
    return sorted(found, key=lambda s: (-s.modified, str(s.path)))


def _session(path: Path, folder: Path) -> Session:
    stat = path.stat()
    beside = sorted(path.with_suffix("").glob("subagents/agent-*.jsonl"))
    stamps = [(stat.st_size, stat.st_mtime_ns)]
    for log in beside:
        try:
            stamps.append((log.stat().st_size, log.stat().st_mtime_ns))
        except OSError:
            stamps.append(None)
    key = (str(path), str(folder), tuple(stamps))
    if key in _seen:
        return _seen[key]
    agents: set[bytes] = {p.stem.removeprefix("agent-").encode() for p in beside}
    compactions = errors = 0
    size = sum(s[0] for s in stamps if s)
    for log in [path, *beside]:
        try:
            data = log.read_bytes()
            if b'"agentId"' in data:
                agents.update(_AGENT.findall(data))
            compactions += sum(data.count(mark) for mark in _COMPACTION)
            errors += sum(data.count(mark) for mark in _ERROR)
        except OSError:
            continue
    agents = {a for a in agents if not a.startswith(b"acompact")}  # a compaction's own call: no sub-agent
    request, cwd = _head(path)
    project = cwd or (path.parent.name if path.parent != folder else folder.name)
    found = _seen[key] = Session(path, project, stat.st_mtime, request, size, len(agents), compactions, errors)
    return found


def _head(path: Path) -> tuple[str | None, str | None]:
    """The first request of the main thread, and the working directory, from the head of the log."""
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
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

    The folder is the user's own: a page lists it only when the variable names it, the server listens on
    loopback alone (Streamlit's `server.address`; unset, it listens on every interface), and no class is
    served through the balancer.
    """
    environ = os.environ if environ is None else environ
    folder = environ.get(SESSIONS_VARIABLE)
    if not folder:
        return Note(OFF, variable=SESSIONS_VARIABLE)
    if environ.get(CLASSROOM_VARIABLE):
        return Note(IN_A_CLASS)
    if (address or "").strip("[]") not in LOOPBACK:
        return Note(BEYOND_LOOPBACK, address=address or "0.0.0.0")
    if not Path(folder).expanduser().is_dir():
        return Note(NOT_A_FOLDER, path=folder)
    return None
