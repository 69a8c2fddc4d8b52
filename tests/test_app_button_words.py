"""The two buttons that go to the end of a run say which one moves the cursor and which one executes stages, in
each language: a newcomer tells them apart by their verb, not by their icons."""

import pytest

from tests.apptest import app

# (moves the cursor to the last recorded step, executes the rest of the run): the verb each label begins with
VERBS = {"en": ("Go to", "Run"), "ja": ("移動", "実行"), "zh": ("跳到", "运行")}


@pytest.mark.parametrize("lang", sorted(VERBS))
def test_go_to_the_last_step_and_run_to_the_end_say_different_verbs(lang):
    at = app(lang=lang)
    last, to_end = at.button(key="live-last"), at.button(key="live-to-end")
    moves, runs = VERBS[lang]
    assert moves in last.label and runs not in last.label, last.label
    assert runs in to_end.label and moves not in to_end.label, to_end.label
