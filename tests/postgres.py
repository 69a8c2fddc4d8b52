"""A real PostgreSQL server for the tests: Debian's, one a test process, listening on a Unix socket only.

`initdb` in a temporary folder owned by the `postgres` user (the tests run as root in CI, and PostgreSQL
refuses to run as root), `pg_ctl -w start` with no TCP port at all: the socket is in that folder, so two
test processes (pytest-xdist) never meet. Each test gets a database of its own (`database()`).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

def _newest() -> Path:
    """Debian's newest PostgreSQL (its binaries are not on PATH): /usr/lib/postgresql/<version>/bin."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if
                   p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


BIN = Path(os.environ.get("LOOPSCOPE_POSTGRES_BIN") or _newest())
USER = "postgres"  # the system user Debian's package makes


def available() -> bool:
    return (BIN / "initdb").exists()


class Server:
    """One PostgreSQL server in `folder`, reached at `url(name)`; `stop()` ends it and removes the folder."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="loopscope-postgres-"))
        self.data = self.folder / "data"
        self._as = []
        if os.geteuid() == 0:  # PostgreSQL will not run as root: the folder is the postgres user's
            user = pwd.getpwnam(USER)
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", USER, "--"]
        self.user = pwd.getpwuid(os.geteuid()).pw_name if not self._as else USER
        try:
            self._run(BIN / "initdb", "-D", self.data, "-U", self.user, "-A", "trust", "--no-sync", "-E", "UTF8",
                      "--locale=C")
            # Only the socket in the folder; no fsync: a test server's data need not outlive a power cut.
            self._run(BIN / "pg_ctl", "-D", self.data, "-w", "-s", "-l", self.folder / "log", "-o",
                      f"-c listen_addresses='' -c unix_socket_directories='{self.folder}' -c fsync=off "
                      "-c full_page_writes=off -c max_connections=60", "start")
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def _run(self, *args) -> None:
        done = subprocess.run([*self._as, *map(str, args)], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}")

    def url(self, schema: str | None = None) -> str:
        """The URL of the server's database; with `schema`, of that schema alone (the store's tables go there)."""
        url = f"postgresql:///postgres?host={self.folder}&user={self.user}"
        return f"{url}&options=-csearch_path%3D{schema}" if schema else url

    def database(self) -> str:
        """A new, empty place for a store on this server: its URL. A schema, not a database: a database
        takes a quarter of a second to make, a schema well under a millisecond, and the store sees only it."""
        import psycopg

        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f"CREATE SCHEMA {name}")
        return self.url(name)

    def restart(self) -> None:
        """Stop the server (every connection to it dropped) and start it again on the same socket."""
        self._run(BIN / "pg_ctl", "-D", self.data, "-w", "-s", "-l", self.folder / "log", "-m", "fast", "restart")

    def stop(self) -> None:
        try:
            self._run(BIN / "pg_ctl", "-D", self.data, "-w", "-s", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


try:
    import pytest
except ImportError:  # imported outside the tests
    pytest = None

if pytest is not None:
    @pytest.fixture(scope="session")
    def postgres_server():
        """This test process's PostgreSQL server, started once (about a second) and stopped at the end."""
        if not available():
            pytest.fail(f"PostgreSQL is missing ({BIN}): `make test` installs Debian's postgresql")
        server = Server()
        yield server
        server.stop()
