"""From Run to the first step drawn, for a learner's loop: the chapter's listing on list-files.

    .venv/bin/python bench/yours.py              # 5 runs cold, 5 warm; medians
    .venv/bin/python bench/yours.py --runs 10
    .venv/bin/python bench/yours.py --check      # Check of statement 3's exercise, as the page runs it

Each run is what the page does on **Run**: the learner's file runs in the sandbox
(`loop.yours.sandboxed.run`: bubblewrap, its own interpreter, the SDK imported
there, every call and tool run answered over the channel), the recording is read
into a trace (`loop.yours.reading.read`), and step 1 is made into the record a
page draws (`loop.views.step.view`). "cold" starts the sandbox's interpreter at
Run; "warm" finds one started ahead (`sandboxed.warm()`, which the page calls
when it opens). Goal: under 2 s from Run to the first step drawn. The figures
say how much of it the model calls and the recording take.

`--check` times **Check** instead: the exercise's answer run on each of its
scenarios (`loop.yours.exercises.run_exercise` with the sandboxed runner) and
the failed run read, from the click to the verdict. "cold" starts every
interpreter at Check; "warm" finds the children the page starts ahead (when the
exercise is picked, and after each Check).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop.views.step import view  # noqa: E402
from loop.yours.exercises import EXERCISES, run_exercise  # noqa: E402
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


def check_once(warm: bool) -> float:
    """From Check to the verdict, in seconds, for statement 3's exercise and its answer."""
    exercise = EXERCISES["write-back"]
    if warm:
        _warm_for(exercise)
        time.sleep(4)  # the exercise was picked a moment before Check: its children have imported the SDK
    start = time.perf_counter()
    verdict = run_exercise(exercise, exercise.answer, "en", sandboxed.run)
    end = time.perf_counter()
    assert verdict.passed, verdict.why
    return end - start


def _warm_for(exercise) -> None:
    """What the page does when an exercise is picked: a child for each of its scenarios, where warm(n) can."""
    try:
        sandboxed.warm(n=len(exercise.scenarios))
    except TypeError:  # a warm() that keeps one child
        sandboxed.warm()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="time Check of an exercise instead of Run")
    args = parser.parse_args()
    if args.check:
        for warm in (False, True):
            figures = [check_once(warm) for _ in range(args.runs)]
            print(f"check {'warm' if warm else 'cold'}: Check to verdict {statistics.median(figures):.2f} s median of "
                  f"{args.runs} (statement 3, {' + '.join(EXERCISES['write-back'].scenarios)}); "
                  f"best {min(figures):.2f} s, worst {max(figures):.2f} s")
        sandboxed.cool()
        return
    for warm in (False, True):
        figures = [once(warm) for _ in range(args.runs)]
        total, ran, drawn = (statistics.median(f[i] for f in figures) for i in range(3))
        print(f"{'warm' if warm else 'cold'}: Run to first step drawn {total:.2f} s median of {args.runs} "
              f"(sandboxed run {ran:.2f} s, reading + first view {drawn * 1000:.1f} ms); "
              f"worst {max(f[0] for f in figures):.2f} s  goal < 2 s")
    sandboxed.cool()


if __name__ == "__main__":
    main()
