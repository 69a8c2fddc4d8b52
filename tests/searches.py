"""How many cases each Hypothesis search of the tests draws.

`make test` (and CI) draws every case a search asks for. `make test-fast`, run again and again while working, sets
LOOPSCOPE_SEARCHES=0.25: each search still runs, on a quarter of its cases (at least three).
"""

from __future__ import annotations

import os

SHARE = float(os.environ.get("LOOPSCOPE_SEARCHES") or 1)


def examples(n: int) -> int:
    """`max_examples` for a search that asks for `n` cases in the whole suite."""
    return max(3, round(n * SHARE))
