"""What a 200 MB answer from a model's server costs: the command line's peak memory, the page server's memory.

    .venv/bin/python bench/big_answer.py                  # a 200 MiB text block, as JSON and as a stream
    .venv/bin/python bench/big_answer.py --mib 50 --cap 1000000000000   # about as it was with no cap

The model's server is tests/fake_server.py, which makes the answer as it sends
it. Prints, for the command line (`python -m loop run … --model claude-test`),
its exit status and peak RSS (ru_maxrss of the child); for the page (a real
`streamlit run app.py`, one student on a real model driven over its WebSocket),
the server's VmRSS after a warm-up, its peak (VmHWM) and its VmRSS after the
refused answer and after the student left, and the runs store's bytes before
and after. `--cap` sets LOOPSCOPE_MAX_RESPONSE_BYTES for both.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.wire import Wire  # noqa: E402
from tests.browser import serve_app  # noqa: E402
from tests.fake_server import FakeAnthropic  # noqa: E402

MiB = 2**20


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def clean_env(**extra: str) -> dict:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}, **extra}


def command_line(size: int, stream: bool, env: dict) -> None:
    with FakeAnthropic() as fake:
        fake.huge(size)
        args = [sys.executable, "-m", "loop", "run", "What is in this folder?", "--model", "claude-test",
                *(["--stream"] if stream else [])]
        started = time.perf_counter()
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env={**env, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-bench"})
        said = proc.stderr.read().decode(errors="replace").strip().splitlines()
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - started
    print(f"command line, {'streamed' if stream else 'JSON'}: exit {os.waitstatus_to_exitcode(status)}, "
          f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB, {took:.1f} s, {len(fake.requests)} request(s)")
    if said:
        print(f"  {said[-1][:160]}")


def stored(runs: Path) -> int:
    with sqlite3.connect(runs / "runs.sqlite3") as db:
        return db.execute("SELECT coalesce(sum(length(CAST(line AS BLOB))), 0) FROM steps").fetchone()[0]


def page(size: int, stream: bool, env: dict) -> None:
    runs = Path(tempfile.mkdtemp(prefix="loopscope-bench-runs-"))
    saved = dict(os.environ)
    with FakeAnthropic() as fake:
        os.environ.clear()
        os.environ.update({**env, "ANTHROPIC_BASE_URL": fake.url, "LOOPSCOPE_RUNS": str(runs),
                           "LOOPSCOPE_ALLOW_UNSANDBOXED": "1"})
        started: list = []
        try:
            with serve_app(started=started) as url:
                pid = started[0].pid
                figures = asyncio.run(_student(url, pid, fake, size, stream, runs))
        finally:
            os.environ.clear()
            os.environ.update(saved)
    before, peak, after, left, shown, store = figures
    print(f"page server, {'streamed' if stream else 'JSON'}: VmRSS {before / 1024:.0f} MiB after a warm-up, "
          f"peak (VmHWM) {peak / 1024:.0f} MiB, {after / 1024:.0f} MiB after the answer, "
          f"{left / 1024:.0f} MiB after the student left; runs store {store[0]} -> {store[1]} bytes of steps; "
          f"the page said the refusal: {shown}")


async def _student(url: str, pid: int, fake: FakeAnthropic, size: int, stream: bool, runs: Path):
    wire = Wire(url, agent="bench big answer")
    await wire.open()
    await wire.rerun("set-model", string_value="An Anthropic model")
    await wire.rerun("set-api-key", string_value="sk-bench")
    await wire.rerun("set-approve", bool_value=False)
    if stream:
        await wire.rerun("set-stream", bool_value=True)
    await wire.rerun("new-run")
    for _ in range(3):  # a whole model call and a tool: every import done
        await wire.rerun("live-step")
    before, store = status_kib(pid, "VmRSS"), stored(runs)
    fake.huge(size)
    calls = len(fake.requests)
    for _ in range(6):
        await wire.rerun("live-step")
        if len(fake.requests) > calls:
            break
    after, peak = status_kib(pid, "VmRSS"), status_kib(pid, "VmHWM")
    shown = wire.shows("The model's answer was larger than")
    await wire.close()
    await asyncio.sleep(2)  # the session's end is the server's to notice
    return before, peak, after, status_kib(pid, "VmRSS"), shown, (store, stored(runs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="the answer's text block, in MiB (default 200)")
    parser.add_argument("--cap", type=int, help="LOOPSCOPE_MAX_RESPONSE_BYTES (default: Loopscope's, 8 MiB)")
    parser.add_argument("--skip-page", action="store_true")
    args = parser.parse_args(argv)
    env = clean_env(**({"LOOPSCOPE_MAX_RESPONSE_BYTES": str(args.cap)} if args.cap else {}))
    print(f"a {args.mib} MiB answer; cap {args.cap or 'default (8 MiB)'}")
    for stream in (False, True):
        command_line(args.mib * MiB, stream, env)
    if not args.skip_page:
        for stream in (False, True):
            page(args.mib * MiB, stream, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
