"""How many cases each Hypothesis search, and each parametrized family, of the tests runs.

`make test` (and CI) runs every case. `make test-fast`, run again and again while working, sets
LOOPSCOPE_SEARCHES=0.25 and LOOPSCOPE_CASES=0.4: each search still runs, on a quarter of its cases (at least
three), and each parametrized test on two fifths of its cases (at least one), drawn anew at each run from
LOOPSCOPE_CASES_SEED (the Makefile prints it: set it to draw the same cases again). Over a few runs every case
comes up, as a search's examples do.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict

SHARE = float(os.environ.get("LOOPSCOPE_SEARCHES") or 1)
CASES = float(os.environ.get("LOOPSCOPE_CASES") or 1)
SEED = os.environ.get("LOOPSCOPE_CASES_SEED") or "0"  # every test process must draw the same cases


def examples(n: int) -> int:
    """`max_examples` for a search that asks for `n` cases in the whole suite."""
    return max(3, round(n * SHARE))


def drawn(items: list, share: float = CASES, seed: str = SEED) -> tuple[list, list]:
    """(the tests to run, the cases left out): of each parametrized test's cases (a family: one function of one
    file, or of one class), `share` of them, at least one, the same in every process given the same seed; a test
    that is not parametrized always runs. The order of `items` is kept."""
    if share >= 1:
        return items, []
    families = defaultdict(list)
    for item in items:
        if getattr(item, "callspec", None) is not None:
            families[(item.nodeid.split("[", 1)[0])].append(item)
    left_out = set()
    for family, cases in families.items():
        keep = max(1, round(len(cases) * share))
        chosen = set(random.Random(f"{seed}:{family}").sample(range(len(cases)), keep))
        left_out |= {id(case) for i, case in enumerate(cases) if i not in chosen}
    return [item for item in items if id(item) not in left_out], [item for item in items if id(item) in left_out]
