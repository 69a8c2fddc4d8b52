"""What watching a learner's lists line by line costs their program (loop/yours/watching.py): CPU time of a loop in the
shape of the chapter's, run as a learner's file under the Watcher and without it.

    .venv/bin/python bench/watching.py              # 20 rounds; medians
    .venv/bin/python bench/watching.py --turns 200  # a longer loop: 200 calls, its messages list 400 long

The loop is the chapter's agent_loop (append the response, run each tool_use, write the results back), its model a
function that answers `tool_use` until the last turn, compiled under a file name the Watcher takes for the
learner's, as the sandbox's bootstrap has it. CPU time (time.process_time), not the clock: the figure holds on a
busy machine. Goal: a few milliseconds a run of the page's scenarios (2 to 4 calls), far under Run's 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loop.yours.watching import Watcher  # noqa: E402

FILE = "/project/your_loop.py"
LEARNER = '''
def agent_loop(state):
    while True:
        response = call_model(state["messages"])
        state["messages"].append({"role": "assistant", "content": response["content"]})
        if response["stop_reason"] != "tool_use":
            return
        results = []
        for block in response["content"]:
            if block["type"] == "tool_use":
                output = run_tool(block)
                results.append({"type": "tool_result", "tool_use_id": block["id"], "content": output})
        state["messages"].append({"role": "user", "content": results})
        state["turn_count"] += 1
'''


def once(turns: int, watched: bool) -> float:
    watcher = Watcher(lambda name: name == FILE, lambda name: name.rsplit("/", 1)[-1])
    n = [0]

    def call_model(messages):
        n[0] += 1
        watcher.sent([{"role": m["role"], "content": m["content"]} for m in messages], sys._getframe(1))
        if n[0] >= turns:
            return {"stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]}
        return {"stop_reason": "tool_use", "content": [{"type": "tool_use", "id": f"toolu_{n[0]}_{k}", "name": "bash",
                                                        "input": {"command": "ls"}} for k in range(2)]}

    names = {"call_model": call_model, "run_tool": lambda block: "README.txt"}
    exec(compile(LEARNER, FILE, "exec"), names)
    state = {"messages": [{"role": "user", "content": "task"}], "turn_count": 1}
    started = time.process_time()
    if watched:
        watcher.start()
    try:
        names["agent_loop"](state)
    finally:
        watcher.stop()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    figures = {True: [], False: []}
    for _ in range(args.rounds):
        for watched in (True, False):
            figures[watched].append(once(args.turns, watched))
    on, off = statistics.median(figures[True]), statistics.median(figures[False])
    print(f"a {args.turns}-call loop: {on * 1000:.2f} ms CPU watched, {off * 1000:.2f} ms not: "
          f"{(on - off) * 1000:.2f} ms for the watching (median of {args.rounds})  goal: a few ms")


if __name__ == "__main__":
    main()
