"""The runs store on PostgreSQL (LOOPSCOPE_DATABASE_URL): what only a server shared by several machines has.

The store's other tests run on PostgreSQL too (tests/test_runs_store.py, "postgres" in their ids).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from loop.files.runs import SCHEMA, RunsStore, StoreError, default_store, owner_key
from tests.postgres import postgres_server  # noqa: F401  (a fixture)
from tests.test_runs_store import FULL, OWNER, prefix

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def url(postgres_server):
    """A fresh database on this process's server."""
    url = postgres_server.database()
    yield url
    RunsStore(".", url=url).close()


def _python(code: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(ROOT), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_the_server_picks_postgresql_from_its_environment_and_keeps_nothing_in_the_runs_folder(tmp_path, url,
                                                                                            monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("LOOPSCOPE_DATABASE_URL", url)
    store = default_store()
    store.save(OWNER, "r1", prefix(3), writer="tab")
    assert [r.id for r in RunsStore(tmp_path / "elsewhere", url=url).list(OWNER)] == ["r1"]
    assert not (tmp_path / "runs").exists()
    monkeypatch.setenv("LOOPSCOPE_DATABASE_URL", "mysql://somewhere/else")
    with pytest.raises(StoreError, match="postgresql://"):
        default_store()


def test_every_machine_shares_the_cookie_signing_secret(tmp_path, url):
    """Two processes with different runs folders (two machines) and one database: one secret, one browser id."""
    code = """
        import sys; sys.path.insert(0, sys.argv[1])
        from loop.files.runs import default_store
        print(default_store().secret().hex())
    """
    keys = set()
    for machine in ("a", "b"):
        env = {**os.environ, "LOOPSCOPE_DATABASE_URL": url, "LOOPSCOPE_RUNS": str(tmp_path / machine)}
        child = _python(code, env=env)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        keys.add(out.strip())
    assert len(keys) == 1 and len(bytes.fromhex(keys.pop())) == 32


def test_replicas_starting_together_make_the_schema_once(url):
    code = """
        import sys, time; sys.path.insert(0, sys.argv[1])
        from pathlib import Path
        from loop.files.runs import RunsStore, owner_key
        gate = Path(sys.argv[3])
        gate.joinpath(sys.argv[4]).touch()
        while len(list(gate.iterdir())) < 8:  # all eight replicas are up: they open the store together
            time.sleep(0.001)
        store = RunsStore(".", url=sys.argv[2])
        store.mark_passed(owner_key("browser:" + sys.argv[4]), "run-the-tools")
        print(store.secret().hex())
    """
    import tempfile

    with tempfile.TemporaryDirectory() as gate:
        replicas = [_python(code, url, gate, f"r{i}") for i in range(8)]
        outs = []
        for replica in replicas:
            out, err = replica.communicate(timeout=120)
            assert replica.returncode == 0, err
            outs.append(out.strip())
    assert len(set(outs)) == 1  # one secret, made by one of them
    with psycopg.connect(url) as db:
        assert db.execute("SELECT version FROM loopscope_schema").fetchall() == [(SCHEMA,)]
    store = RunsStore(".", url=url)
    assert all(store.passed(owner_key(f"browser:r{i}")) == {"run-the-tools"} for i in range(8))


def test_a_database_of_a_newer_version_is_refused(url):
    RunsStore(".", url=url).list(OWNER)
    with psycopg.connect(url) as db:
        db.execute("UPDATE loopscope_schema SET version = 99")
    RunsStore(".", url=url).close()
    with pytest.raises(StoreError, match="newer Loopscope"):
        RunsStore(".", url=url).list(OWNER)


def test_a_restarted_server_needs_no_restart_of_loopscope(postgres_server, url):
    store = RunsStore(".", url=url)
    store.save(OWNER, "r1", prefix(3), writer="tab")
    postgres_server.restart()  # every connection dropped
    store.save(OWNER, "r1", prefix(4), writer="tab")  # the next click opens a new one: nothing to say to the page
    store.move(OWNER, "r1", 1, writer="tab")
    trace, _ = RunsStore(".", url=url).load(OWNER, "r1")
    assert (len(trace), trace.cursor) == (4, 1)


def test_a_forked_child_opens_its_own_connection_and_leaves_its_parents_be(url):
    store = RunsStore(".", url=url)
    store.save(OWNER, "r1", prefix(2), writer="tab")
    before = store._connection()
    pid = os.fork()
    if pid == 0:  # the child: a replica forked by a process manager
        code = 1
        try:
            child = RunsStore(".", url=url)
            child.save(OWNER, "r2", prefix(1), writer="child")
            code = 0 if {r.id for r in child.list(OWNER)} == {"r1", "r2"} else 2
            child.close()  # as a process that ends closes its store
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.save(OWNER, "r1", prefix(3), writer="tab")  # the parent's connection was not touched by the child
    assert store._connection() is before  # not dropped under it (which would cost a failed statement and a new one)
    assert {r.id: r.steps for r in store.list(OWNER)} == {"r1": 3, "r2": 1}


def test_a_writer_waits_for_another_machines_write_instead_of_failing_or_mixing(url):
    store = RunsStore(".", url=url)
    store.save(OWNER, "run", prefix(2), writer="tab")
    holder = _python("""
        import sys, time; sys.path.insert(0, sys.argv[1])
        from loop.files.runs import RunsStore
        store = RunsStore(".", url=sys.argv[2])
        with store._transaction(write=True) as db:
            db.execute("UPDATE runs SET writer='elsewhere'")
            print("holding", flush=True)
            time.sleep(1.5)  # another machine's write transaction, held a while
            print("committing", flush=True)
    """, url)
    assert holder.stdout.readline().strip() == "holding"
    from loop.files.runs import TakenOver

    with pytest.raises(TakenOver):  # it waited, then saw the other machine's write: never written over it
        store.save(OWNER, "run", prefix(3), writer="tab")
    import select

    assert select.select([holder.stdout], [], [], 0)[0] == [holder.stdout]
    assert holder.stdout.readline().strip() == "committing"
    holder.wait(timeout=30)
    assert len(store.load(OWNER, "run")[0]) == 2


def test_a_full_run_round_trips_with_its_bytes_and_unicode(url):
    store = RunsStore(".", url=url)
    store.save(OWNER, "r1", FULL, {"toolset": "s01", "note": "日本語 \\ \"quoted\""}, writer="tab")
    trace, settings = RunsStore(".", url=url).load(OWNER, "r1")
    assert trace.steps == FULL.steps and trace.messages == FULL.messages
    assert settings["note"] == "日本語 \\ \"quoted\""


@pytest.mark.usefixtures("no_key_in_environment")
def test_on_postgresql_a_reload_resumes_the_run_and_the_browser_keeps_its_signed_id(tmp_path, url, monkeypatch):
    """The pages as a student sees them, with the store on PostgreSQL: the cookie's id is signed by the key
    kept in the database, a reload finds the saved run, and another browser's made-up id gets nothing."""
    from loop.files import browser_id
    from tests.apptest import app, click, issued, reload

    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("LOOPSCOPE_DATABASE_URL", url)
    at = app()
    cookie = issued(at)
    for _ in range(3):
        click(at, "live-step")
    store = RunsStore(tmp_path / "elsewhere", url=url)  # another machine, the same database
    token = browser_id.verify(store.secret(), cookie)
    assert token is not None and [r.steps for r in store.list(browser_id.owner(token))] == [3]
    again = reload(at)
    assert issued(again) is None  # the cookie was accepted: no new id
    assert "Saved runs · 1" in [e.label for e in again.expander]
    stranger = app(cookies={"loopscope_browser": "A" * 22 + "." + "B" * 43})
    assert issued(stranger) is not None and "Saved runs · 1" not in [e.label for e in stranger.expander]
    assert not (tmp_path / "runs").exists()  # nothing of it on this machine's disk


def test_spending_with_the_servers_key_is_counted_and_limited_on_postgresql(url):
    """What browsers spend with the server's key is counted in the shared database: every machine sees one total."""
    from loop.engine.keys import Limits

    limits = Limits(calls_an_hour=2, tokens_a_day=1000, tokens_a_day_all=1500)
    here, there = RunsStore(".", url=url), RunsStore("/elsewhere", url=url)
    other = owner_key("browser:other")
    now = 1_800_000_000.0
    assert here.spend_call(OWNER, limits, now) is None
    assert there.spend_call(OWNER, limits, now) is None
    assert here.spend_call(OWNER, limits, now) == ("calls", 2)  # two calls this hour, on either machine
    there.spend_tokens(OWNER, 1000, now)
    assert here.spend_call(OWNER, limits, now + 3600) == ("tokens", 1000)  # the next hour: this browser's day is spent
    assert there.spend_call(other, limits, now) is None
    here.spend_tokens(other, 600, now)
    reached = here.spend_call(other, limits, now + 3600)  # every browser's 1600 tokens today
    assert reached == ("all", 1600) and type(reached[1]) is int  # a count the page prints, not a Decimal


KILLED = """
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from tests.test_runs_store import OWNER, prefix
    from loop.files import database
    from loop.files.runs import RunsStore

    kill_at, seen = int(sys.argv[3]), [0]
    store = RunsStore(".", url=sys.argv[2])
    store.list(OWNER)  # connected: what is counted from here on is the save's own statements

    def counted(send):
        def before(self, *args, **kwargs):
            seen[0] += 1
            if seen[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return send(self, *args, **kwargs)
        return before

    database._Postgres.execute = counted(database._Postgres.execute)
    database._Postgres.executemany = counted(database._Postgres.executemany)
    trace = prefix(6)
    trace.goto(1)
    store.save(OWNER, "run", trace, writer="tab")
    print(seen[0], flush=True)
    if kill_at < 0:  # killed just after the save returned: what the page showed must be there
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_killed_before_any_statement_of_a_step_leaves_the_run_before_or_after_it(postgres_server):
    """As on SQLite (tests/test_runs_store.py): a replica killed at any point of a save, the server keeps the run
    as it was before the step or after it, never in between."""
    def case(kill_at: int) -> tuple[str, subprocess.CompletedProcess]:
        url = postgres_server.database()
        RunsStore(".", url=url).save(OWNER, "run", prefix(4), writer="tab")  # four steps, the cursor on the last
        RunsStore(".", url=url).close()
        return url, subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(ROOT), url, str(kill_at)],
                                   capture_output=True, text=True, timeout=60)

    _, done = case(0)
    assert done.returncode == 0, done.stderr
    statements = int(done.stdout)
    assert statements >= 4  # BEGIN with the lock, read, the steps, UPDATE, COMMIT
    outcomes = set()
    for kill_at in [*range(1, statements + 1), -1]:
        url, done = case(kill_at)
        assert done.returncode == -9, (kill_at, done.returncode, done.stderr)
        store = RunsStore(".", url=url)
        trace, _ = store.load(OWNER, "run")
        [listed] = store.list(OWNER)
        assert listed.steps == len(trace)
        state = (len(trace), trace.cursor)
        assert state in {(4, 3), (6, 1)}, (kill_at, state)
        assert [s.stage for s in trace.steps] == [s.stage for s in FULL.steps][: len(trace)]
        outcomes.add(state)
        store.save(OWNER, "run", prefix(len(FULL)), writer="tab")  # stepping on after the crash: every step once
        assert RunsStore(".", url=url).load(OWNER, "run")[0].steps == FULL.steps
        store.close()
    assert outcomes == {(4, 3), (6, 1)}
