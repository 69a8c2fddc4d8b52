"""What the tests cost the machine: pytest run in a cgroup of its own, and the CPU time of everything it started
(servers, Chromium, sandboxed commands, PostgreSQL, HAProxy) counted by the kernel, in core-seconds, a file and in
all. Wall time on a shared machine says more about the neighbours than about the tests; core-seconds do not.

    .venv/bin/python bench/suite.py                                  # the whole suite, as `make test` runs it
    .venv/bin/python bench/suite.py tests/test_projector.py -n 1     # one file (any pytest arguments)
    .venv/bin/python bench/suite.py -m "not browser" --top 20        # a tier; the 20 dearest files
    .venv/bin/python bench/suite.py --tests 40                       # the 40 dearest tests as well
    .venv/bin/python bench/suite.py -m "not browser" -p no:xdist --waits 40 --machine 40   # one process: the
                                                                     # tests that wait, and the dearest counted whole

Needs root and a cgroup v2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1 controllers). Each
pytest-xdist worker moves itself into a cgroup of its own inside the run's, so each test's setup, call and
teardown are charged with what its worker and the processes it started used meanwhile.

Core-seconds still depend on how fast the machine's cores are at the hour: the last line (pace) says it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from json import dumps  # bound here: a test that makes json.dumps fail (tests/test_hardening_files.py) is still counted
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDS = "LOOPSCOPE_SUITE_RECORDS"  # where the workers write a line a test phase


def own_cgroup() -> Path:
    """This process's cgroup v2 folder."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            relative = line[3:].lstrip("/")
            for mount in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
                if (mount / "cgroup.procs").exists() and (mount / relative / "cpu.stat").exists():
                    return mount / relative
    raise SystemExit("no cgroup v2 hierarchy with cpu.stat here")


def machine_seconds() -> float:
    """Core-seconds the whole machine has been busy since it started (/proc/stat): a check on the cgroup's count,
    and what anything else running beside the tests used."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def pace() -> float:
    """The CPU seconds a fixed piece of pure-Python work takes now, the best of three. This machine's cores are not
    as fast at every hour (importing the anthropic SDK took 0.9 s of CPU at one, 1.4 to 1.6 s half an hour later):
    two runs' figures compare only at like paces."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        sum(i * i for i in range(6_000_000))
        best = min(best, time.process_time() - started)
    return best


def core_seconds(folder: Path) -> float:
    for line in (folder / "cpu.stat").read_text().splitlines():
        key, value = line.split()
        if key == "usage_usec":
            return int(value) / 1e6
    return 0.0


# -- the plugin, in each pytest process (`-p bench.suite`) --

_here: Path | None = None
_out = None


def pytest_configure(config):
    global _here, _out
    if not os.environ.get(RECORDS):
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    _here = own_cgroup() / f"{worker}-{os.getpid()}"
    _here.mkdir()
    (_here / "cgroup.procs").write_text("0")  # this process, and what it starts from now on
    _out = open(os.environ[RECORDS], "a")


def _phase(name: str):
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def hook(item, *args, **kwargs):
        if _here is None:
            yield
            return
        before, since, busy = core_seconds(_here), time.monotonic(), machine_seconds()
        yield
        _out.write(dumps({"test": item.nodeid, "phase": name, "cpu": core_seconds(_here) - before,
                          "wall": time.monotonic() - since, "machine": machine_seconds() - busy}) + "\n")
        _out.flush()
    return hook


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


# -- the run --

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=30, help="how many of the dearest files to list")
    parser.add_argument("--tests", type=int, default=0, help="how many of the dearest tests to list")
    parser.add_argument("--machine", type=int, default=0,
                        help="how many of the tests that kept the whole machine busiest to list (a test's own only "
                             "when one process runs on an idle machine, -p no:xdist)")
    parser.add_argument("--waits", type=int, default=0,
                        help="how many of the tests that wait longest (wall time beyond their core-seconds) to list")
    args, pytest_args = parser.parse_known_args(argv)
    pytest_args = pytest_args or ["-q", "-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"]
    run = own_cgroup() / f"loopscope-suite-{os.getpid()}"
    run.mkdir()
    records = Path(tempfile.mkstemp(prefix="loopscope-suite-", suffix=".jsonl")[1])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as `make test` runs it
    env[RECORDS] = str(records)
    before = pace()
    started, busy = time.monotonic(), machine_seconds()
    # A shell joins the run's cgroup, then becomes pytest: everything pytest starts is born in it.
    done = subprocess.run(["/bin/sh", "-c", f'echo $$ > "{run}/cgroup.procs" && exec "$@"', "sh",
                           sys.executable, "-m", "pytest", "-p", "bench.suite", *pytest_args], cwd=ROOT, env=env)
    wall, busy = time.monotonic() - started, machine_seconds() - busy
    after = pace()
    total = core_seconds(run)
    for folder in sorted(run.rglob("*"), key=lambda p: -len(p.parts)) + [run]:  # the emptied cgroups
        if folder.is_dir():
            try:
                folder.rmdir()
            except OSError:
                pass
    files, tests, each = collections.Counter(), collections.Counter(), collections.Counter()
    waited, machine, walls = collections.Counter(), collections.Counter(), collections.Counter()
    for line in records.read_text().splitlines():
        record = json.loads(line)
        files[record["test"].split("::")[0]] += record["cpu"]
        walls[record["test"].split("::")[0]] += record.get("wall", 0.0)
        each[record["test"]] += record["cpu"]
        waited[record["test"]] += max(record.get("wall", 0.0) - record["cpu"], 0.0)
        machine[record["test"]] += record.get("machine", 0.0)
        tests[record["test"].split("::")[0]] += record["phase"] == "call"
    records.unlink()
    # A file's wall time is what it keeps one test process busy, waits included: the longest go first (DEAREST)
    print(f"\n{'core-s':>8}  {'wall-s':>7}  tests  file")
    for name, cpu in files.most_common(args.top):
        print(f"{cpu:8.1f}  {walls[name]:7.1f}  {tests[name]:5d}  {name}")
    if args.tests:
        print(f"\n{'core-s':>8}  test")
        for name, cpu in each.most_common(args.tests):
            print(f"{cpu:8.1f}  {name}")
    if args.machine:
        print(f"\n{'machine':>8}  test (the whole machine's busy core-seconds while it ran)")
        for name, seconds in machine.most_common(args.machine):
            print(f"{seconds:8.1f}  {name}")
    if args.waits:  # a test that waits keeps a core idle unless another process has work: `-n` hides it, not cuts it
        print(f"\n{'waited':>8}  test (wall seconds beyond its core-seconds)")
        for name, seconds in waited.most_common(args.waits):
            print(f"{seconds:8.1f}  {name}")
    print(f"{sum(files.values()):8.1f}  {sum(tests.values()):5d}  the tests' setup, call and teardown, in all")
    print(f"{total:8.1f}         the whole run (workers' start, collection and servers' stop too), in "
          f"{wall:.0f} s of wall time (pytest's exit status {done.returncode})")
    print(f"{busy:8.1f}         the whole machine busy meanwhile (the tests, and anything else running)")
    print(f"pace: a fixed piece of work took {before:.2f} s of CPU before the run, {after:.2f} s after (the figures "
          f"above grow with it)")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
