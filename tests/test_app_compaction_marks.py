"""The compact step's "after" side says what the step did to each message: rewritten in place, not added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.apptest import app
from tests.tables import html_bodies

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
WORDS = {"en": ("rewritten by this step", "added by this step"),
         "ja": ("このステップで書き換え", "このステップで追加"),
         "zh": ("本步改写", "本步新增")}


def after_side(lang: str, step: int) -> str:
    """The compaction's HTML at `step` (0-based) of the compact scenario, from the first message drawn on."""
    at = app(lang=lang, scenario="compact", step=str(step + 1))
    body = next(b for b in html_bodies(at) if 'class="ls-compact"' in b)
    return body[body.index('<div class="ls-history">'):]


@pytest.mark.parametrize("lang", ["ja", "zh", "en"])
def test_a_rewritten_message_is_marked_rewritten_and_none_added(lang):
    sample = SAMPLES / (f"{lang}/compact.json" if lang != "en" else "compact.json")
    steps = json.loads(sample.read_text())["steps"]
    compacts = {s["detail"]["kind"]: i for i, s in reversed(list(enumerate(steps))) if s["stage"] == "compact"}
    rewritten, added = WORDS[lang]
    micro = after_side(lang, compacts["micro"])
    assert micro.count(f"→ {rewritten}") == len(steps[compacts["micro"]]["detail"]["replaced"]) > 0
    assert added not in micro
    auto = after_side(lang, compacts["auto"])
    assert auto.count(f"→ {rewritten}") == 1  # the summary, all the history there is now
    assert added not in auto
