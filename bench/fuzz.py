"""Hostile files against every reader: the importers, the transcript loader and the runs store's journal import.

    .venv/bin/python bench/fuzz.py                 # 10,000 cases
    .venv/bin/python bench/fuzz.py --cases 500 --seed 7

Each case is a file a user could hand Loopscope (tests/fuzzing.py says which). Every reader must either
read it or refuse it with its own error (`ImportFailed`, `TranscriptError`); anything else is a crash. What
it reads must be renderable, under a page's depth of stack: the history, the
pending results and the pairs at every step, the Markdown export, the
narration, the tables of loop/views/parts.py, and saving it again.

The strategies and checks are tests/fuzzing.py's (tests/test_hardening_fuzz.py
runs a few hundred of them under pytest). Exit status 1 when any case crashed.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fuzzing import (check_import, check_journal, check_loads, check_session,  # noqa: E402
                           corrupted_journal, files, session_files)


# -- the benchmark ---------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    from hypothesis import HealthCheck, Phase, given, seed, settings

    logging.getLogger("loop.files.runs").setLevel(logging.ERROR)  # each journal refused would say so

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="hostile files to try (default 10,000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed, for a run that can be repeated")
    parser.add_argument("--journal-share", type=float, default=0.25, help="share of cases that are journals")
    parser.add_argument("--session-share", type=float, default=0.1,
                        help="share of cases that are a session's several files (or a zip of them)")
    args = parser.parse_args(argv)

    outcomes: Counter = Counter()
    kinds: Counter = Counter()
    crashes: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="loopscope-fuzz-"))
    n_journal = round(args.cases * args.journal_share)
    n_session = round(args.cases * args.session_share)
    common = dict(database=None, phases=[Phase.generate], deadline=None,
                  suppress_health_check=list(HealthCheck))

    def record(reader: str, run) -> None:
        outcome = run()
        problem = outcome.problem()
        outcomes[(reader, "crash" if problem else outcome.result)] += 1
        if problem:
            crashes.append(problem)

    @seed(args.seed)
    @settings(max_examples=args.cases - n_journal - n_session, **common)
    @given(files())
    def file_case(case):
        how, data = case
        kinds[how] += 1
        record("import_bytes", lambda: check_import(data))
        record("transcript.loads", lambda: check_loads(data, True))
        record("transcript.loads(strict=False)", lambda: check_loads(data, False))

    @seed(args.seed)
    @settings(max_examples=n_journal, **common)
    @given(corrupted_journal())
    def journal_case(data):
        kinds["journal"] += 1
        record("RunsStore import", lambda: check_journal(data, folder))
        record("import_bytes", lambda: check_import(data))

    @seed(args.seed)
    @settings(max_examples=n_session, **common)
    @given(session_files())
    def session_case(files):
        kinds["session"] += 1
        record("import_files", lambda: check_session(files))

    started = time.perf_counter()
    try:
        file_case()
        if n_journal:
            journal_case()
        if n_session:
            session_case()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    took = time.perf_counter() - started

    total = sum(kinds.values())
    print(f"{total:,} cases in {took:.1f} s ({', '.join(f'{k} {v:,}' for k, v in sorted(kinds.items()))})")
    for reader in ("import_bytes", "transcript.loads", "transcript.loads(strict=False)", "RunsStore import",
                   "import_files"):
        calls = sum(v for (r, _), v in outcomes.items() if r == reader)
        if calls:
            print(f"  {reader:32} {calls:6,} calls · {outcomes[(reader, 'imported')]:6,} read · "
                  f"{outcomes[(reader, 'failed')]:6,} refused cleanly · {outcomes[(reader, 'crash')]:,} crashed")
    if crashes:
        print(f"\n{len(crashes)} crash(es); the first ones:")
        for text in list(dict.fromkeys(crashes))[:10]:
            print(" -", text)
        return 1
    print("no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
