"""The runs store (loop/files/runs.py): nothing lost at any point of a write, tabs never mixed, private, hostile ids refused.

Crashes are real: a child process saves a step and is killed (SIGKILL) just
before its Nth SQL statement, for every N, then the store is opened again.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from loop.files import browser_id, journal
from loop.files.runs import FILE, SCHEMA, RunsStore, StoreError, TakenOver, owner_key
from loop.files.transcript import TranscriptError, loads
from tests.postgres import postgres_server  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parent.parent
OWNER = owner_key("browser:test")
FULL = loads((ROOT / "samples" / "two-tools.json").read_text())
STAGES = [s.stage for s in FULL.steps]


def prefix(m: int, by: str | None = None):
    """The first `m` steps of two-tools, as a live run has them after m clicks (`by` marks who took steps 4 on)."""
    head = json.loads(journal.head_line(FULL.meta, {}))
    records = [json.loads(journal.step_line(FULL, i)) for i in range(m)]
    for record in records[4:]:
        if by is not None:
            record["step"]["detail"] = dict(record["step"]["detail"], by=by)
    return journal.to_trace(head, records)[0]


class Backend:
    """Where a test's store lives: SQLite in the folder given (the default), or a fresh PostgreSQL database."""

    def __init__(self, name: str, url: str | None = None):
        self.name, self.url = name, url

    def __call__(self, root) -> RunsStore:
        return RunsStore(root, url=self.url)

    def env(self) -> dict[str, str]:
        """The environment of a process that opens this store as the server does."""
        env = {k: v for k, v in os.environ.items() if k != "LOOPSCOPE_DATABASE_URL"}
        return {**env, "LOOPSCOPE_DATABASE_URL": self.url} if self.url else env


@pytest.fixture(params=["sqlite", "postgres"])
def store_at(request):
    """Run a test on both back ends: `store_at(folder)` is the store it uses."""
    if request.param == "sqlite":
        yield Backend("sqlite")
        return
    backend = Backend("postgres", request.getfixturevalue("postgres_server").database())
    yield backend
    backend(".").close()  # its database is not used again: its connection goes


def modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): stat.S_IMODE(p.lstat().st_mode) for p in [folder, *folder.rglob("*")]}


# -- round trip --------------------------------------------------------------------

def test_a_run_is_saved_step_by_step_and_loads_with_its_cursor(tmp_path, store_at):
    store = store_at(tmp_path)
    for m in range(1, 6):
        trace = prefix(m)
        store.save(OWNER, "r1", trace, {"toolset": "s01", "api_key": "sk-ant-never-saved-123"}, writer="tab")
    trace.goto(2)
    assert store.save(OWNER, "r1", trace, writer="tab") == 0  # only the cursor moved: no step written
    loaded, settings = store_at(tmp_path).load(OWNER, "r1")
    assert [s.stage for s in loaded.steps] == STAGES[:5] and loaded.cursor == 2
    assert loaded.messages == FULL.messages[: FULL.steps[4].n_messages]
    assert settings == {"toolset": "s01"}  # never a key
    [saved] = store.list(OWNER)
    assert (saved.id, saved.steps, saved.ended, saved.task) == ("r1", 5, None, FULL.meta["task"])
    # the steps are journal lines a person (or jq) can read, and that the Replay page opens
    lines = store.journal(OWNER, "r1")
    assert json.loads(lines[1])["step"]["stage"] == STAGES[0] and len(lines) == 6
    from loop.importers import import_bytes

    assert len(import_bytes("\n".join(lines).encode(), "run.jsonl").trace) == 5


def test_a_step_is_committed_waiting_for_the_disk_and_only_a_moved_cursor_is_not(tmp_path):
    """runs.py promises a step survives a power cut: every transaction that writes a step runs with
    synchronous=FULL (2); only `move` (the cursor alone) commits with NORMAL (1), and the next one waits again."""
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", prefix(1), writer="tab")
    db = store._connection()
    committed: list[int] = []  # the pragma in force at each COMMIT on the store's connection

    def seen(statement: str) -> None:
        if statement.strip().upper().startswith("COMMIT"):
            committed.append(pragma())

    def pragma() -> int:
        db.set_trace_callback(None)
        try:
            return db.execute("PRAGMA synchronous").fetchone()[0]
        finally:
            db.set_trace_callback(seen)

    db.set_trace_callback(seen)
    try:
        store.save(OWNER, "r1", prefix(2), writer="tab")  # a step
        assert committed == [2]
        store.move(OWNER, "r1", 0, writer="tab")  # the cursor only
        store.save(OWNER, "r1", prefix(3), writer="tab")  # a step again
    finally:
        db.set_trace_callback(None)
    assert committed == [2, 1, 2]
    assert pragma() == 2

def test_the_schema_has_a_version_and_a_newer_one_is_refused(tmp_path):
    RunsStore(tmp_path).list(OWNER)
    RunsStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / FILE)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute("PRAGMA user_version=99")
    db.close()
    other = tmp_path / "copy"
    other.mkdir()
    shutil.copy(tmp_path / FILE, other / FILE)
    with pytest.raises(StoreError, match="newer Loopscope"):
        RunsStore(other).list(OWNER)


def test_a_store_removed_while_the_server_runs_is_made_again(tmp_path):
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", prefix(2), writer="tab")
    for p in tmp_path.iterdir():
        p.unlink()
    store.save(OWNER, "r2", prefix(3), writer="tab")
    assert [r.id for r in RunsStore(tmp_path).list(OWNER)] == ["r2"]


# -- a crash at every point of a write ------------------------------------------------

CHILD = textwrap.dedent("""
    import os, signal, sqlite3, sys
    sys.path.insert(0, sys.argv[1])
    from tests.test_runs_store import OWNER, prefix
    from loop.files.runs import RunsStore

    kill_at, seen = int(sys.argv[4]), [0]
    connect = sqlite3.connect

    def traced(*args, **kwargs):  # every statement the store sends goes by here first
        db = connect(*args, **kwargs)
        def before(statement):
            seen[0] += 1
            if seen[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        db.set_trace_callback(before)
        return db

    sqlite3.connect = traced
    steps = int(sys.argv[3])
    if steps:  # a step: its lines and the cursor
        trace = prefix(steps)
        trace.goto(1)
        RunsStore(sys.argv[2]).save(OWNER, "run", trace, writer="tab")
    else:  # Back: the cursor only
        RunsStore(sys.argv[2]).move(OWNER, "run", 1, writer="tab")
    print(seen[0], flush=True)
    if kill_at < 0:  # killed just after the save returned: what the page showed must be there
        os.kill(os.getpid(), signal.SIGKILL)
""")


def _child(root: Path, steps: int, kill_at: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(root), str(steps), str(kill_at)],
                          capture_output=True, text=True, timeout=60)


def test_a_writer_killed_before_any_statement_of_a_step_leaves_the_run_before_or_after_it(tmp_path):
    pristine = tmp_path / "pristine"
    store = RunsStore(pristine)
    start = prefix(4)
    store.save(OWNER, "run", start, writer="tab")  # four steps saved, the cursor on the last
    store.close()  # copied closed; each child opens its own
    shutil.copytree(pristine, tmp_path / "dry")
    done = _child(tmp_path / "dry", 6, 0)
    assert done.returncode == 0, done.stderr
    statements = int(done.stdout)
    assert statements >= 6  # open, BEGIN, read, two INSERTs, UPDATE, COMMIT
    outcomes = set()
    for kill_at in [*range(1, statements + 1), -1]:
        case = tmp_path / f"kill-{kill_at}"
        shutil.copytree(pristine, case)
        done = _child(case, 6, kill_at)
        assert done.returncode == -9, (kill_at, done.returncode, done.stderr)
        trace, _ = RunsStore(case).load(OWNER, "run")
        [listed] = RunsStore(case).list(OWNER)
        assert listed.steps == len(trace)  # the list never counts a step that is not there
        state = (len(trace), trace.cursor)
        assert state in {(4, 3), (6, 1)}, (kill_at, state)  # before the step, or after it: never between
        assert [s.stage for s in trace.steps] == STAGES[: len(trace)]
        outcomes.add(state)
        # Resume after the crash, step on to the end, reload: every step is there, once
        resumed, _ = RunsStore(case).load(OWNER, "run", writer="after-crash")
        assert len(resumed) == state[0]
        RunsStore(case).save(OWNER, "run", prefix(len(FULL)), writer="after-crash")
        again, _ = RunsStore(case).load(OWNER, "run")
        assert [s.stage for s in again.steps] == STAGES and again.messages == FULL.messages
    assert outcomes == {(4, 3), (6, 1)}  # both happened: the kills landed on both sides of the commit


def test_a_writer_killed_while_it_moves_the_cursor_leaves_it_before_or_after_the_move(tmp_path):
    """Back, First and the slider only move the cursor (`move`, not waited for on the disk): a killed server
    keeps either cursor and every step, and the store waits for the disk again at the next step."""
    pristine = tmp_path / "pristine"
    RunsStore(pristine).save(OWNER, "run", prefix(4), writer="tab")  # the cursor on the last of four steps
    RunsStore(pristine).close()
    done = _child(shutil.copytree(pristine, tmp_path / "dry"), 0, 0)
    assert done.returncode == 0, done.stderr
    statements = int(done.stdout)
    outcomes = set()
    for kill_at in [*range(1, statements + 1), -1]:
        case = shutil.copytree(pristine, tmp_path / f"kill-{kill_at}")
        done = _child(case, 0, kill_at)
        assert done.returncode == -9, (kill_at, done.returncode, done.stderr)
        trace, _ = RunsStore(case).load(OWNER, "run")
        assert [s.stage for s in trace.steps] == STAGES[:4]
        outcomes.add(trace.cursor)
        if kill_at == -1:  # killed once `move` returned: the page's cursor is the saved one
            assert trace.cursor == 1
    assert outcomes == {3, 1}


def test_a_moved_cursor_is_kept_and_the_next_step_is_waited_for_on_the_disk(tmp_path):
    store = RunsStore(tmp_path)
    store.save(OWNER, "run", prefix(4), writer="tab")
    said = []
    store._connection().set_trace_callback(said.append)
    store.move(OWNER, "run", 0, writer="tab")
    assert RunsStore(tmp_path).load(OWNER, "run")[0].cursor == 0 and [r.steps for r in store.list(OWNER)] == [4]
    update = next(i for i, sql in enumerate(said) if sql.startswith("UPDATE"))
    assert said.index("PRAGMA synchronous=NORMAL") < update < said.index("PRAGMA synchronous=FULL")
    assert store._connection().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL again for the next step
    with pytest.raises(KeyError):  # a run the store does not have (deleted in another tab) is not made by a move
        store.move(OWNER, "other", 0, writer="tab")
    assert store._connection().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL again after a refusal too
    assert [r.id for r in store.list(OWNER)] == ["run"]


# -- tabs -----------------------------------------------------------------------------

def test_a_tab_whose_run_was_resumed_elsewhere_cannot_write_it(tmp_path, store_at):
    store = store_at(tmp_path)
    store.save(OWNER, "run", prefix(4), writer="first")
    store.load(OWNER, "run", writer="second")  # Resume in another tab
    with pytest.raises(TakenOver):
        store.save(OWNER, "run", prefix(5, by="first"), writer="first")
    with pytest.raises(TakenOver):  # a move of the cursor neither
        store.save(OWNER, "run", prefix(4), writer="first")
    with pytest.raises(TakenOver):
        store.move(OWNER, "run", 0, writer="first")
    store.save(OWNER, "run", prefix(5, by="second"), writer="second")
    trace, _ = store.load(OWNER, "run")
    assert trace.steps[4].detail.get("by") == "second"


RACER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from tests.test_runs_store import FULL, OWNER
    from loop.files import journal
    from loop.files.runs import RunsStore, TakenOver, new_run_id

    store, me, gate = RunsStore(sys.argv[2], url=sys.argv[5] or None), sys.argv[3], Path(sys.argv[4])
    (gate / me).touch()
    while len(list(gate.iterdir())) < 4:  # all four tabs are ready: they press Resume together
        time.sleep(0.001)
    trace, _ = store.load(OWNER, "run", writer=me)  # Resume
    time.sleep(0.3)  # a person between Resume and Step
    run_id = "run"
    for _ in range(2):
        record = json.loads(journal.step_line(FULL, len(trace)))
        record["step"]["detail"]["by"] = me
        trace = journal.to_trace({"meta": trace.meta}, [json.loads(journal.step_line(trace, i))
                                                          for i in range(len(trace))] + [record])[0]
        try:
            store.save(OWNER, run_id, trace, writer=me)
        except TakenOver:
            run_id = new_run_id()
            store.save(OWNER, run_id, trace, writer=me)
    print(json.dumps({"run": run_id, "by": [s.detail.get("by") for s in trace.steps]}))
""")


def test_four_tabs_resuming_one_run_at_once_never_mix_their_steps(tmp_path, store_at):
    store = store_at(tmp_path / "runs")
    store.save(OWNER, "run", prefix(2), writer="made-it")
    gate = tmp_path / "gate"
    gate.mkdir()
    tabs = [subprocess.Popen([sys.executable, "-c", RACER, str(ROOT), str(tmp_path / "runs"), f"tab{i}", str(gate),
                              store_at.url or ""],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    ended = {}
    for i, tab in enumerate(tabs):
        out, err = tab.communicate(timeout=120)
        assert tab.returncode == 0, err
        ended[f"tab{i}"] = json.loads(out)
    runs = {r.id: store.load(OWNER, r.id)[0] for r in store.list(OWNER)}
    assert len({e["run"] for e in ended.values()}) >= 2  # the tabs resumed together: others went on as new runs
    for tab, end in ended.items():  # each tab's steps are all there, under the id it ended with, and nothing else
        saved = runs[end["run"]]
        assert [s.detail.get("by") for s in saved.steps] == end["by"]
        assert end["by"][-2:] == [tab, tab]
    for run_id, trace in runs.items():
        assert [s.stage for s in trace.steps] == STAGES[: len(trace)]
        assert any([s.detail.get("by") for s in trace.steps] == e["by"] for e in ended.values()), run_id


def test_a_writer_waits_for_another_process_transaction_instead_of_failing(tmp_path):
    store = RunsStore(tmp_path)
    store.save(OWNER, "run", prefix(2), writer="tab")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        db = sqlite3.connect({str(tmp_path / FILE)!r}, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        print("holding", flush=True)
        time.sleep(1.5)  # the other process's transaction, held a while
        print("committing", flush=True)
        db.execute("COMMIT")
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    store.save(OWNER, "run", prefix(3), writer="tab")
    # The save returned only after the other process let its transaction go: it had said so by then.
    import select

    assert select.select([holder.stdout], [], [], 0)[0] == [holder.stdout]
    assert holder.stdout.readline().strip() == "committing"
    holder.wait(timeout=30)
    assert len(store.load(OWNER, "run")[0]) == 3


# -- private --------------------------------------------------------------------------

def test_the_store_is_private_folder_0700_files_0600_and_the_umask_untouched(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    root = Path(tempfile.mkdtemp(prefix="loopscope-test-runs-"))  # under /tmp, as a real one may be
    try:
        os.chmod(root, 0o755)  # as older versions left runs/: 755, journals 644
        old = root / "OldBrowserId-0123456789"
        old.mkdir(mode=0o755)
        (old / "r.jsonl").write_text(journal.head_line({}, {}) + "\n")
        os.chmod(old / "r.jsonl", 0o644)
        store = RunsStore(root)
        store.save(OWNER, "run", prefix(3), writer="tab")  # the connection stays open: -wal and -shm exist
        assert os.umask(umask) == umask  # the process's umask was not changed
        found = modes(root)
        assert found["."] == 0o700
        for name in (FILE, f"{FILE}-wal", f"{FILE}-shm"):
            assert found[name] == 0o600, (name, oct(found[name]))
        assert found["journals-imported"] == 0o700
        store.close()
        os.chmod(root / FILE, 0o644)  # a store copied in with a wider mode is made private when opened
        store.list(OWNER)
        assert stat.S_IMODE((root / FILE).stat().st_mode) == 0o600
        assert not (root / old.name).exists()  # no folder or file is named by a usable id
        assert all(len(p.name) == 64 for p in (root / "journals-imported").iterdir())
        if os.geteuid() == 0:  # as root, a command runs as nobody: it cannot even list the store
            looked = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ls", str(root)],
                                    capture_output=True, text=True)
            assert looked.returncode != 0 and "Permission denied" in looked.stderr
            read = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                                   str(root / FILE)], capture_output=True, text=True)
            assert read.returncode != 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_server_secret_is_made_once_and_shared_by_every_process(tmp_path, store_at):
    key = store_at(tmp_path).secret()
    assert len(key) == 32 and key == store_at(tmp_path).secret()
    other = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                            f"from loop.files.runs import RunsStore; print(RunsStore({str(tmp_path)!r}, url={store_at.url!r})"
                            ".secret().hex())"],
                           capture_output=True, text=True, timeout=60)
    assert other.stdout.strip() == key.hex()
    assert key.hex() not in "".join(p.name for p in tmp_path.rglob("*"))


# -- hostile ids ----------------------------------------------------------------------

HOSTILE_RUN_IDS = ["../../etc/passwd", "..", ".", "", "a/b", "a\\b", "a\x00b", "x" * 65, "' OR '1'='1", "r1; DROP TABLE runs",
                   "é", " run", "run\n", None, 5, ["run"], "/tmp/x", "%2e%2e"]


@pytest.mark.parametrize("run_id", HOSTILE_RUN_IDS)
def test_a_hostile_run_id_is_refused_and_touches_nothing(tmp_path, store_at, run_id):
    root = tmp_path / "runs"
    outside = tmp_path / "outside.jsonl"
    outside.write_text("keep me")
    store = store_at(root)
    store.save(OWNER, "r1", prefix(2), writer="tab")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for call in (lambda: store.save(OWNER, run_id, prefix(2), writer="tab"), lambda: store.load(OWNER, run_id),
                 lambda: store.load(OWNER, run_id, writer="tab"), lambda: store.delete(OWNER, run_id),
                 lambda: store.move(OWNER, run_id, 0, writer="tab"),
                 lambda: store.journal(OWNER, run_id)):
        with pytest.raises(ValueError):
            call()
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and outside.read_text() == "keep me"
    assert [r.id for r in store.list(OWNER)] == ["r1"] and len(store.load(OWNER, "r1")[0]) == 2


@pytest.mark.parametrize("owner", ["", "../x", "A" * 64, "g" * 64, "0" * 63, "0" * 65, None, "browser:test"])
def test_a_hostile_owner_key_is_refused(tmp_path, store_at, owner):
    store = store_at(tmp_path)
    store.save(OWNER, "r1", prefix(2), writer="tab")
    for call in (lambda: store.list(owner), lambda: store.load(owner, "r1"), lambda: store.delete(owner, "r1"),
                 lambda: store.save(owner, "r1", prefix(3), writer="tab")):
        with pytest.raises(ValueError):
            call()
    assert len(store.load(OWNER, "r1")[0]) == 2


def test_another_browser_cannot_read_resume_or_delete_a_run_even_knowing_its_id(tmp_path, store_at):
    store = store_at(tmp_path)
    store.save(OWNER, "r1", prefix(3), writer="tab")
    other = owner_key("browser:someone-else")
    assert store.list(other) == []
    with pytest.raises(KeyError):
        store.load(other, "r1")
    with pytest.raises(KeyError):
        store.load(other, "r1", writer="thief")
    assert store.delete(other, "r1") is False
    store.save(other, "r1", prefix(1), writer="thief")  # the same id, another browser: another run
    assert len(store.load(OWNER, "r1")[0]) == 3 and len(store.load(other, "r1")[0]) == 1
    store.save(OWNER, "r1", prefix(4), writer="tab")  # and the owner's writer was not taken over


@pytest.mark.parametrize("value", [None, 5, "", ".", "a.b", "x" * 10_000, "A" * 22 + "." + "B" * 43,
                                   "A" * 22 + "." + "B" * 43 + "\n", "é" * 22 + "." + "B" * 43, ["a"], b"a.b"])
def test_a_made_up_or_altered_browser_id_is_refused(value):
    key = b"k" * 32
    assert browser_id.verify(key, value) is None
    real = browser_id.issue(key)
    token = browser_id.verify(key, real)
    assert token is not None and browser_id.owner(token) != browser_id.owner(token + "x")
    assert browser_id.verify(b"another server's key" * 2, real) is None
    altered = real[:-1] + ("A" if real[-1] != "A" else "B")
    assert browser_id.verify(key, altered) is None
    assert token not in browser_id.owner(token)


def test_old_journals_are_imported_once_and_links_outside_the_folder_are_not_followed(tmp_path, store_at):
    root = tmp_path / "runs"
    secret_place = tmp_path / "elsewhere"
    secret_place.mkdir()
    (secret_place / "stolen.jsonl").write_text(journal.head_line({"task": "not yours"}, {}) + "\n")
    good = root / "OldBrowserId-0123456789"
    good.mkdir(parents=True)
    lines = [journal.head_line(FULL.meta, {"tool_timeout": 30}), *(journal.step_line(FULL, i) for i in range(5))]
    (good / "r1.jsonl").write_text("\n".join(lines) + "\n")
    (good / "r1.cursor").write_text("2")  # the cursor as the oldest versions kept it
    (good / "cut.jsonl").write_text("\n".join(lines) + '\n{"step": {"stage": "call_mo')  # a crash mid-line
    (good / "link.jsonl").symlink_to(secret_place / "stolen.jsonl")
    (root / "LinkedBrowserId-0123456789").symlink_to(secret_place)
    (root / "../escape").mkdir(exist_ok=True)

    store = store_at(root)
    [(owner, _), (_, _)] = store.everyone()
    assert owner == owner_key("legacy:OldBrowserId-0123456789")
    assert {r.id: r.steps for r in store.list(owner)} == {"r1": 5, "cut": 5}
    trace, settings = store.load(owner, "r1")
    assert (len(trace), trace.cursor, settings) == (5, 2, {"tool_timeout": 30})
    assert [s.stage for s in trace.steps] == STAGES[:5]
    assert (secret_place / "stolen.jsonl").exists() and (root / "LinkedBrowserId-0123456789").is_symlink()
    assert not any(r.task == "not yours" for _, r in store.everyone())
    # once: a second store on the folder, or a new process, finds them imported and does not add them again
    store.close()
    assert len(store_at(root).everyone()) == 2
    assert not good.exists()


def test_a_journal_that_is_not_one_is_a_transcript_error_never_a_crash():
    with pytest.raises(TranscriptError):
        journal.read(b'{"meta": {}}\n{"step": 3, "messages": []}\n', "run.jsonl")


def test_the_operator_lists_exports_and_prunes_saved_runs(tmp_path, store_at):
    store = store_at(tmp_path)
    store.save(OWNER, "r1", prefix(4), {"toolset": "s01"}, writer="tab")
    store.save(owner_key("browser:other"), "r1", prefix(2), writer="tab")  # the same id in another browser

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "loop", "runs", "--store", str(tmp_path), *args],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env=store_at.env())

    listed = cli("list")
    assert listed.returncode == 0 and listed.stdout.count(" r1 ") == 2 and "4 steps" in listed.stdout
    assert cli("export", "r1").returncode == 1  # two runs have that id: which one?
    out = tmp_path.parent / "r1.jsonl"
    done = cli("export", "r1", "--owner", OWNER[:8], "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["settings"] == {"toolset": "s01"}
    from loop.importers import import_bytes

    imported = import_bytes(out.read_bytes(), "r1.jsonl")
    assert imported.format == "loopscope-journal" and [s.stage for s in imported.trace.steps] == STAGES[:4]
    assert "removed 0 saved run(s)" in cli("prune", "--days", "1").stdout
    assert "removed 2 saved run(s)" in cli("prune", "--days", "0").stdout
    assert cli("list").stdout == ""


# -- progress in the exercises of Your loop --------------------------------------------------------

def test_a_store_of_the_previous_schema_keeps_every_run_and_gains_the_progress_of_exercises(tmp_path):
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", FULL, writer="tab")
    store.save(OWNER, "r2", prefix(4), writer="tab")
    store.close()
    with sqlite3.connect(tmp_path / FILE) as db:  # as schema 2 had it: no progress
        db.execute("DROP TABLE progress")
        db.execute("PRAGMA user_version=2")
    again = RunsStore(tmp_path)
    assert again.passed(OWNER) == set()
    assert {r.id: r.steps for r in again.list(OWNER)} == {"r1": len(FULL), "r2": 4}
    assert again.load(OWNER, "r1")[0].steps == FULL.steps
    again.mark_passed(OWNER, "write-back")
    again.close()
    with sqlite3.connect(tmp_path / FILE) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA == 4
    assert RunsStore(tmp_path).passed(OWNER) == {"write-back"}


def test_progress_is_kept_for_each_browser_apart_and_a_hostile_name_is_refused(tmp_path, store_at):
    store = store_at(tmp_path)
    other = owner_key("browser:other")
    store.mark_passed(OWNER, "run-the-tools")
    store.mark_passed(OWNER, "run-the-tools")  # passed again: still one
    store.mark_passed(other, "append-the-response")
    assert store.passed(OWNER) == {"run-the-tools"}
    assert store.passed(other) == {"append-the-response"}
    for hostile in ["", "x' OR 1=1 --", "a" * 65, None]:
        with pytest.raises(ValueError):
            store.mark_passed(OWNER, hostile)
    with pytest.raises(ValueError):
        store.passed("not-a-hash")
    assert store.passed(OWNER) == {"run-the-tools"}


def test_a_moved_cursor_is_one_statement_for_the_tab_that_writes_the_run(tmp_path):
    """Back, First and the slider write only the cursor, at every click: one UPDATE, no read before it (a round
    trip less on PostgreSQL); a run gone or taken over is still refused as it was."""
    store = RunsStore(tmp_path)
    store.save(OWNER, "run", prefix(4), writer="tab")
    said = []
    store._connection().set_trace_callback(said.append)
    try:
        store.move(OWNER, "run", 1, writer="tab")
    finally:
        store._connection().set_trace_callback(None)
    assert [sql.split()[0] for sql in said if sql.split()[0] in ("SELECT", "UPDATE", "INSERT", "DELETE")] == ["UPDATE"]
    assert RunsStore(tmp_path).load(OWNER, "run")[0].cursor == 1
    with pytest.raises(KeyError):
        store.move(OWNER, "other", 0, writer="tab")
    store.load(OWNER, "run", writer="another tab")
    with pytest.raises(TakenOver):
        store.move(OWNER, "run", 0, writer="tab")
    assert RunsStore(tmp_path).load(OWNER, "run")[0].cursor == 1


def test_the_server_s_store_is_made_once_for_each_folder_it_lives_in(tmp_path, monkeypatch):
    from loop.files.runs import default_store

    monkeypatch.delenv("LOOPSCOPE_DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path / "a"))
    first = default_store()
    assert default_store() is first  # every click that saves asks for it
    first.save(OWNER, "r1", prefix(3), writer="tab")
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path / "b"))
    assert default_store().list(OWNER) == []  # another folder: another store
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPSCOPE_RUNS", "a")  # a folder of the working directory
    assert [r.id for r in default_store().list(OWNER)] == ["r1"]
    monkeypatch.chdir(tmp_path / "b")
    assert default_store().list(OWNER) == []
