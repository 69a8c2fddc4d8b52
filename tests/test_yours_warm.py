"""Children started ahead of Check: warm(n) keeps as many waiting as a Check runs at once, each run takes its own."""

from concurrent.futures import ThreadPoolExecutor

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
