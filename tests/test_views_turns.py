"""The Pairs table counts turns as the heading and the LoopState do: a pair is in the turn of the step that made
its tool_use, whatever the log (one request or several, an answer over several assistant messages, compactions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loop.files import transcript
from loop.importers import import_bytes
from loop.views import parts as views

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_CODE = ROOT / "tests" / "data" / "claude-code"  # real logs (tests/data/README.md)
LOGS = sorted(CLAUDE_CODE.glob("*.jsonl")) + [ROOT / "samples" / f"{name}.json" for name in ("compact", "subagent")]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_pair_is_in_the_turn_the_heading_names_at_its_run(path):
    trace = import_bytes(path.read_bytes(), path.name).trace if path.suffix == ".jsonl" else transcript.load(path)
    checked = 0
    for i, step in enumerate(trace.steps):
        if step.stage != "run_tool":
            continue
        rows, _ = views.pairs_rows(trace, i)
        [row] = [r for r in rows if r["id"] == step.detail.get("tool_use_id") and r.get("depth", 0) == 0] or [None]
        if row is None:  # (a sub-agent's own pairs are drawn under its parent's: the thread's steps say its turn)
            continue
        heading = views.status_line(trace, i)
        assert row["turn"] == step.turn and f"turn {step.turn} ·" in heading, (i, row, heading)
        checked += 1
    assert checked or not any(s.stage == "run_tool" for s in trace.steps)
