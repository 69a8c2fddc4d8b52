"""The token figures and the history's caption say what they are: a call's own input (what that call sent: the
context then) apart from a sum over every call, and at each stage which history the panel shows."""

import re
from html import unescape

import pytest

from loop.engine.runner import start
from loop.text.catalogs import translations
from tests.apptest import app, slider
from tests.tables import html_bodies, html_text, table


def said(at) -> str:
    """The step's one line (`… tokens in 314 out 54`), as the page draws it."""
    return next(html_text(b) for b in html_bodies(at) if 'class="ls-said"' in b).strip()


def history_caption(at) -> str:
    """The caption over the history panel."""
    for body in html_bodies(at):
        found = re.search(r'<div class="ls-panel-head">.*?<p class="ls-caption">(.*?)</p>', body, flags=re.S)
        if found:
            return unescape(found.group(1))
    raise AssertionError("no history panel")


def now_row(at) -> dict:
    steps = table(at, "stop_reason")  # the LoopState step by step (the "now" table has no stop_reason)
    marked = steps[steps.iloc[:, 0] == "▶"]
    assert len(marked) == 1
    return marked.iloc[0].to_dict()


def totals_line(at) -> str:
    return next(line for body in html_bodies(at) for line in html_text(body).splitlines()
                if "summed" in line or "合計" in line)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_call_s_input_tokens_are_what_it_sent_and_the_sum_is_labelled_a_sum(lang):
    with start(scenario="two-tools", lang=lang) as run:  # the task is given in the page's language
        run.run_to_end()
        usage = [s.detail.response["usage"] for s in run.trace.steps if s.stage == "call_model"]
    first, second = usage[0]["input_tokens"], usage[1]["input_tokens"]
    at = app(scenario="two-tools", step="8", lang=lang)
    say = translations(lang).gettext
    row = now_row(at)
    assert row[say("stage")].startswith("call_model")
    assert row[say("input tokens (this call)")] == str(second)  # what the API reported for this call: 314
    assert row[say("output tokens (this call)")] == str(usage[1]["output_tokens"])
    assert f"{second}" in said(at) and f"{first + second}" not in said(at)  # the step's line says the same figure
    assert not any(c.endswith("tokens") or c.endswith("token") for c in row)  # no unlabelled running total
    total = totals_line(at)
    assert f"{first + second}" in total  # the sum, 160 + 314, where it says it is a sum
    assert ("summed" in total) if lang == "en" else ("合計" in total)
    steps = table(at, "stop_reason")
    others = steps[~steps[say("stage")].str.startswith("call_model")]
    assert set(others[say("input tokens (this call)")]) == {""}  # a step that called no model sent nothing


def test_the_context_chart_draws_the_calls_own_figures_under_the_same_name():
    import pyarrow

    at = app(scenario="two-tools", step="8")
    at.toggle(key="live-growth").set_value(True).run()
    charts = [pyarrow.ipc.open_stream(c.proto.datasets[0].data.data).read_all().to_pandas()
              for c in at.get("vega_lite_chart")]
    tokens = next(c for c in charts if "input tokens (this call)" in c.to_string())
    inputs = [row[-1] for row in tokens.to_numpy().tolist() if row[1] == "input tokens (this call)"]
    # the chart's last point (this call), the table's figure and the step's line: one number under one name
    assert str(inputs[-1]) == now_row(at)["input tokens (this call)"] and f"in {inputs[-1]} " in said(at)


def test_the_csv_keeps_each_call_s_figures_and_the_sums_apart():
    from loop.views.parts import steps_table

    with start(scenario="two-tools") as run:
        run.run_to_end()
        table_ = steps_table(run.trace)
    calls = table_[table_["stage"] == "call_model"]
    first, second = calls["input tokens (this call)"]
    assert 0 < first < second  # the second call sends the first's history again, and more
    assert list(calls["input tokens (all calls)"]) == [first, first + second]
    assert table_["input tokens (this call)"].sum() == table_["input tokens (all calls)"].iloc[-1]


# two-tools: 1 user_request, 2 call_model, 3 append, 4 decide, 5 and 6 run_tool, 7 write_back, 8 call_model,
# 9 append (end_turn), 10 decide (the end)
STAGE_CAPTIONS = {
    1: "The history exactly as the model will see it on its next call.",
    2: "The request exactly as this call sent it (system, tools, messages): the model's whole input.",
    3: "The history so far; the next call will send it with this turn's tool_results.",
    4: "The history so far; the next call will send it with this turn's tool_results.",
    5: "The history so far; the next call will send it with this turn's tool_results.",
    7: "The history exactly as the model will see it on its next call.",
    8: "The request exactly as this call sent it (system, tools, messages): the model's whole input.",
    9: "The history so far, the response appended; its stop_reason decides whether a call reads it again.",
    10: "The history as the loop left it: the loop has ended, so no model call will read it.",
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_history_s_caption_says_what_it_shows_at_each_stage(lang):
    say = translations(lang).gettext
    at = app(scenario="two-tools", step="99", lang=lang)
    for step, caption in STAGE_CAPTIONS.items():
        slider(at, "live").set_value(step).run()
        assert history_caption(at) == say(caption), (lang, step)
    # at step 2 the one message shown is what this call sent, not what the next call sends (four)
    slider(at, "live").set_value(2).run()
    assert "next call" not in history_caption(at)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_summary_call_and_a_failed_call_say_which_history_they_read(lang):
    say = translations(lang).gettext
    with start(scenario="compact") as run:
        run.run_to_end()
        summarize = next(i for i, s in enumerate(run.trace.steps) if s.stage == "summarize")
    at = app(scenario="compact", step=str(summarize + 1), lang=lang)
    assert history_caption(at) == say(
        "The history the summary call read; the next step, compact, replaces it by the summary.")
    with start(scenario="overloaded", profile="complete") as run:
        run.run_to_end()
        retry = next(i for i, s in enumerate(run.trace.steps) if s.stage == "retry")
    at = app(scenario="overloaded", profile="complete", step=str(retry + 1), lang=lang)
    assert history_caption(at) == say("The request exactly as the failed call sent it.")
