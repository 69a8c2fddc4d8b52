"""Nothing unbounded: a model's server that answers with 200 MB, and a run or a browser that keeps on saving.

The answer is refused as it is read (loop/engine/capped.py): the command line and the
page say so in the learner's words, memory stays bounded, nothing of it is
kept. The runs store refuses a run past the size a run may have and a browser
past its quota (loop/files/runs.py), and says what to do.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wire import Wire
from loop.engine.capped import ResponseTooLarge
from loop.text.catalogs import Note, size_words
from loop.views.errors import explain
from loop.engine.model import Model, ModelConfig
from loop.files.runs import FILE, RUN_FULL, QUOTA_FULL, RunsStore, StoreFull, owner_key
from tests.browser import serve_app
from tests.fake_server import FakeAnthropic
from tests.cli import loop_main
from tests.test_engine_cli import clean_env
from tests.test_runs_store import FULL, OWNER, prefix

ROOT = Path(__file__).resolve().parent.parent
HUGE = 200 * 2**20  # the probe's answer: one 200 MB text block
REFUSED = "The model's answer was larger than 8 MiB: it was refused"
MiB = 2**20


# -- the answer's cap, in the engine --------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("how", [dict(), dict(declared=True), dict(encoding="gzip")],
                         ids=["unsized", "content-length", "gzip"])
def test_an_answer_over_the_cap_is_refused_once_and_not_retried(fake_api, stream, how):
    fake_api.huge(32 * MiB, **how)  # over the 8 MiB cap however it comes: sized, unsized, or small on the wire
    model = Model(ModelConfig(model="claude-test", api_key="sk-test", base_url=fake_api.url, stream=stream))
    with pytest.raises(ResponseTooLarge) as refused:
        model.create([{"role": "user", "content": "hi"}], None)
    assert len(fake_api.requests) == 1  # the SDK (max_retries=2) did not ask for the same answer again
    assert explain(refused.value).startswith(REFUSED)
    # The next call is an ordinary one: the refused answer left nothing behind in the client.
    assert model.create([{"role": "user", "content": "hi"}], None).response["content"]


def test_the_cap_is_the_operators_and_an_answer_under_it_passes(fake_api, monkeypatch):
    monkeypatch.setenv("LOOPSCOPE_MAX_RESPONSE_BYTES", str(40 * MiB))
    fake_api.huge(32 * MiB)
    model = Model(ModelConfig(model="claude-test", api_key="sk-test", base_url=fake_api.url))
    text = model.create([{"role": "user", "content": "hi"}], None).response["content"][0]["text"]
    assert len(text) == 32 * MiB
    fake_api.huge(41 * MiB)
    with pytest.raises(ResponseTooLarge) as refused:
        model.create([{"role": "user", "content": "hi"}], None)
    assert "40 MiB" in explain(refused.value)


def test_the_refusal_is_said_in_every_language():
    refused = ResponseTooLarge(8 * MiB)
    said = {lang: explain(refused, lang) for lang in ("en", "ja", "zh")}
    assert all("8 MiB" in words for words in said.values())
    assert len(set(said.values())) == 3, said  # translated, not English thrice


# -- the command line -------------------------------------------------------------------------------

def test_the_command_line_refuses_a_200_mb_answer_in_bounded_memory_and_writes_none_of_it(tmp_path):
    # The real entry point, streamed; the answer as one JSON body is the next test's, through `main` in this process.
    with FakeAnthropic() as fake:
        fake.huge(HUGE)
        out, log = tmp_path / "t.json", tmp_path / "run.jsonl"
        args = [sys.executable, "-m", "loop", "run", "What is in this folder?", "--model", "claude-test",
                "--out", str(out), "--journal", str(log), "--stream"]
        # Started from a small Python that reports its child's peak: a process forked straight from this test
        # would count the test process's own memory (the pages it shares until exec) in its ru_maxrss.
        done = subprocess.run([sys.executable, "-c", PEAK_OF, *args], cwd=ROOT, capture_output=True, text=True,
                              env=clean_env(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-test"), timeout=300)
        requests = len(fake.requests)
    status, peak_kib = (int(n) for n in done.stdout.split())
    assert status == 1, done.stderr
    assert f"error: {REFUSED}" in done.stderr
    assert requests == 1  # not retried
    assert peak_kib < 400 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    nothing_written(out, log)


def nothing_written(*paths: Path) -> None:
    """Nothing of the answer was written: the transcript and the journal hold the steps before the call."""
    for written in paths:
        data = written.read_bytes()
        assert len(data) < 64 * 1024 and b"a" * 1000 not in data, written


def status_kib(field: str) -> int:
    return int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith(f"{field}:")))


def test_the_command_line_refuses_a_200_mb_json_answer_without_holding_it(tmp_path):
    # `main` in this process, as `python -m loop` calls it, sparing a second of Python and the SDK starting. The
    # process's peak RSS is set back to what it holds now (/proc/self/clear_refs), so the peak after the run is
    # what the run added at most: far less than the answer, which was never held whole.
    out, log = tmp_path / "t.json", tmp_path / "run.jsonl"
    with FakeAnthropic() as fake:
        fake.huge(HUGE)
        before = status_kib("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")
        (done,) = loop_main(["run", "What is in this folder?", "--model", "claude-test", "--out", out,
                             "--journal", log], env=clean_env(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-test"))
        grown_kib = status_kib("VmHWM") - before
        requests = len(fake.requests)
    assert done.returncode == 1, done.stderr
    assert f"error: {REFUSED}" in done.stderr
    assert requests == 1  # not retried
    assert grown_kib < HUGE // 2 // 1024, f"the peak RSS grew by {grown_kib / 1024:.0f} MiB"
    nothing_written(out, log)


# The command's own output goes to this process's stdout (the peak and its status) and stderr (what it said).
PEAK_OF = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
           "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def test_the_command_lines_journal_stops_at_the_size_a_run_may_have(tmp_path):
    # `main` in this process, as `python -m loop` calls it (the real entry point is the 200 MB test's, above)
    log = tmp_path / "run.jsonl"
    (done,) = loop_main(["run", "--scenario", "two-tools", "--journal", log, "--out", tmp_path / "t.json"],
                        env=clean_env(LOOPSCOPE_RUN_MAX_BYTES="3000"))
    assert done.returncode == 1
    assert "has reached the size a run may hold (2.93 KiB, LOOPSCOPE_RUN_MAX_BYTES): the run stops here" in done.stderr
    assert log.stat().st_size <= 3000
    [json.loads(line) for line in log.read_text().splitlines()]  # every line whole
    assert not (tmp_path / "t.json").exists()


def test_the_command_line_writes_no_transcript_past_the_size_a_run_may_have(tmp_path):
    out = tmp_path / "t.json"
    (done,) = loop_main(["run", "--scenario", "two-tools", "--out", out], env=clean_env(LOOPSCOPE_RUN_MAX_BYTES="5000"))
    assert done.returncode == 1
    assert "more than a run may hold (4.88 KiB, LOOPSCOPE_RUN_MAX_BYTES)" in done.stderr and "is not written" in done.stderr
    assert not out.exists()


# -- the page, on a real server ------------------------------------------------------------------

def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def stored(runs: Path) -> tuple[int, int, int]:
    """(step rows, bytes of their lines, lines holding a run of the huge answer's letters) in the runs store."""
    with sqlite3.connect(runs / FILE) as db:
        return db.execute("SELECT count(*), coalesce(sum(length(CAST(line AS BLOB))), 0), "
                          "count(nullif(instr(line, ?), 0)) FROM steps", ("a" * 1000,)).fetchone()


@pytest.fixture(scope="module")
def big_answer_server(tmp_path_factory):
    """One app server for the page's two ways of reading the answer, its runs in a folder of its own, its model a
    fake on 127.0.0.1: (the app's URL, the server's PID, the runs folder, the fake). Each test is a browser of its
    own on it, and measures the server's memory and the store from where they stood when it began."""
    runs = tmp_path_factory.mktemp("big-answer") / "runs"
    with FakeAnthropic() as fake:
        env = {"LOOPSCOPE_RUNS": str(runs), "ANTHROPIC_BASE_URL": fake.url,
               "LOOPSCOPE_ALLOW_UNSANDBOXED": "1"}  # the answer is refused before any command could run
        started: list = []
        with serve_app(started=started, env=env) as url:
            yield url, started[0].pid, runs, fake


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_the_page_refuses_a_200_mb_answer_keeps_nothing_and_gives_its_memory_back(big_answer_server, stream):
    url, server, runs, fake = big_answer_server
    rows_before = stored(runs)[0] if (runs / FILE).exists() else 0  # the other browser's run, when it ran first

    async def student() -> tuple[Wire, int, tuple, int]:
        wire = Wire(url, agent="big answer student")
        await wire.open()
        for name, value in (("set-model", "An Anthropic model"), ("set-api-key", "sk-test")):
            await wire.rerun(name, string_value=value)
        await wire.rerun("set-approve", bool_value=False)
        if stream:  # the text is drawn as it arrives: 8 MiB of it must not be sent to the page again and again
            await wire.rerun("set-stream", bool_value=True)
        await wire.rerun("new-run")
        for _ in range(3):  # a warm-up: a whole model call and a tool, so the imports are all done
            await wire.rerun("live-step")
        assert not wire.errors, wire.errors
        before, kept = rss_kib(server), stored(runs)
        fake.huge(HUGE)
        calls = len(fake.requests)
        for _ in range(6):
            await wire.rerun("live-step")
            if len(fake.requests) > calls:
                break
        await wire.close()
        return wire, before, kept, len(fake.requests) - calls

    wire, before, kept, calls = asyncio.run(asyncio.wait_for(student(), timeout=240))
    after = rss_kib(server)
    assert calls == 1
    assert wire.shows(REFUSED), wire.errors
    steps, size, holding = stored(runs)
    assert holding == 0 and size - kept[1] < 64 * 1024  # not a byte of it saved: only the stages before the call
    mine = steps - rows_before
    assert wire.status() == (mine, mine)  # the steps the page shows, every one saved, and no step more
    assert after - before < 50 * 1024, f"the server's RSS went from {before // 1024} to {after // 1024} MiB"


# -- the runs store -----------------------------------------------------------------------------

def test_a_run_past_its_size_is_refused_and_nothing_of_that_save_is_written(tmp_path, monkeypatch):
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", prefix(3), writer="tab")
    have = store.journal(OWNER, "r1")
    size = sum(len(line.encode()) for line in have)
    monkeypatch.setenv("LOOPSCOPE_RUN_MAX_BYTES", str(size + 10))  # room for no further step
    with pytest.raises(StoreFull) as full:
        store.save(OWNER, "r1", prefix(5), writer="tab")
    assert full.value.note == Note(RUN_FULL, size=size_words(size + 10))
    assert "Save transcript" in str(full.value)
    assert store.journal(OWNER, "r1") == have and store.list(OWNER)[0].steps == 3
    with pytest.raises(StoreFull):  # a new run that is too large from its first save is not started
        store.save(OWNER, "r2", prefix(5), writer="tab")
    assert [r.id for r in store.list(OWNER)] == ["r1"]
    monkeypatch.delenv("LOOPSCOPE_RUN_MAX_BYTES")
    assert store.save(OWNER, "r1", prefix(5), writer="tab") == 2  # within the default, it goes on


def test_a_browser_past_its_quota_is_refused_and_another_browser_is_not(tmp_path, monkeypatch):
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", FULL, writer="tab")
    one_run = sum(len(line.encode()) for line in store.journal(OWNER, "r1"))
    monkeypatch.setenv("LOOPSCOPE_RUNS_QUOTA_BYTES", str(one_run + one_run // 2))
    with pytest.raises(StoreFull) as full:
        store.save(OWNER, "r2", FULL, writer="tab")
    assert full.value.note.message == QUOTA_FULL and "Delete old runs" in str(full.value)
    assert [r.id for r in store.list(OWNER)] == ["r1"]
    other = owner_key("browser:other")
    assert store.save(other, "r1", FULL, writer="tab2") == len(FULL)  # its own quota, untouched
    assert store.delete(OWNER, "r1")  # deleting an old run makes room again
    assert store.save(OWNER, "r2", FULL, writer="tab") == len(FULL)


def test_a_store_of_the_previous_schema_gets_each_runs_size(tmp_path, monkeypatch):
    store = RunsStore(tmp_path)
    store.save(OWNER, "r1", FULL, writer="tab")
    size = sum(len(line.encode()) for line in store.journal(OWNER, "r1"))
    store.close()
    with sqlite3.connect(tmp_path / FILE) as db:  # as schema 1 had it: no sizes
        db.execute("ALTER TABLE runs DROP COLUMN bytes")
        db.execute("PRAGMA user_version=1")
    monkeypatch.setenv("LOOPSCOPE_RUNS_QUOTA_BYTES", str(size + size // 2))
    with pytest.raises(StoreFull):  # the old run counts against the quota
        RunsStore(tmp_path).save(OWNER, "r2", FULL, writer="tab")
    assert RunsStore(tmp_path).load(OWNER, "r1")[0].steps == FULL.steps
