"""From Run to the first step drawn, for a learner's loop: the chapter's listing, and a whole agent file in the
shape of the course's s01 (python-dotenv, its own client, its own run_bash with subprocess, an input() REPL), on
list-files.

    .venv/bin/python bench/yours.py              # 5 runs cold, 5 warm, of each; medians
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


def once(warm: bool, source: str = CHAPTER_LOOP) -> tuple[float, float, float]:
    """(Run to the first step drawn, of which the sandboxed run, of which reading and drawing) in seconds."""
    if warm:
        sandboxed.warm()
        time.sleep(3)  # the page opened a moment before Run: the child has imported the SDK by then
    start = time.perf_counter()
    recording = sandboxed.run(source, "list-files")
    ran = time.perf_counter()
    yours = read(recording)
    view(yours.trace, 0, "en")
    end = time.perf_counter()
    assert recording.outcome == "returned", recording.outcome
    return end - start, ran - start, end - ran


# A whole agent file as learners write it after the course's s01 (tests/test_yours_learners.py has more shapes)
S01_SHAPED = '''import os
import subprocess

from anthropic import Anthropic
from dotenv import load_dotenv

load_dotenv(override=True)
client = Anthropic(api_key=os.getenv("ANTHROPIC_API_KEY"), base_url=os.getenv("ANTHROPIC_BASE_URL"),
                   default_headers={"Authorization": f"Bearer {os.getenv('ANTHROPIC_API_KEY')}"})
MODEL = os.environ["MODEL_ID"]
SYSTEM = f"You are a coding agent at {os.getcwd()}. Use bash to solve tasks."
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def run_bash(command: str) -> str:
    r = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    return (r.stdout + r.stderr).strip()[:50000] or "(no output)"


def agent_loop(messages: list):
    while True:
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=TOOLS,
                                          max_tokens=8000)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                results.append({"type": "tool_result", "tool_use_id": block.id,
                                "content": run_bash(block.input["command"])})
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    history = []
    while True:
        try:
            query = input("s01 >> ")
        except EOFError:
            break
        history.append({"role": "user", "content": query})
        agent_loop(history)
'''


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
    for name, source in (("the chapter's listing", CHAPTER_LOOP), ("an s01-shaped whole file", S01_SHAPED)):
        for warm in (False, True):
            figures = [once(warm, source) for _ in range(args.runs)]
            total, ran, drawn = (statistics.median(f[i] for f in figures) for i in range(3))
            print(f"{name}, {'warm' if warm else 'cold'}: Run to first step drawn {total:.2f} s median of {args.runs} "
                  f"(sandboxed run {ran:.2f} s, reading + first view {drawn * 1000:.1f} ms); "
                  f"worst {max(f[0] for f in figures):.2f} s  goal < 2 s")
    sandboxed.cool()


if __name__ == "__main__":
    main()
