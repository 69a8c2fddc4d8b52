"""Children started ahead of Check: warm(n) keeps as many waiting as a Check runs at once, each run takes its own."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from loop.yours import recording as rec
from loop.yours import sandboxed
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.sandboxed import run


def test_warm_keeps_as_many_children_as_a_check_runs_at_once_and_each_run_takes_its_own():
    sandboxed.warm(n=2)
    try:
        waiting = [child.proc.pid for _, child in sandboxed._spares[("s01", 30.0)]]
        assert len(set(waiting)) == 2
        sandboxed.warm(n=2)  # enough wait: none more
        assert [child.proc.pid for _, child in sandboxed._spares[("s01", 30.0)]] == waiting
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda scenario: run(CHAPTER_LOOP, scenario), ["list-files", "recover"]))
        assert ("s01", 30.0) not in sandboxed._spares  # both were used, one a run
    finally:
        sandboxed.cool()
    assert [r.outcome for r in runs] == [rec.RETURNED, rec.RETURNED]


def test_a_child_started_ahead_by_a_thread_that_then_ended_still_serves_the_next_run():
    """The page starts children ahead on a thread of its own, which returns once they are started. On a loaded
    server the child's sandbox is up before that thread returns, and the kernel ended the child (bwrap's
    --die-with-parent) with the thread: a run that had taken it said "the process ended with status -9"."""

    def page_thread():
        sandboxed.warm(n=1)
        [(_, child)] = sandboxed._spares[("s01", 30.0)]
        while not _grandchildren(child.proc.pid):  # its sandbox is up: bwrap has asked to die with its parent
            time.sleep(0.01)

    thread = threading.Thread(target=page_thread)
    thread.start()
    thread.join()
    try:
        [(_, child)] = sandboxed._spares[("s01", 30.0)]
        recording = run(CHAPTER_LOOP, "list-files")
    finally:
        sandboxed.cool()
    assert recording.outcome == rec.RETURNED, recording.message
    assert child.proc.returncode == 0  # the run was this child's, and it ended by itself


def _grandchildren(pid: int) -> list[str]:
    """The pids of the children of `pid`'s children (bwrap's inside), from /proc."""
    def children(p: str) -> list[str]:
        try:
            return Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            return []
    return [g for c in children(str(pid)) for g in children(c)]
