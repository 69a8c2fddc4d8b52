"""What counting the server's key costs a call: the check before an attempt and the charge after it.

    .venv/bin/python bench/keys.py                 # 500 calls, 30 browsers, in a temporary runs store
    .venv/bin/python bench/keys.py --calls 2000 --browsers 100

Each call is what `Model` does with an Allowance: `before_call` (one write
transaction in the runs store: read this hour's calls and today's tokens of the
browser and of all browsers, then count the call) and `after_call` (one write
transaction adding the answer's tokens). The store syncs each transaction to
the disk (synchronous=FULL), so the figure is mostly the disk's. A model call
takes seconds; a few milliseconds here is the goal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop.engine.keys import Allowance, Limits  # noqa: E402
from loop.files.runs import RunsStore, owner_key  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--browsers", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = RunsStore(folder)
        limits = Limits(calls_an_hour=10**9, tokens_a_day=10**12, tokens_a_day_all=10**12)
        browsers = [Allowance(store, owner_key(f"browser:{i}"), limits) for i in range(args.browsers)]
        store.secret()  # the store made before timing
        checks, charges = [], []
        for n in range(args.calls):
            allowance = browsers[n % len(browsers)]
            started = time.perf_counter()
            allowance.before_call()
            checks.append(time.perf_counter() - started)
            started = time.perf_counter()
            allowance.after_call({"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 800})
            charges.append(time.perf_counter() - started)
        for name, took in (("check (before_call)", checks), ("charge (after_call)", charges)):
            took = sorted(took)
            print(f"{name}: median {statistics.median(took) * 1000:.2f} ms, "
                  f"p95 {took[int(len(took) * 0.95)] * 1000:.2f} ms, max {took[-1] * 1000:.2f} ms "
                  f"over {len(took)} calls, {args.browsers} browsers")


if __name__ == "__main__":
    main()
