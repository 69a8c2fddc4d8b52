"""One wait, one figure: the retry step says how long the loop waits, the call after it says how long it waited,
and both say the same seconds (the wait the retry planned, as its step recorded it)."""

import re

import pytest

from loop import start
from loop.views.narrate import what

# (what the retry step says it waits, what the call after it says it waited), in each language
SAID = {"en": (r"wait ([\d.]+) s \(", r"after waiting ([\d.]+) s"),
        "ja": (r"([\d.]+) 秒（", r"([\d.]+) 秒待ったあと"),
        "zh": (r"等待 ([\d.]+) 秒（", r"等待了 ([\d.]+) 秒之后")}


@pytest.mark.parametrize("lang", sorted(SAID))
def test_the_retry_and_the_call_after_it_say_the_same_wait(shared, lang):
    with start(scenario="overloaded", workspace=shared, tool_timeout=10, lang=lang) as run:
        run.sleep = lambda seconds: None  # the time measured since the failure is then not the wait planned
        run.run_to_end()
    steps = run.trace.steps
    call = next(i for i, s in enumerate(steps) if s.stage == "call_model")
    assert steps[call - 1].stage == "retry" and not steps[call].detail["skipped"]
    planned = steps[call - 1].detail["wait_s"]
    assert abs(steps[call].detail["waited_s"] - planned) >= 0.005  # the two figures would differ when rounded
    waits, waited = SAID[lang]
    before = re.search(waits, what(run.trace, call - 1, lang))
    after = re.search(waited, what(run.trace, call, lang))
    assert before and after, (what(run.trace, call - 1, lang), what(run.trace, call, lang))
    assert before.group(1) == after.group(1) == f"{planned:.2f}"
