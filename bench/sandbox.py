"""What one command costs in the sandbox: `echo hi` through `ToolBox.run`, as a step runs it.

    .venv/bin/python bench/sandbox.py                 # 200 runs of `echo hi`, after 10 to warm up
    .venv/bin/python bench/sandbox.py --runs 500 --command 'ls -la'

Each run is one `bash` tool_use: the deny-list, the sandbox's start (bubblewrap,
the run's cgroup, the user), the command, the kill of whatever it left, and the
output. Prints the median, the 90th percentile and the worst in milliseconds,
and how commands run here (the sandbox's mode).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from loop.tools import Bash, ToolBox  # noqa: E402


def _workspace():
    """A workspace as a run gets one: the runner's own, where it has one (closed at the end)."""
    from loop.engine import runner

    made = runner.new_workspace()
    return made, getattr(made, "close", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--command", default="echo hi")
    args = parser.parse_args(argv)

    workspace, close = _workspace()
    box = ToolBox([Bash(timeout=10)], workspace)
    try:
        for _ in range(args.warmup):
            box.run("bash", {"command": args.command})
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            out = box.run("bash", {"command": args.command})
            times.append((time.perf_counter() - started) * 1000)
            if out.is_error:
                print(f"the command failed: {out.content}", file=sys.stderr)
                return 1
        mode = getattr(getattr(box, "sandbox", None), "describe", lambda: "the tool's own (no sandbox object)")()
    finally:
        for closing in (getattr(box, "close", None), close):
            if closing:
                closing()
    times.sort()
    print(f"{args.command!r} ×{args.runs} through ToolBox.run · {mode}")
    print(f"median {statistics.median(times):.1f} ms · p90 {times[int(len(times) * 0.9) - 1]:.1f} ms · "
          f"worst {times[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
