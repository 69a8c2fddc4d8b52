"""The two databases the runs store (loop/files/runs.py) can live in: what differs between them, in one place.

`SQLite` is the embedded default: one file in the runs folder, shared by the replicas of one machine.
`PostgreSQL` (LOOPSCOPE_DATABASE_URL=postgresql://…, through psycopg 3) is shared by replicas on any machine.

runs.py speaks one SQL to both: `?` placeholders, `ON CONFLICT` upserts, `RETURNING`; its table
definitions in SQLite's words, which `PostgreSQL.ddl` turns into PostgreSQL's. Each class gives:

- `connection()`: one connection a process (never a parent's after fork()), opened again when it was
  dropped (a restarted PostgreSQL server) or its file replaced;
- `transaction(db, write, synced)`: write transactions run one at a time, as SQLite's `BEGIN IMMEDIATE`
  makes them (PostgreSQL: a transaction-level advisory lock), so a check and the write that follows it are
  never split by another writer; a read transaction sees one snapshot;
- the schema's version (SQLite: `PRAGMA user_version`; PostgreSQL: the table `loopscope_schema`);
- its errors, all raised as `StoreError` by runs.py (`errors`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterator

BUSY = 15.0  # seconds a write waits for another process's transaction
URL_VARIABLE = "LOOPSCOPE_DATABASE_URL"


class Unusable(Exception):
    """The database cannot be opened or used (runs.py raises it as StoreError)."""


# One connection a process and database, used by one thread at a time (runs.py holds `lock`). Streamlit
# runs each script run in a new thread, so a connection per thread would be opened at every click; closing
# the last connection of a WAL file also checkpoints it, so one per operation costs a few ms instead of 0.2.
# A child made by fork() must not use its parent's connection (SQLite's rule; a PostgreSQL connection is one
# socket the parent still talks on): connections are kept by process, and a parent's is never used nor closed.
_connections: dict[tuple[str, int], tuple[Any, object]] = {}
_inherited: list[Any] = []
lock = threading.Lock()


def _kept(name: str) -> tuple[tuple[str, int], tuple[Any, object] | None]:
    key = (name, os.getpid())
    if _connections and next(iter(_connections))[1] != key[1]:  # forked: the parent's are not ours
        _inherited.extend(c for c, _ in _connections.values())
        _connections.clear()
    return key, _connections.get(key)


def _forget(name: str) -> None:
    kept = _connections.pop((name, os.getpid()), None)
    if kept is not None:
        with contextlib.suppress(Exception):
            kept[0].close()


class SQLite:
    """`<runs folder>/runs.sqlite3`, in WAL mode; a write waits up to BUSY s for another process's."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    files = True  # lives in the runs folder: its modes are kept private by runs.py

    def __init__(self, path: Path, prepare):
        self.path = path
        self.name = str(path)
        self._prepare = prepare  # runs.py's: the folder and the file made private before the file is opened

    def __str__(self) -> str:
        return self.name

    def connection(self, migrate) -> sqlite3.Connection:
        key, kept = _kept(self.name)
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = None
        if kept is not None and kept[1] == inode:
            return kept[0]
        if kept is not None:  # the file was removed or replaced: its old connection writes nowhere
            _forget(self.name)
        db = self._open(migrate)
        _connections[key] = (db, os.stat(self.path).st_ino)
        return db

    def close(self) -> None:
        _forget(self.name)

    def _open(self, migrate) -> sqlite3.Connection:
        self._prepare()
        db = None
        try:
            db = sqlite3.connect(self.path, timeout=BUSY, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA synchronous=FULL")
            migrate(db)
        except BaseException:
            if db is not None:
                db.close()
            raise
        return db

    @staticmethod
    def version(db: sqlite3.Connection) -> int:
        return db.execute("PRAGMA user_version").fetchone()[0]

    @staticmethod
    def set_version(db: sqlite3.Connection, version: int) -> None:
        db.execute(f"PRAGMA user_version={int(version)}")

    @staticmethod
    def ddl(statement: str) -> str:
        return statement

    @contextlib.contextmanager
    def schema_transaction(self, db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """The transaction that makes or migrates the schema: another replica may be making it too."""
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("BEGIN EXCLUSIVE")  # one does, the other finds it made
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def begin(db: sqlite3.Connection, write: bool, synced: bool) -> None:
        """IMMEDIATE takes the write lock at once (waiting up to BUSY s); a read one sees a snapshot.

        `synced=False` commits without waiting for the disk; `end` sets it back for the next transaction.
        """
        if not synced:
            db.execute("PRAGMA synchronous=NORMAL")
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    @staticmethod
    def end(db: sqlite3.Connection, synced: bool) -> None:
        if not synced:
            with contextlib.suppress(sqlite3.Error):
                db.execute("PRAGMA synchronous=FULL")

    @staticmethod
    def broken(db: sqlite3.Connection) -> bool:
        return False


WRITER = 0x4C6F6F70  # the advisory lock every write transaction takes ("Loop"): writers go one at a time
PLACEHOLDER = re.compile(r"\?")


class _Postgres:
    """A psycopg connection that takes runs.py's `?` placeholders, as sqlite3's does."""

    def __init__(self, connection):
        self.connection = connection

    def execute(self, sql: str, params=()):
        return self.connection.execute(PLACEHOLDER.sub("%s", sql), params, prepare=None)

    def executemany(self, sql: str, rows) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(PLACEHOLDER.sub("%s", sql), list(rows))

    def close(self) -> None:
        self.connection.close()


class PostgreSQL:
    """A PostgreSQL database (psycopg 3), shared by replicas on any machine."""

    files = False

    def __init__(self, url: str):
        import psycopg  # only a store on PostgreSQL needs it

        self.psycopg = psycopg
        self.errors = (psycopg.Error,)
        self.url = url
        self.name = url

    def __str__(self) -> str:
        return "the PostgreSQL database"  # never the URL: it may hold a password

    def connection(self, migrate) -> _Postgres:
        key, kept = _kept(self.name)
        if kept is not None and not self.broken(kept[0]):
            return kept[0]
        if kept is not None:  # the server went away (restarted): a new connection, nothing else lost
            _forget(self.name)
        try:
            db = _Postgres(self.psycopg.connect(self.url, autocommit=True, connect_timeout=int(BUSY)))
        except self.psycopg.Error as exc:
            raise Unusable(f"the PostgreSQL database cannot be reached: {exc}") from exc
        try:
            migrate(db)
        except BaseException:
            db.close()
            raise
        _connections[key] = (db, None)
        return db

    def close(self) -> None:
        _forget(self.name)

    def broken(self, db: _Postgres) -> bool:
        return db.connection.closed or db.connection.broken

    @staticmethod
    def version(db: _Postgres) -> int:
        if db.execute("SELECT to_regclass('loopscope_schema')").fetchone()[0] is None:
            return 0
        row = db.execute("SELECT version FROM loopscope_schema").fetchone()
        return row[0] if row else 0

    @staticmethod
    def set_version(db: _Postgres, version: int) -> None:
        db.execute("DELETE FROM loopscope_schema")
        db.execute("INSERT INTO loopscope_schema (version) VALUES (?)", (int(version),))

    @staticmethod
    def ddl(statement: str) -> str:
        """A table runs.py defines in SQLite's words, in PostgreSQL's: 8-byte numbers, bytes, no rowid clause."""
        statement = re.sub(r"\bn\s+INTEGER PRIMARY KEY\b", "n BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                           statement)
        statement = re.sub(r"\bINTEGER\b", "BIGINT", statement)
        statement = re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)
        statement = re.sub(r"\bBLOB\b", "BYTEA", statement)
        return re.sub(r"\)\s*WITHOUT ROWID\s*$", ")", statement.strip())

    @contextlib.contextmanager
    def schema_transaction(self, db: _Postgres) -> Iterator[_Postgres]:
        """Replicas starting together: the advisory lock lets one make the schema; the others then find it made."""
        db.execute("BEGIN")
        try:
            db.execute("SELECT pg_advisory_xact_lock(?)", (WRITER,))
            db.execute("CREATE TABLE IF NOT EXISTS loopscope_schema (version INTEGER NOT NULL)")
            yield db
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(self.psycopg.Error):
                db.execute("ROLLBACK")
            raise

    def begin(self, db: _Postgres, write: bool, synced: bool) -> None:
        """A write transaction waits for the one writer before it; a read one sees one snapshot throughout."""
        if write:  # one round trip; lock_timeout bounds the wait for the advisory lock as BUSY does SQLite's
            db.execute(f"BEGIN; SET LOCAL lock_timeout = '{int(BUSY)}s'; "
                       + ("" if synced else "SET LOCAL synchronous_commit = off; ")  # the cursor alone: see runs.move
                       + f"SELECT pg_advisory_xact_lock({WRITER})")
        else:
            db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    @staticmethod
    def end(db: _Postgres, synced: bool) -> None:
        """`SET LOCAL` ended with the transaction: nothing to set back."""


def from_environment() -> str | None:
    """LOOPSCOPE_DATABASE_URL when it names a PostgreSQL database, else None (SQLite in the runs folder)."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    return url or None
