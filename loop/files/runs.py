"""Saved runs in one SQLite file (or one PostgreSQL database): every step of a live run is written before the page answers.

`<runs folder>/runs.sqlite3` holds the runs of every browser. A run is a row of
facts (meta and settings, never a key) and one row a step, whose `line` is the
step with the messages it added, as one JSON line (loop/files/journal.py), so a
person or `jq` can read it: `python -m loop runs export ID`.

- One transaction a step, in WAL mode with synchronous=FULL: a killed server
  (or a power cut) leaves a run as it was before the step or after it, never
  in between. A click that only moves the cursor is written without waiting
  for the disk (`move`): a power cut may lose where the cursor was, not a step. Several processes may share the file (replicas on one machine,
  never over a network file system): a writer waits up to `BUSY` seconds for
  another's transaction, and nothing read is kept between calls; only the
  connection is kept, one a process.
- One tab writes a run at a time: the one that made it or last resumed it (its
  `writer`). A tab whose run was resumed elsewhere gets `TakenOver` at its
  next write; it then saves on under a new run id, so the two never mix.
- The store knows a browser only as its owner key, a hash of the browser's id
  (loop/files/browser_id.py): nothing in the store can be used as an id.
- Private: the folder is 0700 and every file in it 0600 (made so, not by
  changing the process's umask, which would change the mode of the files the
  tools' commands write in other threads).
- Bounded: a run may hold `LOOPSCOPE_RUN_MAX_BYTES` of JSON (64 MiB), and all
  the runs of one owner `LOOPSCOPE_RUNS_QUOTA_BYTES` (256 MiB); a save that
  would pass either writes nothing and raises `StoreFull`. Each run keeps its
  size (`bytes`), so the check reads one number a run, not its steps.
- With LOOPSCOPE_DATABASE_URL=postgresql://…, all of it lives in that PostgreSQL database instead, shared
  by replicas on several machines; what differs between the two is in loop/files/database.py.
- `PRAGMA user_version` is the schema's version (PostgreSQL: the table `loopscope_schema`). Journals that older versions
  kept as files (`<folder>/<browser id>/<run id>.jsonl`) are imported when the
  store is made, then moved to `journals-imported/`, under a hash of their id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import database, journal, transcript
from ..text.catalogs import N_, Note, size_words
from ..text.redact import without_secrets
from ..engine.trace import Trace

SCHEMA = 4  # 2: runs.bytes, the size of what a run holds; 3: progress, the exercises each browser passed;
# 4: the classes, whose tables are now made and upgraded by loop/files/classes.py itself (`tables`)
FILE = "runs.sqlite3"
IMPORTED = "journals-imported"
BUSY = database.BUSY  # seconds a write waits for another process's transaction
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a run's id
OWNER = re.compile(r"[0-9a-f]{64}")  # a hash
LEGACY_BROWSER = re.compile(r"[A-Za-z0-9_-]{16,64}")  # an id older versions kept in the URL and as a folder name
RUN_MAX_VARIABLE, RUN_MAX = "LOOPSCOPE_RUN_MAX_BYTES", 64 * 2**20  # bytes of JSON one run may hold
QUOTA_VARIABLE, QUOTA = "LOOPSCOPE_RUNS_QUOTA_BYTES", 256 * 2**20  # bytes all the runs of one owner may hold
RUN_FULL = N_("This run is too large to save: a saved run may hold {size}, and its new steps would pass that, so "
              "they are not saved. Keep the run with “Save transcript”, then start a new run.")
QUOTA_FULL = N_("This browser's saved runs have reached their quota ({size}), so this step is not saved. Delete old "
                "runs under “Saved runs” (keep one first with “Save transcript” if you need it), then step again.")

log = logging.getLogger(__name__)

_CREATE = """
CREATE TABLE runs (
    n        INTEGER PRIMARY KEY,
    owner    TEXT NOT NULL,     -- a hash of the browser's id, never the id
    id       TEXT NOT NULL,     -- the run's id, as the page names it
    task     TEXT NOT NULL,
    model    TEXT NOT NULL,
    meta     TEXT NOT NULL,     -- JSON: the trace's facts
    settings TEXT NOT NULL,     -- JSON: what it takes to go on; never a key
    steps    INTEGER NOT NULL,  -- rows in `steps` for this run
    ended    TEXT,
    cursor   INTEGER NOT NULL,
    writer   TEXT,              -- the tab that may write it
    created  REAL NOT NULL,
    modified REAL NOT NULL,
    UNIQUE (owner, id)
);
CREATE INDEX runs_by_owner ON runs (owner, modified);
CREATE TABLE steps (
    run  INTEGER NOT NULL,      -- runs.n
    idx  INTEGER NOT NULL,
    line TEXT NOT NULL,         -- {"step": {...}, "messages": [...]}: the journal line
    PRIMARY KEY (run, idx)
) WITHOUT ROWID;
CREATE TABLE server (name TEXT PRIMARY KEY, value BLOB NOT NULL);
"""

# What browsers spent with the server's key, by hour (loop/engine/keys.py). Made when first used, so a store of
# schema 1 needs no migration and older versions read it as before.
_SPENDING = """
CREATE TABLE IF NOT EXISTS spending (
    owner  TEXT NOT NULL,       -- a browser's owner key, or '*' for all browsers together
    hour   INTEGER NOT NULL,    -- hours since the epoch, UTC
    calls  INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, hour)
) WITHOUT ROWID
"""
EVERYONE = "*"

# Schema 3: the exercises of Your loop each browser has passed (loop/yours/exercises.py), kept for a reload.
_PROGRESS = """
CREATE TABLE IF NOT EXISTS progress (
    owner    TEXT NOT NULL,     -- a browser's owner key
    exercise TEXT NOT NULL,     -- the exercise's name
    passed   REAL NOT NULL,     -- when it was first passed, seconds since the epoch
    PRIMARY KEY (owner, exercise)
) WITHOUT ROWID
"""
EXERCISE = re.compile(r"[a-z0-9-]{1,64}")  # an exercise's name

class StoreError(Exception):
    """The store cannot be used (a full disk, a file of a newer version, a locked database)."""


class StoreFull(StoreError):
    """A save that would pass the size a run may have or its owner's quota: nothing of it was written."""

    def __init__(self, note: Note):
        self.note = note  # said in the reader's language by the page
        super().__init__(note.render())


def _setting(variable: str, default: int) -> int:
    """A size from the environment, when it is a positive whole number of bytes."""
    try:
        value = int(os.environ.get(variable, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def run_max_bytes() -> int:
    """The bytes of JSON one run may hold: LOOPSCOPE_RUN_MAX_BYTES, else 64 MiB."""
    return _setting(RUN_MAX_VARIABLE, RUN_MAX)


def quota_bytes() -> int:
    """The bytes all the saved runs of one owner may hold: LOOPSCOPE_RUNS_QUOTA_BYTES, else 256 MiB."""
    return _setting(QUOTA_VARIABLE, QUOTA)


class TakenOver(StoreError):
    """Another tab resumed this run: this tab's steps must go to a new run."""


@dataclass(frozen=True)
class SavedRun:
    id: str
    task: str
    model: str
    steps: int
    ended: str | None
    modified: float  # seconds since the epoch


_BESIDE_APP = Path(__file__).resolve().parents[2] / "runs"  # resolved once: every click of Step asks for the store


def default_root() -> Path:
    """Where the store lives: LOOPSCOPE_RUNS, else `runs/` beside app.py."""
    return Path(os.environ.get("LOOPSCOPE_RUNS") or _BESIDE_APP)


def default_store() -> RunsStore:
    """The server's store: in LOOPSCOPE_DATABASE_URL's PostgreSQL database when set, else SQLite in `default_root()`.

    Made once for each place it names (every click that saves asks for it; a store holds no more than where it is).
    """
    given, url = os.environ.get("LOOPSCOPE_RUNS"), database.from_environment()
    key = (given, url, os.getcwd() if given and not os.path.isabs(given) else None)  # a relative folder: of the cwd
    store = _stores.get(key)
    if store is None:
        store = _stores[key] = RunsStore(default_root(), url=url)
    return store


_stores: dict[tuple, RunsStore] = {}


def owner_key(name: str) -> str:
    """The key a browser's runs are filed under: a hash, so the store holds nothing usable as an id."""
    return hashlib.sha256(name.encode()).hexdigest()


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(6)


def _text(value: object) -> str | None:
    """A value for a text column: a step read from an old journal may hold anything where `ended` belongs."""
    return None if value is None else value if isinstance(value, str) else json.dumps(value, default=str)[:200]


def _check(owner: str, *run_id: str) -> None:
    """Refuse what is not an owner key or (when given) a run id: whatever the page or a crafted cookie hands in."""
    if not isinstance(owner, str) or not OWNER.fullmatch(owner):
        raise ValueError("not an owner key")
    for given in run_id:
        if not (isinstance(given, str) and ID.fullmatch(given)):
            raise ValueError(f"not a run id: {given!r}"[:100])


class RunsStore:
    """Every browser's saved runs: in `<root>/runs.sqlite3`, or in the PostgreSQL database at `url`."""

    def __init__(self, root: str | Path, url: str | None = None):
        self.root = Path(root).absolute()
        self.path = self.root / FILE
        if url is None:
            self.database: database.SQLite | database.PostgreSQL = database.SQLite(self.path, self._private)
        elif url.startswith(("postgresql://", "postgres://")):
            self.database = database.PostgreSQL(url)
        else:
            raise StoreError(f"{database.URL_VARIABLE} is not a postgresql:// URL")
        self._tables: set[tuple[str, int]] = set()  # the parts' tables made or found up to date (`tables`)

    # -- the connection, the schema and the files' modes --
    def _connection(self):
        return self.database.connection(self._check_schema)

    def close(self) -> None:
        """Close this process's connection to the store (it opens again when next used)."""
        with database.lock:
            self.database.close()

    def _private(self) -> None:
        _private_folder(self.root)
        with contextlib.suppress(FileExistsError):  # made with its mode: the -wal and -shm files copy it
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))

    def _check_schema(self, db) -> None:
        try:
            version = self.database.version(db)
            if version > SCHEMA:
                raise StoreError(f"{self.database} was written by a newer Loopscope (schema {version}; this one reads "
                                 f"{SCHEMA})")
            if version < SCHEMA:
                self._migrate(db)
        except self.database.errors as exc:
            raise StoreError(f"{self.database}: {exc}") from exc
        if self.database.files:
            for suffix in ("", "-wal", "-shm"):  # files an older version made, or a copy put here
                _private_file(Path(f"{self.path}{suffix}"))

    def _migrate(self, db) -> None:
        moved = []
        with self.database.schema_transaction(db):
            version = self.database.version(db)
            if version == 0:
                for statement in [*_CREATE.split(";\n"), _SIZES]:
                    if statement.strip():
                        db.execute(self.database.ddl(statement))
                moved = _import_journals(db, self.root)
            elif version < 2:  # a SQLite file of an older version: a store on PostgreSQL began at schema 3
                _add_sizes(db)
            if version < 3:
                db.execute(self.database.ddl(_PROGRESS))
            self.database.set_version(db, SCHEMA)
        for folder in moved:  # imported: out of the way, so they are not imported again
            target = self.root / IMPORTED / owner_key(f"legacy:{folder.name}")
            _private_folder(target.parent)
            with contextlib.suppress(OSError):
                folder.rename(target)

    @contextlib.contextmanager
    def _transaction(self, write: bool, synced: bool = True):
        """A transaction: a write one waits for the writer before it (up to BUSY s); a read one sees a snapshot.

        `synced=False` commits without waiting for the disk (see `move`); the next transaction waits again.
        """
        with database.lock:
            db = self._begun(write, synced)
            try:
                yield from self._in_transaction(db, synced)
            finally:
                self.database.end(db, synced)

    def _begun(self, write: bool, synced: bool):
        """The connection, in a transaction begun; one dropped (a restarted server) is opened again, once."""
        for attempt in (1, 2):
            try:
                db = self._connection()
            except StoreError:
                raise
            except (*self.database.errors, database.Unusable, OSError) as exc:  # a folder we may not write, a file
                # that is not a database, a server that does not answer
                raise StoreError(f"the saved runs cannot be opened: {exc}") from exc
            try:
                self.database.begin(db, write, synced)
                return db
            except self.database.errors as exc:  # a locked file past BUSY seconds, a server gone
                if attempt == 1 and self.database.broken(db):
                    continue
                raise StoreError(f"the saved runs cannot be opened: {exc}") from exc
        raise AssertionError("unreachable")

    def _in_transaction(self, db, synced: bool):
        try:
            yield db
            db.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(*self.database.errors):
                db.execute("ROLLBACK")
            if isinstance(exc, self.database.errors):
                raise StoreError(f"the saved runs: {exc}") from exc
            raise

    # -- for a part that keeps tables of its own in the store (the classes: loop/files/classes.py) --
    @property
    def name(self) -> str:
        """The database's name (a file's path, or its URL): a key for what a process keeps of it, never shown."""
        return self.database.name

    def transaction(self, write: bool = False, *, synced: bool = True):
        """A transaction on the store's database, as a context manager giving the connection: a write one waits for
        the writer before it (up to BUSY s), a read one sees a snapshot; `synced=False` commits without waiting for
        the disk (as `move`). Statements take `?` placeholders on both databases; an error is raised as StoreError."""
        return self._transaction(write, synced)

    def tables(self, part: str, version: int, upgrade: Callable[[Callable[[str], None], int], None]) -> None:
        """Make or upgrade the tables `part` keeps in the store, once for this store object.

        The version `part`'s tables have is kept in the `server` table (`schema:<part>`). When it is below
        `version`, `upgrade(execute, have)` is called in one write transaction, with `execute(statement)`, which
        runs a statement written in SQLite's words on either database, and the version the tables have (0: none,
        or as an older Loopscope left them); the version is then kept. Several processes may ask at once: one
        upgrades, the others find it done.
        """
        if (part, version) in self._tables:
            return
        name = f"schema:{part}"

        def have(db) -> int:
            row = db.execute("SELECT value FROM server WHERE name=?", (name,)).fetchone()
            try:
                return int(bytes(row[0]).decode()) if row else 0
            except ValueError:
                return 0

        with self._transaction(write=False) as db:
            found = have(db)
        if found < version:
            with self._transaction(write=True) as db:
                found = have(db)
                if found < version:
                    upgrade(lambda statement: db.execute(self.database.ddl(statement)), found)
                    db.execute("INSERT INTO server (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET "
                               "value=excluded.value", (name, str(version).encode()))
        self._tables.add((part, version))

    # -- the runs --
    def save(self, owner: str, run_id: str, trace: Trace, settings: dict | None = None, *, writer: str) -> int:
        """Write the steps of `trace` the store does not have yet and its cursor, in one transaction.

        A new run id starts a run, written by `writer` from now on. Raises
        `TakenOver` when another writer resumed the run since. Returns the
        number of steps written.
        """
        _check(owner, run_id)
        now = time.time()
        with self._transaction(write=True) as db:
            row = db.execute("SELECT n, steps, writer, bytes FROM runs WHERE owner=? AND id=?",
                             (owner, run_id)).fetchone()
            if row is None:
                meta = trace.meta
                head = (json.dumps(meta, ensure_ascii=False), json.dumps(without_secrets(settings or {}), ensure_ascii=False))
                n, have, stored, added = None, 0, 0, sum(len(part.encode()) for part in head)
            else:
                n, have, current, stored = row
                if current != writer:
                    raise TakenOver(run_id)
                added = 0
            lines = [journal.step_line(trace, i) for i in range(have, len(trace))]
            added += sum(len(line.encode()) for line in lines)  # what is written: the bytes the store will hold
            if added:
                self._room(db, owner, stored, added)
            if n is None:
                n = db.execute(
                    "INSERT INTO runs (owner, id, task, model, meta, settings, steps, ended, cursor, writer, created,"
                    " modified) VALUES (?, ?, ?, ?, ?, ?, 0, NULL, -1, ?, ?, ?) RETURNING n",
                    (owner, run_id, str(meta.get("task", "")), str(meta.get("model", "")), *head, writer, now,
                     now)).fetchone()[0]
            db.executemany("INSERT INTO steps (run, idx, line) VALUES (?, ?, ?)",
                           ((n, have + k, line) for k, line in enumerate(lines)))
            ended = _text(trace.steps[-1].ended) if len(trace) else None
            db.execute("UPDATE runs SET steps=?, ended=?, cursor=?, modified=?, bytes=? WHERE n=?",
                       (max(have, len(trace)), ended, trace.cursor, now, stored + added, n))
            if row is not None and settings is not None:  # settings changed during the run (the gate) go on with it
                db.execute("UPDATE runs SET settings=? WHERE n=?",
                           (json.dumps(without_secrets(settings), ensure_ascii=False), n))
        return max(0, len(trace) - have)

    @staticmethod
    def _room(db: sqlite3.Connection, owner: str, stored: int, added: int) -> None:
        """Raise `StoreFull` when `added` bytes would pass the size a run may have, or the owner's quota."""
        run_max, quota = run_max_bytes(), quota_bytes()
        if stored + added > run_max:
            raise StoreFull(Note(RUN_FULL, size=size_words(run_max)))
        (total,) = db.execute("SELECT CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM runs WHERE owner=?", (owner,)).fetchone()
        if total + added > quota:
            raise StoreFull(Note(QUOTA_FULL, size=size_words(quota)))

    def move(self, owner: str, run_id: str, cursor: int, *, writer: str) -> None:
        """Keep where the cursor of a saved run is, when a click only moved it (Back, First, the slider).

        Not waited for on the disk (synchronous=NORMAL for this one transaction): a power cut may lose
        where the cursor was, never a step; a killed server loses nothing (the write is in the WAL file).
        Waiting for the disk here was most of the server's time for a click of Back. Raises `TakenOver`
        when another writer resumed the run since, KeyError when the store has no such run.
        """
        _check(owner, run_id)
        with self._transaction(write=True, synced=False) as db:
            # One statement when this writer still has the run (every click but the rare one): a round trip less
            # on PostgreSQL. Only when it changed nothing is it asked why.
            moved = db.execute("UPDATE runs SET cursor=?, modified=? WHERE owner=? AND id=? AND writer=?",
                               (cursor, time.time(), owner, run_id, writer))
            if moved.rowcount == 1:
                return
            if db.execute("SELECT 1 FROM runs WHERE owner=? AND id=?", (owner, run_id)).fetchone() is None:
                raise KeyError(run_id)
            raise TakenOver(run_id)

    def load(self, owner: str, run_id: str, *, writer: str | None = None) -> tuple[Trace, dict]:
        """The trace of a saved run (cursor restored) and its settings; KeyError when this owner has no such run.

        With `writer`, the run is also taken over by it, in the same
        transaction: this is Resume, and the tab that wrote it before gets
        `TakenOver` at its next write. A run that cannot be read raises
        `TranscriptError`.
        """
        _check(owner, run_id)
        with self._transaction(write=writer is not None) as db:
            row = db.execute("SELECT n, meta, settings, cursor FROM runs WHERE owner=? AND id=?",
                             (owner, run_id)).fetchone()
            if row is None:
                raise KeyError(run_id)
            n, meta, settings, cursor = row
            lines = [line for (line,) in db.execute("SELECT line FROM steps WHERE run=? ORDER BY idx", (n,))]
            if writer is not None:
                db.execute("UPDATE runs SET writer=?, modified=? WHERE n=?", (writer, time.time(), n))
        try:
            head = {"meta": json.loads(meta), "settings": json.loads(settings)}
            records = [json.loads(line) for line in lines]
        except (ValueError, RecursionError) as exc:
            raise transcript.TranscriptError(N_("the saved run {id} cannot be read: {error}"), id=run_id, error=str(exc)) \
                from None
        if not all(journal.is_step(r) for r in records):
            raise transcript.TranscriptError(N_("the saved run {id} holds a step of the wrong shape"), id=run_id)
        return journal.to_trace(head, records, cursor)

    def list(self, owner: str) -> list[SavedRun]:
        """This owner's saved runs, newest first."""
        _check(owner)
        with self._transaction(write=False) as db:
            rows = db.execute("SELECT id, task, model, steps, ended, modified FROM runs WHERE owner=? "
                              "ORDER BY modified DESC", (owner,)).fetchall()
        return [SavedRun(*row) for row in rows]

    def delete(self, owner: str, run_id: str) -> bool:
        """Remove a saved run of this owner; False when it has none of that id."""
        _check(owner, run_id)
        with self._transaction(write=True) as db:
            row = db.execute("SELECT n FROM runs WHERE owner=? AND id=?", (owner, run_id)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM steps WHERE run=?", row)
            db.execute("DELETE FROM runs WHERE n=?", row)
        return True

    def journal(self, owner: str, run_id: str) -> list[str]:
        """The run as JSON lines: its facts, then one line a step (loop/files/journal.py)."""
        _check(owner, run_id)
        with self._transaction(write=False) as db:
            row = db.execute("SELECT n, meta, settings FROM runs WHERE owner=? AND id=?", (owner, run_id)).fetchone()
            if row is None:
                raise KeyError(run_id)
            lines = [line for (line,) in db.execute("SELECT line FROM steps WHERE run=? ORDER BY idx", (row[0],))]
        head = json.dumps({"meta": json.loads(row[1]), "settings": json.loads(row[2])}, ensure_ascii=False)
        return [head, *lines]

    # -- for the operator (python -m loop runs) --
    def everyone(self) -> list[tuple[str, SavedRun]]:
        """(owner, run) of every saved run, newest first."""
        with self._transaction(write=False) as db:
            rows = db.execute("SELECT owner, id, task, model, steps, ended, modified FROM runs "
                              "ORDER BY modified DESC").fetchall()
        return [(row[0], SavedRun(*row[1:])) for row in rows]

    def prune(self, older_than_days: float) -> int:
        """Remove the runs not written for `older_than_days` days; returns how many."""
        cutoff = time.time() - older_than_days * 86400
        with self._transaction(write=True) as db:
            old = db.execute("SELECT n FROM runs WHERE modified < ?", (cutoff,)).fetchall()
            db.executemany("DELETE FROM steps WHERE run=?", old)
            db.executemany("DELETE FROM runs WHERE n=?", old)
        return len(old)

    # -- spending with the server's key (loop/engine/keys.py) --
    def spend_call(self, owner: str, limits, now: float) -> tuple[str, int] | None:
        """Count one call of `owner` with the server's key, unless a limit is reached: then (which, spent).

        `which` is "calls" (this hour's), "tokens" (this browser's today) or "all" (every browser's today);
        hours and days are UTC. The check and the count are one transaction: replicas never both pass the last.
        """
        _check(owner)
        hour = int(now // 3600)
        first = hour - hour % 24  # the day's first hour
        with self._transaction(write=True) as db:
            db.execute(self.database.ddl(_SPENDING))
            calls = db.execute("SELECT calls FROM spending WHERE owner=? AND hour=?", (owner, hour)).fetchone()
            today = "SELECT CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM spending WHERE owner=? AND hour BETWEEN ? AND ?"
            mine = db.execute(today, (owner, first, first + 23)).fetchone()[0]
            everyone = db.execute(today, (EVERYONE, first, first + 23)).fetchone()[0]
            calls = calls[0] if calls else 0
            if calls >= limits.calls_an_hour:
                return "calls", calls
            if mine >= limits.tokens_a_day:
                return "tokens", mine
            if everyone >= limits.tokens_a_day_all:
                return "all", everyone
            db.executemany("INSERT INTO spending (owner, hour, calls) VALUES (?, ?, 1) "
                           "ON CONFLICT (owner, hour) DO UPDATE SET calls = spending.calls + 1", ((owner, hour), (EVERYONE, hour)))
            db.execute("DELETE FROM spending WHERE hour < ?", (first - 24,))  # yesterday's is kept, older goes
        return None

    def spend_tokens(self, owner: str, tokens: int, now: float) -> None:
        """Charge `tokens` a call of `owner` used with the server's key, to it and to every browser's total."""
        _check(owner)
        hour = int(now // 3600)
        with self._transaction(write=True) as db:
            db.execute(self.database.ddl(_SPENDING))
            db.executemany("INSERT INTO spending (owner, hour, tokens) VALUES (?, ?, ?) "
                           "ON CONFLICT (owner, hour) DO UPDATE SET tokens = spending.tokens + excluded.tokens",
                           ((owner, hour, int(tokens)), (EVERYONE, hour, int(tokens))))

    # -- the exercises of Your loop this browser has passed --
    def passed(self, owner: str) -> set[str]:
        """The names of the exercises `owner` has passed."""
        _check(owner)
        with self._transaction(write=False) as db:
            rows = db.execute("SELECT exercise FROM progress WHERE owner=?", (owner,)).fetchall()
        return {name for (name,) in rows}

    def mark_passed(self, owner: str, exercise: str) -> None:
        """Keep that `owner` passed `exercise` (passing it again changes nothing)."""
        _check(owner)
        if not isinstance(exercise, str) or not EXERCISE.fullmatch(exercise):
            raise ValueError(f"not an exercise: {exercise!r}"[:100])
        with self._transaction(write=True) as db:
            db.execute("INSERT INTO progress (owner, exercise, passed) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       (owner, exercise, time.time()))

    def secret(self, name: str = "browser-id-key") -> bytes:
        """A random key made once and kept in the store (0600), the same for every process that shares it."""
        with self._transaction(write=False) as db:  # read first: every new session asks, most find it made
            row = db.execute("SELECT value FROM server WHERE name=?", (name,)).fetchone()
        if row is None:
            with self._transaction(write=True) as db:  # made once; another process may be making it too
                db.execute("INSERT INTO server (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (name, secrets.token_bytes(32)))
                row = db.execute("SELECT value FROM server WHERE name=?", (name,)).fetchone()
        return bytes(row[0])


def _private_folder(folder: Path) -> None:
    """`folder`, made 0700 (and made so if it exists with a wider mode)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.stat(folder)
    if stat.S_IMODE(info.st_mode) != 0o700 and info.st_uid == os.geteuid():
        os.chmod(folder, 0o700)


def _private_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.geteuid():
            os.chmod(path, 0o600)


_SIZES = "ALTER TABLE runs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0"


def _add_sizes(db: sqlite3.Connection) -> None:
    """Schema 2: each run keeps the bytes it holds (its facts and its step lines), counted once here."""
    db.execute(_SIZES)
    db.execute("UPDATE runs SET bytes = length(CAST(meta AS BLOB)) + length(CAST(settings AS BLOB)) + "
               "coalesce((SELECT sum(length(CAST(line AS BLOB))) FROM steps WHERE run = runs.n), 0)")


def _import_journals(db: sqlite3.Connection, root: Path) -> list[Path]:
    """Put the journals older versions kept as files into the store (in the caller's transaction).

    Each browser folder's runs are filed under a hash of its old id. That id was a
    link's `session=` parameter, which anyone with the link had: no browser can
    prove it is the one that made them, so none is given them; the operator can
    export them (`python -m loop runs list` and `export`). Returns the folders read.
    """
    read = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return read
    for entry in entries:
        if entry.name == IMPORTED or not (entry.is_dir(follow_symlinks=False) and LEGACY_BROWSER.fullmatch(entry.name)):
            continue
        owner = owner_key(f"legacy:{entry.name}")
        for path in sorted(Path(entry.path).glob("*.jsonl")):
            if path.is_symlink() or not path.is_file() or not ID.fullmatch(path.stem):
                continue
            db.execute("SAVEPOINT journal")  # one journal that cannot be imported leaves the others be
            try:
                _import_journal(db, owner, path)
            except Exception as exc:  # whatever an old file holds, the store must open: keep the file, go on
                db.execute("ROLLBACK TO journal")
                log.warning("a saved run could not be imported and is left as it was: %s: %s", path.name, exc)
            db.execute("RELEASE journal")
        read.append(Path(entry.path))
    return read


def _import_journal(db: sqlite3.Connection, owner: str, path: Path) -> None:
    head, records, cursor = journal.read(path.read_bytes(), path.name)
    if cursor is None:  # a journal from before the cursor lines: its cursor was a file beside it
        with contextlib.suppress(OSError, ValueError):
            cursor = int(path.with_suffix(".cursor").read_text())
    trace, settings = journal.to_trace(head, records, cursor)  # read as the page will, so it opens
    meta = head.get("meta") if isinstance(head.get("meta"), dict) else {}
    modified = path.stat().st_mtime
    facts = (json.dumps(meta, ensure_ascii=False), json.dumps(without_secrets(settings), ensure_ascii=False))
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    size = sum(len(text.encode()) for text in (*facts, *lines))  # as `_add_sizes` counts them
    n = db.execute(
        "INSERT INTO runs (owner, id, task, model, meta, settings, steps, ended, cursor, writer, created,"
        " modified, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?) RETURNING n",
        (owner, path.stem, str(meta.get("task", "")), str(meta.get("model", "")), *facts, len(records),
         _text(trace.steps[-1].ended) if len(trace) else None, trace.cursor, modified, modified, size)).fetchone()[0]
    db.executemany("INSERT INTO steps (run, idx, line) VALUES (?, ?, ?)", ((n, i, line) for i, line in enumerate(lines)))
