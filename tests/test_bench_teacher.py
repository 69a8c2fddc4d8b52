"""bench/teacher.py runs: a teacher's clicks in Chromium while students arrive, each click shown, its figures printed."""

import re

from bench import teacher


def test_the_teacher_bench_clicks_back_and_step_while_students_arrive_and_prints_its_figures(chromium, capsys):
    # Back to step 1 and Step on: both directions; in the tests' Chromium
    assert teacher.main(["--clicks", "12", "--arrive", "2"], chromium=chromium) == 0
    out = capsys.readouterr().out
    assert re.search(r"^teacher clicks: 12 · shown at once: median \d+ ms · drawn by the server: median \d+ ms · "
                     r"p95 \d+ ms · late \(over 15 s\) \d+ · lost 0 · students 7 · busy 0$", out, re.M), out
