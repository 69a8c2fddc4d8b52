"""A class's channel in the runs store: which run and step the class sees, its question, who follows, the answers.

The teacher's run is saved step by step in the runs store (loop/files/runs.py) like any live run; a class row says
which of the teacher's runs the class sees and at which step, and whether a question is open. Followers know the
class by its code only: nothing they read holds the teacher's owner key, and `trace(code)` loads the class's run
and no other. Only the teacher's owner key moves the class (`NotTeacher` for anyone else).

The class's tables are this module's own (`TABLES`, made and upgraded through the store's `tables`), and every
method is one short transaction on the store (`RunsStore.transaction`), SQLite or PostgreSQL alike, so replicas on
any machine that share the store share the class. Rows are read by their columns' names into dataclasses.

What a follower calls often is cheap, through the process's one `Cache`: `state(code, fresh=…)` answers the
polls of a server's pages with one read, `seen` writes at most once every `SEEN_EVERY` seconds a follower (unless it
stepped away or back), and `trace` loads the teacher's run once a process for each change of the run.

Limits (docs/security.md, "A class"): a code is `CODE_LENGTH` letters; a class holds `max_followers()` browsers at
once; an answer counts only from a browser that followed before the question opened (a later one is kept, marked
late, and not counted); a class nobody ended ends `EXPIRES` seconds after its teacher's last action.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from ..engine.trace import Trace
from .runs import ID, OWNER, RunsStore, StoreError

CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no look-alikes (0/O, 1/I/L)
CODE_LENGTH = 8  # 31^8 ≈ 8.5e11 codes: with the tries a minute limited, guessing a live class takes years
KEPT = 3600.0  # seconds an ended class still answers `state` (ended=True), so followers learn it ended
EXPIRES = 12 * 3600.0  # seconds after its teacher's last action (start, a move, a question) a class ends by itself
SEEN_EVERY = 5.0  # seconds between two heartbeats written for one follower (the window is `WINDOW`)
WINDOW = 15.0  # seconds a follower counts as there after its last heartbeat
MAX_CHOICE = 15  # a question has a few choices (loop/views/questions.py: 3 and "I don't know")
CACHED = 16  # runs kept in-process
PRUNED_DAYS = 30  # days after its end a class and its rows are removed (its summary is kept that long)
FOLLOWERS_VARIABLE, FOLLOWERS = "LOOPSCOPE_CLASS_MAX_FOLLOWERS", 300  # browsers following one class at once
FOLLOWERS_FLOOR = 200  # an operator may raise the limit, never below this: a large lecture must get in


def max_followers() -> int:
    """The browsers one class holds at once: LOOPSCOPE_CLASS_MAX_FOLLOWERS (at least FOLLOWERS_FLOOR), else 300."""
    try:
        value = int(os.environ.get(FOLLOWERS_VARIABLE, ""))
    except ValueError:
        return FOLLOWERS
    return max(value, FOLLOWERS_FLOOR)


class NotTeacher(StoreError):
    """A write by anyone but the class's teacher (a follower, a stranger, or a code that does not exist)."""


class Ended(NotTeacher):
    """The teacher moves a class that has ended: in another tab, or by itself `EXPIRES` after the last action."""


class Joined(Enum):
    """What `join` gave a browser."""

    FOLLOWS = "follows"
    FULL = "full"  # the class holds `max_followers()` browsers already
    GONE = "gone"  # no such class, or it ended


class Answered(Enum):
    """What became of an answer."""

    COUNTED = "counted"
    LATE = "late"  # kept, marked late: this browser came after the question opened; not counted
    CLOSED = "closed"  # no such question open (revealed, moved on, ended)
    REFUSED = "refused"  # not a follower of the class, or not an answer at all


# -- the tables (this module's own; the store keeps their version) -------------------------------------------------
TABLES_VERSION = 2  # 1: the tables as the store's schema 4 made them; 2: acted, run_id, late, joined
TABLES = [
    """
CREATE TABLE IF NOT EXISTS classes (
    code     TEXT PRIMARY KEY,  -- what followers type: CODE_LENGTH of CODE_LETTERS
    teacher  TEXT NOT NULL,     -- the teacher's owner key: followers never read it
    run_id   TEXT NOT NULL,     -- the teacher's run the class sees (runs.id of that owner)
    steps    INTEGER NOT NULL,
    cursor   INTEGER NOT NULL,
    version  INTEGER NOT NULL,  -- +1 at every change a follower must see
    question INTEGER,           -- the step whose question is open, or NULL
    revealed INTEGER NOT NULL DEFAULT 0,
    started  REAL NOT NULL,
    ended    REAL               -- when the teacher ended it, or NULL while open
) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS classes_by_teacher ON classes (teacher, ended)",
    """
CREATE TABLE IF NOT EXISTS class_shown (
    code TEXT NOT NULL,
    step INTEGER NOT NULL,
    seq  INTEGER NOT NULL,      -- the order it was first shown in
    PRIMARY KEY (code, step)
) WITHOUT ROWID""",
    """
CREATE TABLE IF NOT EXISTS class_questions (
    code  TEXT NOT NULL,
    step  INTEGER NOT NULL,
    kind  TEXT NOT NULL,        -- the question's kind (loop/views/questions.py KINDS), or ''
    asked REAL NOT NULL,
    PRIMARY KEY (code, step)
) WITHOUT ROWID""",
    """
CREATE TABLE IF NOT EXISTS class_answers (
    code     TEXT NOT NULL,
    step     INTEGER NOT NULL,
    follower TEXT NOT NULL,     -- an owner key: one answer a follower, the last counts
    choice   INTEGER NOT NULL,
    PRIMARY KEY (code, step, follower)
) WITHOUT ROWID""",
    """
CREATE TABLE IF NOT EXISTS class_followers (
    code     TEXT NOT NULL,
    follower TEXT NOT NULL,     -- an owner key
    seen     REAL NOT NULL,     -- its last heartbeat, seconds since the epoch
    away     INTEGER NOT NULL,  -- 1: stepping on its own copy
    PRIMARY KEY (code, follower)
) WITHOUT ROWID""",
]
TABLES_2 = [
    "ALTER TABLE classes ADD COLUMN acted REAL",  # the teacher's last action: the class expires EXPIRES after it
    "ALTER TABLE class_questions ADD COLUMN run_id TEXT",  # the run it was asked on: its words for the summary
    "ALTER TABLE class_questions ADD COLUMN opened INTEGER",  # the class's version when it opened
    "ALTER TABLE class_answers ADD COLUMN late INTEGER NOT NULL DEFAULT 0",  # 1: kept, not counted
    "ALTER TABLE class_followers ADD COLUMN joined INTEGER",  # the class's version when it first followed
]
# The tables of a class's rows, removed with it (its `classes` row last: the others are found by it).
_CLASS_ROWS = ("class_followers", "class_answers", "class_questions", "class_shown")


def _upgrade(execute: Callable[[str], None], have: int) -> None:
    if have < 1:
        for statement in TABLES:
            execute(statement)
    if have < 2:
        for statement in TABLES_2:
            execute(statement)


# -- typed rows ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassRow:
    """A `classes` row, read by name. It holds the teacher's owner key: for this module only."""

    code: str
    teacher: str
    run_id: str
    steps: int
    cursor: int
    version: int
    question: int | None
    revealed: int
    started: float
    ended: float | None
    acted: float | None

    def ended_at(self) -> float | None:
        """When the class ended: by its teacher, or by itself EXPIRES after the teacher's last action."""
        if self.ended is not None:
            return float(self.ended)
        return float(self.acted if self.acted is not None else self.started) + EXPIRES

    def over(self, now: float) -> bool:
        return self.ended is not None or now >= self.ended_at()


_CLASS_COLUMNS = ", ".join(f.name for f in dataclasses.fields(ClassRow))


@dataclass(frozen=True)
class ClassState:
    """Where a class is, as its followers read it (never its teacher)."""

    code: str
    run_id: str  # the teacher's run the class sees
    steps: int  # how many steps that run has (as last shown)
    cursor: int  # the step the class sees (0-based)
    version: int  # +1 at every change a follower must see (run, cursor, question, reveal, end)
    question: int | None  # the step whose question is open (predict mode), or None
    revealed: bool  # the teacher revealed the open question's answer
    ended: bool  # ended by its teacher, or by itself (EXPIRES)


@dataclass(frozen=True)
class Counts:
    """The answers to one question, by choice (0-based; no names): the ones counted, and the late ones (kept from
    browsers that came after the question opened, not counted)."""

    chosen: dict[int, int]
    late: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.chosen.values())

    @property
    def late_total(self) -> int:
        return sum(self.late.values())


@dataclass(frozen=True)
class Asked:
    """A question the class was asked: before step `step` of the teacher's run `run_id`, and its answers."""

    step: int
    run_id: str | None  # None: asked before the class kept the run of its questions
    kind: str
    counts: Counts


@dataclass(frozen=True)
class Summary:
    code: str
    steps_shown: list[int]  # the distinct steps the class was shown, in order
    questions: list[Asked]  # in the order of their steps
    followers: int  # browsers that followed at some point


@dataclass(frozen=True)
class _QuestionRow:
    step: int
    kind: str
    run_id: str | None


@dataclass(frozen=True)
class _AnswersRow:
    choice: int
    late: int
    n: int


@dataclass(frozen=True)
class _JoinedRow:
    joined: int | None  # the class's version when the browser first followed it (None: before versions were kept)


@dataclass(frozen=True)
class _HereRow:
    away: int
    n: int


def _rows(cursor, kind):
    """Every row of `cursor` as a `kind`, by its columns' names (both databases' cursors describe their columns)."""
    names = [column[0] for column in cursor.description]
    return [kind(**dict(zip(names, row))) for row in cursor.fetchall()]


def _one(cursor, kind):
    found = _rows(cursor, kind)
    return found[0] if found else None


def _value(cursor, default=None):
    """The first column of the first row (a count, an existence check), or `default`."""
    row = cursor.fetchone()
    return default if row is None else row[0]


# -- codes -----------------------------------------------------------------------------------------------------------
def new_code() -> str:
    return "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))


def normal_code(code: object) -> str | None:
    """The code as stored (a student may type it in lowercase, with spaces or a dash), or None if it is not one."""
    if not isinstance(code, str) or len(code) > 40:
        return None
    code = code.strip().upper().replace("-", "").replace(" ", "")
    if len(code) != CODE_LENGTH or any(c not in CODE_LETTERS for c in code):
        return None
    return code


def _owner(key: object) -> bool:
    return isinstance(key, str) and OWNER.fullmatch(key) is not None


# -- what a process keeps of the classes it serves: one cache ---------------------------------------------------------
class Cache:
    """This process's memory of the classes it serves, in one place, bounded:

    - `states`: the last state read of each class, by (store, code), with when it was read (`clock`, monotonic): one
      read answers the polls of a server's pages for `fresh` seconds, and no page is shown an older state than one a
      page of this process already took;
    - `runs`: the class's run, loaded once for every (store, teacher, run, steps): 60 followers, one load;
    - `beats`: each follower's heartbeat last written, (when, away), so that a heartbeat is written at most once
      every SEEN_EVERY seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock  # (a test stops it)
        self.lock = threading.Lock()
        self.loading = threading.Lock()  # one load of a run for the followers that ask at once
        self.states: dict[tuple[str, str], tuple[float, ClassState | None]] = {}
        self.runs: OrderedDict[tuple[str, str, str, int], Trace] = OrderedDict()
        self.beats: dict[tuple[str, str, str], tuple[float, bool]] = {}

    def clear(self) -> None:
        with self.lock:
            self.states.clear()
            self.runs.clear()
            self.beats.clear()

    def keep_state(self, key: tuple[str, str], state: ClassState | None) -> ClassState | None:
        """Keep a state just read (never over a newer one); the state kept."""
        with self.lock:
            last = self.states.get(key)
            if state is None or last is None or last[1] is None or state.version >= last[1].version:
                self.states[key] = (self.clock(), state)
            elif self.states[key][1] is not None:  # an older read than a page already took: the newer one
                state = self.states[key][1]
            if len(self.states) > 1000:  # classes long gone
                self.states.clear()
        return state

    def fresh_state(self, key: tuple[str, str], within: float) -> tuple[bool, ClassState | None]:
        with self.lock:
            last = self.states.get(key)
        if last is not None and 0 <= self.clock() - last[0] < within:
            return True, last[1]
        return False, None

    def beat_due(self, key: tuple[str, str, str], now: float, away: bool) -> bool:
        with self.lock:
            last = self.beats.get(key)
        return last is None or last[1] != away or not 0 <= now - last[0] < SEEN_EVERY

    def beaten(self, keys: list[tuple[str, str, str]], now: float, aways: list[bool]) -> None:
        with self.lock:
            for key, away in zip(keys, aways):
                self.beats[key] = (now, away)
            if len(self.beats) > 10_000:  # followers of classes long gone
                self.beats.clear()

    def run(self, key: tuple[str, str, str, int]) -> Trace | None:
        with self.lock:
            return self.runs.get(key)

    def keep_run(self, key: tuple[str, str, str, int], trace: Trace) -> None:
        with self.lock:
            self.runs[key] = trace
            while len(self.runs) > CACHED:
                self.runs.popitem(last=False)


CACHE = Cache()


class Classes:
    """The classes kept in a runs store (see the module's docstring)."""

    def __init__(self, store: RunsStore, clock: Callable[[], float] = time.time, cache: Cache = CACHE):
        self.store = store
        self.clock = clock  # seconds since the epoch; a test may give its own
        self.cache = cache
        store.tables("classes", TABLES_VERSION, _upgrade)

    # -- the teacher --
    def start(self, teacher: str, run_id: str, steps: int, cursor: int) -> str:
        """Start a class on the teacher's run `run_id` at step `cursor`: its new code. Ends the teacher's open class."""
        _check_owner(teacher)
        _check_run(run_id)
        now = self.clock()
        with self.store.transaction(write=True) as db:
            db.execute("UPDATE classes SET ended=?, question=NULL, version=version+1 WHERE teacher=? AND ended IS NULL",
                       (now, teacher))
            self._prune(db, now)
            while True:
                code = new_code()
                if _value(db.execute("SELECT 1 FROM classes WHERE code=?", (code,))) is None:
                    break
            db.execute("INSERT INTO classes (code, teacher, run_id, steps, cursor, version, question, revealed, "
                       "started, ended, acted) VALUES (?, ?, ?, ?, ?, 1, NULL, 0, ?, NULL, ?)",
                       (code, teacher, run_id, int(steps), int(cursor), now, now))
            self._shown(db, code, int(cursor))
        return code

    def of_teacher(self, teacher: str) -> str | None:
        """The teacher's open class, if any: a reload of the teacher's page finds it."""
        if not _owner(teacher):
            return None
        now = self.clock()
        with self.store.transaction() as db:
            rows = _rows(db.execute(f"SELECT {_CLASS_COLUMNS} FROM classes WHERE teacher=? AND ended IS NULL "
                                    "ORDER BY started DESC", (teacher,)), ClassRow)
        return next((row.code for row in rows if not row.over(now)), None)

    def show(self, code: str, teacher: str, run_id: str, steps: int, cursor: int) -> int:
        """The class now sees step `cursor` of the teacher's run `run_id`: its version. `Ended` once it has ended.

        Moving to another step or run closes the open question (the step it asked about is shown).
        """
        _check_run(run_id)
        # Not waited for on the disk, as the runs store's `move`: a power cut may lose where the class was, and the
        # teacher's next click says it again; waiting for the disk was most of the time of a click here.
        with self.store.transaction(write=True, synced=False) as db:
            row = self._teachers(db, code, teacher)
            if (row.run_id, row.steps, row.cursor) == (run_id, int(steps), int(cursor)):
                return row.version
            moved = (row.run_id, row.cursor) != (run_id, int(cursor))
            question, revealed = (None, 0) if moved else (row.question, row.revealed)
            db.execute("UPDATE classes SET run_id=?, steps=?, cursor=?, question=?, revealed=?, acted=?, "
                       "version=version+1 WHERE code=?",
                       (run_id, int(steps), int(cursor), question, revealed, self.clock(), row.code))
            self._shown(db, row.code, int(cursor))
        return row.version + 1

    def ask(self, code: str, teacher: str, step: int, kind: str = "") -> int:
        """Open the question asked before step `step` of the class's run (closing any other): its version.

        `kind` (loop/views/questions.py's `Question.kind`) and the run are kept for the summary.
        """
        with self.store.transaction(write=True) as db:
            row = self._teachers(db, code, teacher)
            if row.question == int(step) and not row.revealed:
                return row.version
            version = row.version + 1
            db.execute("UPDATE classes SET question=?, revealed=0, acted=?, version=? WHERE code=?",
                       (int(step), self.clock(), version, row.code))
            db.execute("INSERT INTO class_questions (code, step, kind, asked, run_id, opened) VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (code, step) DO UPDATE SET kind=excluded.kind, run_id=excluded.run_id, "
                       "opened=excluded.opened",
                       (row.code, int(step), str(kind or "")[:40], self.clock(), row.run_id, version))
        return version

    def reveal(self, code: str, teacher: str) -> int:
        """Reveal the open question's answer (no answer is taken after): the version."""
        with self.store.transaction(write=True) as db:
            row = self._teachers(db, code, teacher)
            if row.question is None or row.revealed:
                return row.version
            db.execute("UPDATE classes SET revealed=1, acted=?, version=version+1 WHERE code=?",
                       (self.clock(), row.code))
        return row.version + 1

    def attendance(self, code: str, teacher: str, within: float = WINDOW) -> tuple[int, int]:
        """(following, away): the followers heard from in the last `within` seconds, on the class's step or not."""
        since = self.clock() - within
        with self.store.transaction() as db:
            row = self._teachers(db, code, teacher, ended_too=True)
            rows = _rows(db.execute("SELECT away, count(*) AS n FROM class_followers WHERE code=? AND seen>=? "
                                    "GROUP BY away", (row.code, since)), _HereRow)
        counted = {bool(r.away): int(r.n) for r in rows}
        return counted.get(False, 0), counted.get(True, 0)

    def end(self, code: str, teacher: str) -> Summary:
        """End the class (its code stops working for followers): what it was, for the teacher. A class that ended by
        itself (EXPIRES) is ended as of then."""
        with self.store.transaction(write=True) as db:
            row = self._teachers(db, code, teacher, ended_too=True)
            if row.ended is None:
                db.execute("UPDATE classes SET ended=?, question=NULL, version=version+1 WHERE code=?",
                           (min(self.clock(), row.ended_at()), row.code))
            shown = [int(step) for (step,) in db.execute("SELECT step FROM class_shown WHERE code=? ORDER BY seq",
                                                         (row.code,))]
            questions = self._asked(db, row.code)
            followers = int(_value(db.execute("SELECT count(*) FROM class_followers WHERE code=?", (row.code,)), 0))
        return Summary(row.code, shown, questions, followers)

    def asked(self, code: str, teacher: str) -> list[Asked]:
        """The questions the class was asked, with their answers (no names): the answers' CSV is made of them."""
        with self.store.transaction() as db:
            row = self._teachers(db, code, teacher, ended_too=True)
            return self._asked(db, row.code)

    # -- the followers (and the projector) --
    def state(self, code: str, fresh: float = 0.0) -> ClassState | None:
        """Where the class is: None when there is no such code, or it ended more than KEPT seconds ago.

        With `fresh`, a state this process read within the last `fresh` seconds answers (a poll); without, the
        class is read now (a page drawn after the class moved must show where it is), and it answers the polls
        after it.
        """
        code = normal_code(code)
        if code is None:
            return None
        key = (self.store.name, code)
        if fresh > 0:
            found, state = self.cache.fresh_state(key, fresh)
            if found:
                return state
        row = self._row(code)
        state = None
        if row is not None:
            state = ClassState(row.code, row.run_id, int(row.steps), int(row.cursor), int(row.version),
                               None if row.question is None else int(row.question), bool(row.revealed),
                               row.over(self.clock()))
        return self.cache.keep_state(key, state)

    def trace(self, code: str, ended_too: bool = False) -> Trace | None:
        """The run the class sees (the teacher's run of the class, never another), at the class's step.

        None when the code does not work (no such class, or ended: with `ended_too`, the class's last step for a
        follower who was there) or the run is not in the store. The steps, threads and histories are shared by
        every caller in this process: a page that adds steps (a follower stepping away) must work on a copy.
        """
        row = self._row(code)
        if row is None or (row.over(self.clock()) and not ended_too):
            return None
        key = (self.store.name, row.teacher, row.run_id, int(row.steps))
        trace = self.cache.run(key)
        if trace is None:
            with self.cache.loading:  # one load for the followers that ask at once; the others find it loaded
                trace = self.cache.run(key)
                if trace is None:
                    try:
                        trace = self.store.load(row.teacher, row.run_id)[0]
                    except KeyError:
                        return None
                    if len(trace) >= row.steps:  # the run's steps never change once written: a longer run holds these
                        self.cache.keep_run(key, trace)
        # Its own cursor: followers in this process share the steps, never where each one is.
        view = Trace(trace.meta, steps=trace.steps, cursor=-1, branches=trace.branches, threads=trace.threads)
        view.goto(int(row.cursor))
        return view

    def join(self, code: str, follower: str) -> Joined:
        """A browser starts following the class: FOLLOWS (it is counted, as of the class's version now), FULL when the
        class holds `max_followers()` browsers heard from in the last WINDOW seconds, GONE when it has ended."""
        code = normal_code(code)
        if code is None or not _owner(follower):
            return Joined.GONE
        now = self.clock()
        with self.store.transaction(write=True, synced=False) as db:  # a lost join is made again at the next draw
            row = self._live(db, code, now)
            if row is None:
                return Joined.GONE
            if _value(db.execute("SELECT 1 FROM class_followers WHERE code=? AND follower=?", (code, follower))):
                db.execute("UPDATE class_followers SET seen=? WHERE code=? AND follower=?", (now, code, follower))
                return Joined.FOLLOWS
            here = int(_value(db.execute("SELECT count(*) FROM class_followers WHERE code=? AND seen>=?",
                                         (code, now - WINDOW)), 0))
            if here >= max_followers():
                return Joined.FULL
            db.execute("INSERT INTO class_followers (code, follower, seen, away, joined) VALUES (?, ?, ?, 0, ?)",
                       (code, follower, now, row.version))
        return Joined.FOLLOWS

    def seen(self, code: str, follower: str, away: bool) -> None:
        """A follower's heartbeat: it is here, following the class's step or `away` on its own copy."""
        self.seen_many(code, [(follower, away)])

    def seen_many(self, code: str, followers: list[tuple[str, bool]]) -> None:
        """The heartbeats of followers of the class, `(follower, away)` each, in one transaction (all the pages of a
        server): a heartbeat is not written again within `SEEN_EVERY` seconds unless it stepped away or back. A browser
        that is not yet a follower is made one (as `join` would, but for the limit: the page joined first)."""
        code = normal_code(code)
        if code is None:
            return
        now = self.clock()
        due: dict[str, bool] = {}
        for follower, away in followers:
            if _owner(follower) and self.cache.beat_due((self.store.name, code, follower), now, bool(away)):
                due[follower] = bool(away)
        if not due:
            return
        with self.store.transaction(write=True, synced=False) as db:  # a lost heartbeat is sent again
            row = self._live(db, code, now)
            if row is None:
                return
            db.executemany("INSERT INTO class_followers (code, follower, seen, away, joined) VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (code, follower) DO UPDATE SET seen=excluded.seen, away=excluded.away",
                           [(code, follower, now, int(away), row.version) for follower, away in sorted(due.items())])
        self.cache.beaten([(self.store.name, code, f) for f in due], now, list(due.values()))

    def answer(self, code: str, follower: str, step: int, choice: int) -> Answered:
        """A follower's answer to the open question of `step`: one a browser (the last counts), COUNTED when the
        browser followed the class before the question opened, else kept as LATE and not counted."""
        code = normal_code(code)
        if code is None or not _owner(follower) or not isinstance(choice, int) or isinstance(choice, bool) \
                or not 0 <= choice <= MAX_CHOICE or not isinstance(step, int) or isinstance(step, bool):
            return Answered.REFUSED
        now = self.clock()
        with self.store.transaction(write=True) as db:
            row = self._live(db, code, now)
            if row is None or row.question != step or row.revealed:
                return Answered.CLOSED
            follows = _one(db.execute("SELECT joined FROM class_followers WHERE code=? AND follower=?",
                                      (code, follower)), _JoinedRow)
            if follows is None:
                return Answered.REFUSED  # no browser that never followed the class answers it
            opened = _value(db.execute("SELECT opened FROM class_questions WHERE code=? AND step=?", (code, step)))
            late = follows.joined is not None and opened is not None and int(follows.joined) >= int(opened)
            db.execute("INSERT INTO class_answers (code, step, follower, choice, late) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (code, step, follower) DO UPDATE SET choice=excluded.choice",
                       (code, step, follower, choice, int(late)))
        return Answered.LATE if late else Answered.COUNTED

    def counts(self, code: str, step: int) -> Counts:
        """How many followers chose each choice of the question of `step` (no names), and the late answers."""
        code = normal_code(code)
        if code is None:
            return Counts({})
        with self.store.transaction() as db:
            return self._counts(db, code, int(step))

    # -- inside a transaction --
    def _row(self, code: str) -> ClassRow | None:
        """The class's row (with its teacher, for this module only), or None: no such code, or ended > KEPT ago."""
        code = normal_code(code)
        if code is None:
            return None
        with self.store.transaction() as db:
            row = _one(db.execute(f"SELECT {_CLASS_COLUMNS} FROM classes WHERE code=?", (code,)), ClassRow)
        if row is None or self.clock() - row.ended_at() > KEPT:
            return None
        return row

    def _live(self, db, code: str, now: float) -> ClassRow | None:
        row = _one(db.execute(f"SELECT {_CLASS_COLUMNS} FROM classes WHERE code=?", (code,)), ClassRow)
        return None if row is None or row.over(now) else row

    def _teachers(self, db, code: str, teacher: str, ended_too: bool = False) -> ClassRow:
        """The class's row when `teacher` is its teacher; else NotTeacher (a code that does not exist too), and
        `Ended` when it has ended (unless `ended_too`)."""
        code = normal_code(code)
        row = None
        if code is not None and _owner(teacher):
            row = _one(db.execute(f"SELECT {_CLASS_COLUMNS} FROM classes WHERE code=?", (code,)), ClassRow)
        if row is None or row.teacher != teacher:
            raise NotTeacher("only the class's teacher moves it")
        if not ended_too and row.over(self.clock()):
            raise Ended(f"the class {row.code} has ended")
        return row

    @staticmethod
    def _prune(db, now: float) -> None:
        """Remove the classes that ended more than PRUNED_DAYS ago, with their rows, so the store stays bounded (one
        nobody ended ended EXPIRES after its teacher's last action). Done when a class starts: that is rare, and one
        statement a table."""
        cutoff = now - PRUNED_DAYS * 86400.0
        old = "SELECT code FROM classes WHERE coalesce(ended, coalesce(acted, started) + ?) < ?"
        for table in _CLASS_ROWS:
            db.execute(f"DELETE FROM {table} WHERE code IN ({old})", (EXPIRES, cutoff))
        db.execute("DELETE FROM classes WHERE coalesce(ended, coalesce(acted, started) + ?) < ?", (EXPIRES, cutoff))

    @staticmethod
    def _shown(db, code: str, step: int) -> None:
        if step < 0:
            return
        db.execute("INSERT INTO class_shown (code, step, seq) "
                   "SELECT ?, ?, count(*) FROM class_shown WHERE code=? ON CONFLICT (code, step) DO NOTHING",
                   (code, step, code))

    def _asked(self, db, code: str) -> list[Asked]:
        asked = _rows(db.execute("SELECT step, kind, run_id FROM class_questions WHERE code=? ORDER BY step",
                                 (code,)), _QuestionRow)
        return [Asked(int(q.step), q.run_id, q.kind or "", self._counts(db, code, int(q.step))) for q in asked]

    @staticmethod
    def _counts(db, code: str, step: int) -> Counts:
        rows = _rows(db.execute("SELECT choice, late, count(*) AS n FROM class_answers WHERE code=? AND step=? "
                                "GROUP BY choice, late ORDER BY choice", (code, step)), _AnswersRow)
        return Counts({int(r.choice): int(r.n) for r in rows if not r.late},
                      {int(r.choice): int(r.n) for r in rows if r.late})


def _check_owner(key: object) -> None:
    if not _owner(key):
        raise ValueError("not an owner key")


def _check_run(run_id: object) -> None:
    if not (isinstance(run_id, str) and ID.fullmatch(run_id)):
        raise ValueError(f"not a run id: {run_id!r}"[:100])
