"""A class: the teacher's live run, followed by the students' browsers, through the runs store.

The teacher's run is saved step by step in the runs store (loop/files/runs.py) like any live run; a class row
says which of the teacher's runs the class sees and at which step, and whether a question is open. Followers
know the class by its code only: nothing they read holds the teacher's owner key, and `trace(code)` loads the
class's run and no other. Only the teacher's owner key moves the class (`NotTeacher` for anyone else).

Every method is one short transaction on the store, SQLite or PostgreSQL alike, so replicas on any machine that
share the store share the class. What a follower calls often is cheap: `state` is one read by primary key,
`seen` writes at most once every `SEEN_EVERY` seconds a follower (unless it stepped away or back), and
`trace` loads the teacher's run once a process for each change of the run.
"""

from __future__ import annotations

import csv
import io
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from ..engine.trace import Trace
from .runs import ID, OWNER, RunsStore, StoreError, _check

CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no look-alikes (0/O, 1/I/L); a code is 6 of them
CODE_LENGTH = 6
KEPT = 3600.0  # seconds an ended class still answers `state` (ended=True), so followers learn it ended
SEEN_EVERY = 5.0  # seconds between two heartbeats written for one follower (the window is 15 s)
MAX_CHOICE = 15  # a question has a few choices (loop/views/questions.py: 3 and "I don't know")
CACHED = 16  # traces kept in-process
PRUNED_DAYS = 30  # days after its end (or its start, for one never ended) a class and its rows are removed
# The tables of a class's rows, removed with it (its `classes` row last: the others are found by it).
_CLASS_ROWS = ("class_followers", "class_answers", "class_questions", "class_shown")


class NotTeacher(StoreError):
    """A write by anyone but the class's teacher (a follower, a stranger, or a code that does not exist)."""


@dataclass(frozen=True)
class ClassState:
    code: str
    run_id: str  # the teacher's run the class sees
    steps: int  # how many steps that run has (as last shown)
    cursor: int  # the step the class sees (0-based)
    version: int  # +1 at every change a follower must see (run, cursor, question, reveal, end)
    question: int | None  # the step whose question is open (predict mode), or None
    revealed: bool  # the teacher revealed the open question's answer
    ended: bool


@dataclass(frozen=True)
class Summary:
    code: str
    steps_shown: list[int]  # the distinct steps the class was shown, in order
    questions: dict[int, dict[int, int]]  # step -> {choice: count}
    followers: int  # browsers that followed at some point


def new_code() -> str:
    return "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))


def normal_code(code: object) -> str | None:
    """The code as stored (a student may type it in lowercase, with spaces around), or None if it is not one."""
    if not isinstance(code, str):
        return None
    code = code.strip().upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_LETTERS for c in code):
        return None
    return code


def _owner(key: object) -> bool:
    return isinstance(key, str) and OWNER.fullmatch(key) is not None


# A follower's heartbeats written, by (store, code, follower): (when, away). Kept by process, as the connection.
_heartbeats: dict[tuple[str, str, str], tuple[float, bool]] = {}
_heartbeats_lock = threading.Lock()

# The class's run, loaded once a process for every (store, teacher, run, steps): 60 followers, one load.
_traces: OrderedDict[tuple[str, str, str, int], Trace] = OrderedDict()
_loading = threading.Lock()

_COLUMNS = "code, run_id, steps, cursor, version, question, revealed, ended, teacher"


class Classes:
    """The classes kept in a runs store (see the module's docstring)."""

    def __init__(self, store: RunsStore, clock: Callable[[], float] = time.time):
        self.store = store
        self.clock = clock  # seconds since the epoch; a test may give its own

    # -- the teacher --
    def start(self, teacher: str, run_id: str, steps: int, cursor: int) -> str:
        """Start a class on the teacher's run `run_id` at step `cursor`: its new code. Ends the teacher's open class."""
        _check(teacher, run_id)
        now = self.clock()
        with self.store._transaction(write=True) as db:
            self._end_open(db, teacher, now)
            self._prune(db, now)
            while True:
                code = new_code()
                if db.execute("SELECT 1 FROM classes WHERE code=?", (code,)).fetchone() is None:
                    break
            db.execute("INSERT INTO classes (code, teacher, run_id, steps, cursor, version, question, revealed, "
                       "started, ended) VALUES (?, ?, ?, ?, ?, 1, NULL, 0, ?, NULL)",
                       (code, teacher, run_id, int(steps), int(cursor), now))
            self._shown(db, code, int(cursor))
        return code

    def of_teacher(self, teacher: str) -> str | None:
        """The teacher's open class, if any: a reload of the teacher's page finds it."""
        if not _owner(teacher):
            return None
        with self.store._transaction(write=False) as db:
            row = db.execute("SELECT code FROM classes WHERE teacher=? AND ended IS NULL ORDER BY started DESC",
                             (teacher,)).fetchone()
        return row[0] if row else None

    def show(self, code: str, teacher: str, run_id: str, steps: int, cursor: int) -> int:
        """The class now sees step `cursor` of the teacher's run `run_id`: its version.

        Moving to another step or run closes the open question (the step it asked about is shown).
        """
        if not (isinstance(run_id, str) and ID.fullmatch(run_id)):
            raise ValueError(f"not a run id: {run_id!r}"[:100])
        # Not waited for on the disk, as the runs store's `move`: a power cut may lose where the class was, and the
        # teacher's next click says it again; waiting for the disk was most of the time of a click here.
        with self.store._transaction(write=True, synced=False) as db:
            row = self._teachers(db, code, teacher)
            code, version = row[0], row[4]
            if row[7] is not None:  # ended: nothing moves it any more
                return version
            if (row[1], row[2], row[3]) == (run_id, int(steps), int(cursor)):
                return version
            moved = (row[1], row[3]) != (run_id, int(cursor))
            question, revealed = (None, 0) if moved else (row[5], row[6])
            db.execute("UPDATE classes SET run_id=?, steps=?, cursor=?, question=?, revealed=?, version=version+1 "
                       "WHERE code=?", (run_id, int(steps), int(cursor), question, revealed, code))
            self._shown(db, code, int(cursor))
        return version + 1

    def ask(self, code: str, teacher: str, step: int, kind: str = "") -> int:
        """Open the question asked before step `step` (closing any other): its version.

        `kind` (loop/views/questions.py's `Question.kind`) is kept for the answers' CSV.
        """
        with self.store._transaction(write=True) as db:
            row = self._teachers(db, code, teacher)
            code, version = row[0], row[4]
            if row[7] is not None:
                return version
            if row[5] == int(step) and not row[6]:
                return version
            db.execute("UPDATE classes SET question=?, revealed=0, version=version+1 WHERE code=?", (int(step), code))
            db.execute("INSERT INTO class_questions (code, step, kind, asked) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (code, step) DO UPDATE SET kind=excluded.kind",
                       (code, int(step), str(kind or "")[:40], self.clock()))
        return version + 1

    def reveal(self, code: str, teacher: str) -> int:
        """Reveal the open question's answer (no answer is taken after): the version."""
        with self.store._transaction(write=True) as db:
            row = self._teachers(db, code, teacher)
            code, version = row[0], row[4]
            if row[7] is not None or row[5] is None or row[6]:
                return version
            db.execute("UPDATE classes SET revealed=1, version=version+1 WHERE code=?", (code,))
        return version + 1

    def attendance(self, code: str, teacher: str, within: float = 15.0) -> tuple[int, int]:
        """(following, away): the followers heard from in the last `within` seconds, on the class's step or not."""
        since = self.clock() - within
        with self.store._transaction(write=False) as db:
            code = self._teachers(db, code, teacher)[0]
            rows = db.execute("SELECT away, count(*) FROM class_followers WHERE code=? AND seen>=? GROUP BY away",
                              (code, since)).fetchall()
        counted = {bool(away): int(n) for away, n in rows}
        return counted.get(False, 0), counted.get(True, 0)

    def end(self, code: str, teacher: str) -> Summary:
        """End the class (its code stops working for followers): what it was, for the teacher."""
        with self.store._transaction(write=True) as db:
            row = self._teachers(db, code, teacher)
            code = row[0]
            if row[7] is None:
                db.execute("UPDATE classes SET ended=?, question=NULL, version=version+1 WHERE code=?",
                           (self.clock(), code))
            shown = [step for (step,) in db.execute("SELECT step FROM class_shown WHERE code=? ORDER BY seq",
                                                    (code,))]
            asked = [step for (step,) in db.execute("SELECT step FROM class_questions WHERE code=? ORDER BY step",
                                                    (code,))]
            questions = {step: self._counts(db, code, step) for step in asked}
            (followers,) = db.execute("SELECT count(*) FROM class_followers WHERE code=?", (code,)).fetchone()
        return Summary(code, shown, questions, int(followers))

    def answers_csv(self, code: str, teacher: str) -> str:
        """The class's answers as CSV: step, question kind, choice, count; never who answered."""
        with self.store._transaction(write=False) as db:
            code = self._teachers(db, code, teacher)[0]
            asked = db.execute("SELECT step, kind FROM class_questions WHERE code=? ORDER BY step", (code,)).fetchall()
            counted = {step: self._counts(db, code, step) for step, _ in asked}
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["step", "kind", "choice", "count"])
        for step, kind in asked:
            for choice, n in sorted(counted[step].items()):
                writer.writerow([step, kind, choice, n])
            if not counted[step]:  # asked, never answered: still a question of the class
                writer.writerow([step, kind, "", 0])
        return out.getvalue()

    # -- the followers (and the projector) --
    def state(self, code: str) -> ClassState | None:
        """Where the class is: None when there is no such code, or it ended more than an hour ago."""
        row = self._row(code)
        if row is None:
            return None
        return ClassState(row[0], row[1], int(row[2]), int(row[3]), int(row[4]),
                          None if row[5] is None else int(row[5]), bool(row[6]), row[7] is not None)

    def trace(self, code: str) -> Trace | None:
        """The run the class sees (the teacher's run of the class, never another), at the class's step.

        None when the code does not work (no such class, or ended) or the run is not in the store. The steps,
        threads and histories are shared by every caller in this process: a page that adds steps (a follower
        stepping away) must work on a copy of its own.
        """
        row = self._row(code)
        if row is None or row[7] is not None:
            return None
        run_id, steps, cursor, teacher = row[1], int(row[2]), int(row[3]), row[8]
        key = (self.store.database.name, teacher, run_id, steps)
        trace = _traces.get(key)
        if trace is None:
            with _loading:  # one load for the followers that ask at once; the others find it loaded
                trace = _traces.get(key)
                if trace is None:
                    try:
                        trace = self.store.load(teacher, run_id)[0]
                    except KeyError:
                        return None
                    if len(trace) >= steps:  # the run's steps never change once written: a longer run holds these
                        _traces[key] = trace
                        while len(_traces) > CACHED:
                            _traces.popitem(last=False)
        # Its own cursor: followers in this process share the steps, never where each one is.
        view = Trace(trace.meta, steps=trace.steps, cursor=-1, branches=trace.branches, threads=trace.threads)
        view.goto(cursor)
        return view

    def seen(self, code: str, follower: str, away: bool) -> None:
        """A follower's heartbeat: it is here, following the class's step or `away` on its own copy."""
        code = normal_code(code)
        if code is None or not _owner(follower):
            return
        now, away = self.clock(), bool(away)
        key = (self.store.database.name, code, follower)
        with _heartbeats_lock:
            last = _heartbeats.get(key)
        if last is not None and last[1] == away and 0 <= now - last[0] < SEEN_EVERY:
            return  # written lately, and nothing changed: the class's window is wider than this
        with self.store._transaction(write=True, synced=False) as db:  # a lost heartbeat is sent again
            db.execute("INSERT INTO class_followers (code, follower, seen, away) "
                       "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM classes WHERE code=? AND ended IS NULL) "
                       "ON CONFLICT (code, follower) DO UPDATE SET seen=excluded.seen, away=excluded.away",
                       (code, follower, now, int(away), code))
        with _heartbeats_lock:
            _heartbeats[key] = (now, away)
            if len(_heartbeats) > 10_000:  # followers of classes long gone
                _heartbeats.clear()

    def seen_many(self, code: str, followers: list[tuple[str, bool]]) -> None:
        """The heartbeats of many followers of the class at once, `(follower, away)` each: one transaction for
        all the pages of a server, written as `seen` would write each (not again within `SEEN_EVERY` seconds
        unless it stepped away or back)."""
        code = normal_code(code)
        if code is None:
            return
        now = self.clock()
        due: dict[str, bool] = {}
        with _heartbeats_lock:
            for follower, away in followers:
                if not _owner(follower):
                    continue
                last = _heartbeats.get((self.store.database.name, code, follower))
                if last is None or last[1] != bool(away) or not 0 <= now - last[0] < SEEN_EVERY:
                    due[follower] = bool(away)
        if not due:
            return
        with self.store._transaction(write=True, synced=False) as db:  # a lost heartbeat is sent again
            if db.execute("SELECT 1 FROM classes WHERE code=? AND ended IS NULL", (code,)).fetchone() is None:
                return
            db.executemany("INSERT INTO class_followers (code, follower, seen, away) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (code, follower) DO UPDATE SET seen=excluded.seen, away=excluded.away",
                           [(code, follower, now, int(away)) for follower, away in sorted(due.items())])
        with _heartbeats_lock:
            for follower, away in due.items():
                _heartbeats[(self.store.database.name, code, follower)] = (now, away)
            if len(_heartbeats) > 10_000:
                _heartbeats.clear()

    def answer(self, code: str, follower: str, step: int, choice: int) -> bool:
        """A follower's answer to the open question of `step` (the last one counts); False when refused."""
        code = normal_code(code)
        if code is None or not _owner(follower) or not isinstance(choice, int) or isinstance(choice, bool) \
                or not 0 <= choice <= MAX_CHOICE or not isinstance(step, int):
            return False
        with self.store._transaction(write=True) as db:
            row = db.execute("SELECT question, revealed, ended FROM classes WHERE code=?", (code,)).fetchone()
            if row is None or row[2] is not None or row[0] != step or row[1]:
                return False
            db.execute("INSERT INTO class_answers (code, step, follower, choice) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (code, step, follower) DO UPDATE SET choice=excluded.choice",
                       (code, step, follower, choice))
        return True

    def counts(self, code: str, step: int) -> dict[int, int]:
        """How many followers chose each choice of the question of `step` (no names)."""
        code = normal_code(code)
        if code is None:
            return {}
        with self.store._transaction(write=False) as db:
            return self._counts(db, code, int(step))

    # -- inside a transaction --
    def _row(self, code: str):
        """The class's row (with its teacher, for this module only), or None: no such code, or ended > KEPT ago."""
        code = normal_code(code)
        if code is None:
            return None
        with self.store._transaction(write=False) as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM classes WHERE code=?", (code,)).fetchone()
        if row is None or (row[7] is not None and self.clock() - row[7] > KEPT):
            return None
        return row

    @staticmethod
    def _teachers(db, code: str, teacher: str):
        """The class's row when `teacher` is its teacher; else NotTeacher (a code that does not exist too)."""
        code = normal_code(code)
        row = None
        if code is not None and _owner(teacher):
            row = db.execute(f"SELECT {_COLUMNS} FROM classes WHERE code=?", (code,)).fetchone()
        if row is None or row[8] != teacher:
            raise NotTeacher("only the class's teacher moves it")
        return row

    @staticmethod
    def _prune(db, now: float) -> None:
        """Remove the classes ended more than PRUNED_DAYS ago, with their rows, so the store stays bounded; a class
        left open that long (its teacher never came back) too. A summary stays long after the code stopped working.
        Done when a class starts: that is rare, and one statement a table."""
        old = "SELECT code FROM classes WHERE coalesce(ended, started) < ?"
        cutoff = now - PRUNED_DAYS * 86400.0
        for table in _CLASS_ROWS:
            db.execute(f"DELETE FROM {table} WHERE code IN ({old})", (cutoff,))
        db.execute("DELETE FROM classes WHERE coalesce(ended, started) < ?", (cutoff,))

    def _end_open(self, db, teacher: str, now: float) -> None:
        db.execute("UPDATE classes SET ended=?, question=NULL, version=version+1 WHERE teacher=? AND ended IS NULL",
                   (now, teacher))

    @staticmethod
    def _shown(db, code: str, step: int) -> None:
        if step < 0:
            return
        db.execute("INSERT INTO class_shown (code, step, seq) "
                   "SELECT ?, ?, count(*) FROM class_shown WHERE code=? ON CONFLICT (code, step) DO NOTHING",
                   (code, step, code))

    @staticmethod
    def _counts(db, code: str, step: int) -> dict[int, int]:
        rows = db.execute("SELECT choice, count(*) FROM class_answers WHERE code=? AND step=? GROUP BY choice "
                          "ORDER BY choice", (code, step)).fetchall()
        return {int(choice): int(n) for choice, n in rows}
