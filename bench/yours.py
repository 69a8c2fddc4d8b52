"""From Run to the first step drawn, for a learner's loop: the chapter's listing on list-files.

    .venv/bin/python bench/yours.py              # 5 runs cold, 5 warm; medians
    .venv/bin/python bench/yours.py --runs 10

Each run is what the page does on **Run**: the learner's file runs in the sandbox
(`loop.yours.sandboxed.run`: bubblewrap, its own interpreter, the SDK imported
there, every call and tool run answered over the channel), the recording is read
into a trace (`loop.yours.reading.read`), and step 1 is made into the record a
page draws (`loop.views.step.view`). "cold" starts the sandbox's interpreter at
Run; "warm" finds one started ahead (`sandboxed.warm()`, which the page calls
when it opens). Goal: under 2 s from Run to the first step drawn. The figures
say how much of it the model calls and the recording take.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop.views.step import view  # noqa: E402
from loop.yours import sandboxed  # noqa: E402
from loop.yours.listing import CHAPTER_LOOP  # noqa: E402
from loop.yours.reading import read  # noqa: E402


def once(warm: bool) -> tuple[float, float, float]:
    """(Run to the first step drawn, of which the sandboxed run, of which reading and drawing) in seconds."""
    if warm:
        sandboxed.warm()
        time.sleep(3)  # the page opened a moment before Run: the child has imported the SDK by then
    start = time.perf_counter()
    recording = sandboxed.run(CHAPTER_LOOP, "list-files")
    ran = time.perf_counter()
    yours = read(recording)
    view(yours.trace, 0, "en")
    end = time.perf_counter()
    assert recording.outcome == "returned", recording.outcome
    return end - start, ran - start, end - ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for warm in (False, True):
        figures = [once(warm) for _ in range(args.runs)]
        total, ran, drawn = (statistics.median(f[i] for f in figures) for i in range(3))
        print(f"{'warm' if warm else 'cold'}: Run to first step drawn {total:.2f} s median of {args.runs} "
              f"(sandboxed run {ran:.2f} s, reading + first view {drawn * 1000:.1f} ms); "
              f"worst {max(f[0] for f in figures):.2f} s  goal < 2 s")
    sandboxed.cool()


if __name__ == "__main__":
    main()
