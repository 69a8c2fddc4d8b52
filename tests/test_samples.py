"""Replay's samples are the scenarios as they are today, one set a language (`make samples` makes them)."""

from pathlib import Path

import pytest

from loop.files import transcript
from loop.text.catalogs import languages
from loop.engine.scenarios import SCENARIOS
from loop.engine.scripted import respond
from loop.engine.waits import SCALE_VARIABLE

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def sample_file(lang: str, name: str) -> Path:
    return SAMPLES / f"{name}.json" if lang == "en" else SAMPLES / lang / f"{name}.json"


@pytest.mark.parametrize("lang", list(languages()))
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_sample_is_what_the_scripted_model_answers_today(name, lang, monkeypatch):
    """Every recorded call, asked again, gets the recorded answer: a sample left behind by a change to a
    scenario or to its words fails here (run `make samples`)."""
    monkeypatch.setenv(SCALE_VARIABLE, "1")  # the samples wait as a learner's run does (`sleep 2`), not as tests do
    trace = transcript.load(sample_file(lang, name))
    assert trace.meta["lang"] == lang and trace.meta["task"] == SCENARIOS[name].task_in(lang)
    calls = [i for i, step in enumerate(trace.steps) if step.stage == "call_model"]
    assert calls and trace.steps[-1].ended
    for i in calls:
        request = trace.request_at(i)
        # the complete loop's retries tell the model which attempt it is; a scenario may set a small window
        status, answer = respond(request, retry=trace.steps[i].detail.get("attempt", 1) - 1,
                                 context_window=trace.meta.get("context_window"))
        assert status == 200
        recorded = trace.response_at(i)
        assert (answer["content"], answer["stop_reason"]) == (recorded["content"], recorded["stop_reason"]), \
            f"{sample_file(lang, name)} step {i + 1} is stale: run `make samples`"


def test_there_is_no_sample_without_its_scenario():
    names = {p.stem for p in SAMPLES.rglob("*.json")}
    assert names == set(SCENARIOS)
