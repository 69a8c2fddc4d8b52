"""A Claude Code log still being written, followed: each poll reads only the bytes appended since the last one.

`Follower(path).poll()` looks at the file's size and modification time; when
they changed it reads what was appended, keeps its complete lines (a line still
being written waits for the next poll) and imports the records read so far
again (the chain of records decides the steps: a record may answer one written
long before, or start a branch of its own). What changed is said: how many
steps are new, and whether the branch kept as the conversation changed, so a
page can keep its cursor on the same record.

The log is the user's, and the server reading it may be root: each poll opens it again from its folder's descriptor
without following a link and reads it only while it is a regular file (loop/files/regular.py). A log swapped for a
link (to a file the user may not read, to /dev/zero) or a FIFO is refused with a clear reason, never read; a new file
put in its place is read from its start. Everything followed together holds at most `max_bytes` (the page's upload
limit): past it, Follow stops and says so, rather than keep growing the server with each poll.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..engine.trace import Trace
from ..files import regular, transcript
from ..files.regular import NotRegular, TooBig
from . import claude_code
from .failed import ImportFailed
from .files import combine
from .finish import Imported, finish
from .formats import read_claude_code
from .notes import FILE_LINE, Note, Notes, on_line
from ..text.catalogs import N_


@dataclass
class Change:
    """What one poll found."""

    imported: Imported  # everything read so far, imported
    first_new: int  # the index of the first step the trace before did not have (or had otherwise)
    branch_changed: bool  # a step the trace before had is not there any more: another branch is the conversation
    cursor: int  # where the cursor goes: the same record, or the new end when it was at the end


TAIL = 64  # the steps before the first new one compared in full (a response's blocks and results come in a burst)


def signature(trace: Trace, i: int) -> tuple:
    """What makes step i the same step in the next import: its thread, stage, place in the history and detail."""
    s = trace.steps[i]
    return _key(s) + (json.dumps(s.detail.to_dict(), sort_keys=True, default=str),)


def _key(step) -> tuple:
    # cheap, to find how far two imports agree; the detail is compared only where a step is looked for
    return step.thread, step.stage, step.n_messages, step.turn_count


class _Log:
    """One file followed: how far it was read, and its records so far."""

    def __init__(self, path: Path, name: str, names: list[str]):
        self.path, self.name = path, name
        self.names = names  # from the folder followed down to the file, each opened without following a link
        self.offset = 0  # bytes read so far
        self.partial = b""  # the end of the file after its last newline: a line still being written
        self.records: list[tuple[int, object]] = []
        self.lines = 0
        self.stamp: tuple | None = None

    def read(self, folder: int, left: int, skipped: Notes, where) -> bool:
        """Read what was appended since the last call, if the file holds at most `left` bytes (else TooBig, with
        how much it holds); whether a record was added. NotRegular when the name is no longer a regular file."""
        fd = regular.open_in(folder, self.names)
        try:
            stat = os.fstat(fd)
            stamp = (stat.st_size, stat.st_mtime_ns, stat.st_dev, stat.st_ino)
            if stamp == self.stamp:
                return False
            if self.stamp is not None and stamp[2:] != self.stamp[2:] or stat.st_size < self.offset:
                # another file in its place, or written again from the start: read again from the start
                self.offset, self.partial, self.records, self.lines = 0, b"", [], 0
            if stat.st_size > left:  # what it would hold once read, beside what the others hold
                raise TooBig("/".join(self.names), stat.st_size, left)
            self.stamp = stamp
            data = regular.read_at(fd, self.offset, stat.st_size - self.offset)
        finally:
            os.close(fd)
        self.offset += len(data)
        complete, newline, self.partial = (self.partial + data).rpartition(b"\n")
        if not newline:  # no line was finished yet
            return False
        added = False
        for raw in complete.split(b"\n"):
            self.lines += 1
            if not raw.strip():
                continue
            try:
                self.records.append((self.lines, transcript.parse_json(raw.decode("utf-8"))))
                added = True
            except (ValueError, UnicodeDecodeError):
                skipped.count(N_("passed over lines that are not valid JSON"), where(self, self.lines))
        return added


class Follower:
    """A session's log and its sub-agents' logs (`<session>/subagents/agent-*.jsonl`, which Claude Code writes as
    the sub-agents work), followed.

    `folder`: the folder the log was listed from (the sessions folder), opened as named; below it no link is
    followed. Unset, the log's own folder. `max_bytes`: the most read of them all together.
    """

    def __init__(self, path: str | Path, *, folder: str | Path | None = None, max_bytes: int | None = None):
        from . import DEFAULT_MAX_BYTES

        self.path = Path(path)
        self.folder = Path(folder) if folder is not None else self.path.parent
        self.names = list(self.path.relative_to(self.folder).parts)
        self.max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        self.logs: dict[Path, _Log] = {self.path: _Log(self.path, self.path.name, self.names)}
        self.imported: Imported | None = None
        self.skipped = Notes()
        self.refused: set[str] = set()  # sub-agents' logs said not read (once each)
        self.stopped: ImportFailed | None = None  # past the limit: said again at every poll, nothing read

    def poll(self, cursor: int | None = None) -> Change | None:
        """None when nothing new was written; else the new import. `cursor`: where the page's cursor is now
        (default: the end). ImportFailed when the log cannot be followed (not a Claude Code log, no longer a
        regular file, past the limit); OSError when it cannot be read now (e.g. removed)."""
        if self.stopped is not None:
            raise self.stopped
        folder = regular.open_folder(self.folder)
        try:
            self._find_beside(folder)
            added = False
            for log in self.logs.values():
                others = sum(other.offset for other in self.logs.values() if other is not log)
                try:
                    added = log.read(folder, self.max_bytes - others, self.skipped, self._where) or added
                except TooBig as exc:  # said of the session's log, of all its logs together, at every poll from now
                    exc = TooBig("/".join(self.names), others + exc.size, self.max_bytes)
                    self.stopped = ImportFailed(exc.note)
                    raise self.stopped from None
                except NotRegular as exc:  # the log, or a folder on its way, swapped since it was opened
                    if log.path == self.path:
                        raise ImportFailed(exc.note) from None
                    self._refuse(exc)
                except FileNotFoundError:
                    if log.path == self.path:
                        raise
        finally:
            os.close(folder)
        if not added:
            return None
        return self._change(self._import(), cursor)

    def _find_beside(self, folder: int) -> None:
        """Sub-agents' logs written since the last poll: regular files only, found without following a link."""
        below = [*self.names[:-1], self.names[-1].removesuffix(".jsonl"), "subagents"]
        try:
            inner = regular.open_in(folder, below, "folder")
        except NotRegular as exc:
            if exc.kind != "file":
                self._refuse(exc)
            return
        except OSError:  # none yet
            return
        try:
            for name, kind in regular.entries(inner):
                beside = self.path.with_suffix("") / "subagents" / name
                if not (name.startswith("agent-") and name.endswith(".jsonl")) or beside in self.logs:
                    continue
                if kind != "file":
                    self._refuse(NotRegular("/".join([*below, name]), kind))
                else:
                    self.logs[beside] = _Log(beside, str(beside.relative_to(self.path.parent)), [*below, name])
        finally:
            os.close(inner)

    def _refuse(self, exc: NotRegular) -> None:
        """A sub-agent's log that is not a regular file: said once among the warnings, never read."""
        if exc.name not in self.refused:
            self.refused.add(exc.name)
            self.skipped.add(exc.note)

    def _where(self, log: _Log, line: int):
        return on_line(line) if len(self.logs) == 1 else Note(FILE_LINE, file=log.name, n=line)

    def _import(self) -> Imported:
        main = self.logs[self.path]
        if _journal_head(main.records):  # a run's journal as it is written (`python -m loop record --journal`)
            return _journal(main.records)
        if not any(claude_code.looks_like(r) for _, r in main.records):
            raise ImportFailed(N_("{name}: not a Claude Code log; only a Claude Code log or a run's journal can be "
                                  "followed"),
                               name=self.path.name)
        notes = Notes()
        for note in self.skipped.items():
            notes.add(note)
        logs = [log for log in self.logs.values() if log.records]
        if len(logs) == 1:
            parsed, threads, chosen = read_claude_code(main.records, notes, None)
        else:  # as importers.import_files reads a session with its sub-agents' logs: every record placed
            combined, places = combine([(log.name, log.records) for log in logs])
            parsed, threads, chosen = read_claude_code(combined, notes, None, place=places.__getitem__)
        imported = finish(parsed, "claude-code", notes, self.path.name, threads, chosen)
        imported.logs = [log.name for log in logs]
        return imported

    def _change(self, imported: Imported, cursor: int | None) -> Change:
        before, after = (self.imported.trace if self.imported else None), imported.trace
        self.imported = imported
        if before is None:
            return Change(imported, 0, False, len(after) - 1 if cursor is None else min(cursor, len(after) - 1))
        old, new = [_key(s) for s in before.steps], [_key(s) for s in after.steps]
        same = 0
        while same < min(len(old), len(new)) and old[same] == new[same]:
            same += 1
        # A step keeps its place but not its detail where a new record completes it (a tool_use's result comes):
        # those are at the end of what was read, so only the last steps are compared in full.
        for i in range(max(0, same - TAIL), same):
            if signature(before, i) != signature(after, i):
                same = i
                break
        at = len(before) - 1 if cursor is None else cursor
        if at >= len(before) - 1:  # at the end: it stays at the end
            moved = len(after) - 1
        elif at < same:
            moved = at
        else:  # on a step drawn again: the same record if the new import still has it
            mine = signature(before, at)
            moved = next((j for j, k in enumerate(new) if k == old[at] and signature(after, j) == mine),
                         min(at, len(after) - 1))
        return Change(imported, same, not _goes_on(before.messages, after.messages), moved)


def _journal_head(records: list) -> bool:
    """Do the records start as a Loopscope journal does ({"meta": ..., "settings": ...})?"""
    return bool(records) and isinstance(records[0][1], dict) and "meta" in records[0][1] and "step" not in records[0][1]


def _journal(records: list) -> Imported:
    """The steps of a journal read so far; a line that is not a step is passed over and counted."""
    notes = Notes()
    replayed = transcript.Journal()
    for n, record in records[1:]:
        try:
            replayed.add(record if isinstance(record, dict) else {}, on_line(n))
        except transcript.TranscriptError:
            notes.count(N_("passed over lines that are not a step of the run"), on_line(n))
    meta = records[0][1].get("meta") if isinstance(records[0][1].get("meta"), dict) else {}
    trace = transcript.from_dict(replayed.transcript(meta), strict=False)
    return Imported(trace, "loopscope-journal", notes.items())


def _goes_on(before: list, after: list) -> bool:
    """Whether the history `after` goes on from `before`: the same messages, the last one perhaps grown (a response
    is written a block a line)."""
    if len(after) < len(before):
        return False
    if before[:-1] != after[:len(before) - 1]:
        return False
    if not before:
        return True
    last, now = before[-1], after[len(before) - 1]
    if last == now:
        return True
    grown = isinstance(last.get("content"), list) and isinstance(now.get("content"), list) \
        and now["content"][:len(last["content"])] == last["content"]
    return last.get("role") == now.get("role") and grown
