"""bench/cursor.py runs: it serves the app and the one-button app, moves the cursor and prints its figures."""

import re

from bench import cursor

FIGURES = r"server CPU a click: mean [\d.]+ ms · median [\d.]+ ms · p95 [\d.]+ ms · " \
          r"click to script finished: median [\d.]+ ms · p95 [\d.]+ ms · elements sent: [\d.]+$"


def test_the_cursor_bench_prints_the_cpu_of_a_move_beside_the_floor_s(capsys):
    assert cursor.main(["--clicks", "3"]) == 0
    out = capsys.readouterr().out
    assert "over the 10 recorded steps of two-tools on Step through" in out
    for name, clicks in (("Back", 3), ("Step", 3), ("cursor move", 6), ("floor", 6)):
        assert re.search(rf"^  {name} +{clicks} clicks · {FIGURES}", out, re.M), (name, out)
    assert re.search(r"^cursor move: [\d.]+ ms CPU a click · floor: [\d.]+ ms · ratio ([\d.]+|inf)$", out, re.M), out
