"""bench/follow.py runs a small class end to end: a teacher, two followers, one replica behind HAProxy."""

import re
import subprocess
import sys

from deploy.classroom import ROOT


def test_the_follow_bench_runs_a_small_class_and_ends_with_its_p95_and_its_errors(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "follow.py"), "--replicas", "1", "--students", "2",
                           "--clicks", "3", "--every", "1", "--settle", "1", "--time-limit", "240"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=400)
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"  p95 \d+ ms", lines[-2]), done.stdout + done.stderr
    assert re.fullmatch(r"  errors: \d+", lines[-1]), done.stdout + done.stderr
    assert done.returncode == (0 if lines[-1] == "  errors: 0" else 1)
    assert "follower updates: " in done.stdout and "of 6 (3 teacher clicks × 2 students)" in done.stdout
    assert re.search(r"CPU time: replicas [\d.]+ s \([\d.]+ ms a follower update", done.stdout)
    assert re.search(r"peak \d+ MiB", done.stdout)
