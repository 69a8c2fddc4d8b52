"""A local runs folder: every live run saved after every step, so nothing is lost.

A run is a journal, `<id>.jsonl`: the first line holds the run's facts (meta,
settings; never a key), then one line a step with what the step did to its
thread's history (transcript.journal_line: the messages it added, or rewrote).
Appending a line a step keeps saving linear in the work, however long the run.
A move of the cursor appends `{"cursor": k}`; the last one read wins. One
append a click, nothing rewritten: a crash can cut only the line being written.
Loading replays the journal into the same trace; `resume`
(loop.fork.continue_from) goes on from its last step.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from . import transcript
from .redact import without_secrets
from .trace import Trace

ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STEP_LINE = b'{"step"'  # how every step's line starts: json.dumps keeps the order of the keys
CURSOR_LINE = b'{"cursor"'  # and every move of the cursor's


@dataclass(frozen=True)
class SavedRun:
    id: str
    task: str
    model: str
    steps: int
    ended: str | None
    modified: float  # seconds since the epoch


class RunsFolder:
    """The runs of one browser session (or one user): a folder of journals."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._counts: dict[str, int] = {}  # steps already in each journal, to skip re-reading it

    def _path(self, run_id: str, suffix: str = ".jsonl") -> Path:
        if not ID.match(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        return self.root / f"{run_id}{suffix}"

    def save_step(self, run_id: str, trace: Trace, settings: dict | None = None) -> None:
        """Append the steps of `trace` the journal does not have yet (all of them for a new run)."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(run_id)
        have = self._count(run_id)
        lines = []
        if have is None:
            # never a key, even when the caller's settings hold one (dataclasses.asdict of a ModelConfig)
            lines.append({"meta": trace.meta, "settings": without_secrets(settings or {})})
            have = 0
        for step in trace.steps[have:]:
            lines.append(transcript.journal_line(trace, step))
        lines.append({"cursor": trace.cursor})
        with path.open("a", encoding="utf-8") as f:  # one write a click: the new steps and where the cursor is
            f.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        self._counts[run_id] = len(trace.steps)

    def _count(self, run_id: str) -> int | None:
        if run_id in self._counts and self._path(run_id).exists():
            return self._counts[run_id]
        path = self._path(run_id)
        if not path.exists():
            return None
        with path.open("rb") as f:  # bytes: a line cut mid-character by a crash must not stop the count
            return sum(1 for line in f if line.startswith(STEP_LINE))

    def save_cursor(self, run_id: str, cursor: int) -> None:
        with self._path(run_id).open("a", encoding="utf-8") as f:
            f.write(json.dumps({"cursor": cursor}) + "\n")

    def load(self, run_id: str) -> tuple[Trace, dict]:
        """The trace of a saved run (cursor restored) and its settings.

        A line cut by a crash ends the journal: the steps before it are kept. A
        journal that is not one (a line of another shape, steps that do not
        fit) raises `TranscriptError`, never anything else.
        """
        path = self._path(run_id)
        journal = transcript.Journal()
        head: dict = {}
        cursor = None
        with path.open("rb") as f:  # bytes: a crash can cut a line in the middle of a character
            for n, line in enumerate(f, 1):
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past reading
                    break  # a line cut by a crash: keep what came before it
                if transcript.too_deep(record):
                    raise transcript.TranscriptError(f"{path.name}, line {n}: nested too deeply to read")
                if n == 1:
                    if not isinstance(record, dict):
                        raise transcript.TranscriptError(f"{path.name}, line 1: not the facts of a saved run")
                    head = record
                    continue
                if isinstance(record, dict) and set(record) == {"cursor"}:
                    cursor = record["cursor"]
                    continue
                if not isinstance(record, dict):
                    raise transcript.TranscriptError(f"{path.name}, line {n}: not a step of the run")
                journal.add(record, f"{path.name}, line {n}")
        meta = head.get("meta") if isinstance(head.get("meta"), dict) else {}
        settings = head.get("settings") if isinstance(head.get("settings"), dict) else {}
        trace = transcript.from_dict(journal.transcript(meta), strict=False)
        try:
            if cursor is None:  # a journal from before the cursor lines: its cursor was a file beside it
                cursor = self._path(run_id, ".cursor").read_text()
            trace.goto(int(cursor))
        except (OSError, ValueError, TypeError):
            trace.last()
        return trace, settings

    def list(self) -> list[SavedRun]:
        """Saved runs, newest first."""
        found = []
        for path in self.root.glob("*.jsonl") if self.root.exists() else []:
            try:
                with path.open("rb") as f:
                    head = json.loads(f.readline())
                    last = None
                    count = 0
                    for line in f:
                        if not line.startswith(CURSOR_LINE):
                            count += 1
                            last = line
                try:
                    ended = json.loads(last)["step"].get("ended") if last else None
                except ValueError:  # the last line was cut by a crash: the run is there, less that step
                    count, ended = count - 1, None
                meta = head.get("meta") if isinstance(head.get("meta"), dict) else {}
            except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
                continue  # not a journal this Loopscope can list
            found.append(SavedRun(path.stem, str(meta.get("task", "")), str(meta.get("model", "")), count, ended,
                                  path.stat().st_mtime))
        return sorted(found, key=lambda r: r.modified, reverse=True)

    def reopen(self, run_id: str) -> None:
        """Forget what was counted of `run_id`'s journal: a resumed run goes on writing it."""
        self._counts.pop(run_id, None)

    def delete(self, run_id: str) -> None:
        for suffix in (".jsonl", ".cursor"):
            self._path(run_id, suffix).unlink(missing_ok=True)
        self._counts.pop(run_id, None)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()
