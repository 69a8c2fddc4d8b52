"""The summary a compaction writes reads as a person would write it, in each language: a tool's command shown as
the command (not its JSON), the first summary counting from the start (there is no summary before it), and the
model's words called what they are."""

import json
import re

import pytest

from loop import start
from loop.engine.compact import is_summary
from loop.engine.scenarios import SCENARIOS, summarize


def summaries(shared, lang: str) -> list[str]:
    """The compact scenario's summary, then the one a second compaction would write from the history after it."""
    with start(scenario="compact", workspace=shared, tool_timeout=10, lang=lang) as run:
        run.run_to_end()
    first = next(s for s in run.trace.steps if s.stage == "compact" and s.detail["kind"] != "micro")
    after = run.trace.messages_at(first.index) + [{"role": "assistant", "content": [{"type": "text", "text": "…"}]}]
    assert is_summary(after[0]["content"])
    return [first.detail["summary"], summarize(json.dumps(after, ensure_ascii=False))]


@pytest.mark.parametrize("lang, since_start, since_last", [
    ("en", "since the start", "since the last summary"),
    ("ja", "最初から", "前回の要約以降"),
    ("zh", "从开始到现在", "自上次总结以来")])
def test_the_first_summary_counts_from_the_start_and_the_next_from_the_last_summary(shared, lang, since_start,
                                                                                   since_last):
    first, second = summaries(shared, lang)
    assert since_start in first and since_last not in first, first
    assert since_last in second and since_start not in second, second


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_a_tool_s_input_is_said_as_its_command_not_as_json(lang):
    conversation = [{"role": "user", "content": SCENARIOS["overloaded"].task_in(lang)},  # the summary's language
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "I ask the system."},
                        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "date  -u"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read_file",
                         "input": {"path": "a.txt", "limit": 3}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                                                 {"type": "tool_result", "tool_use_id": "toolu_2", "content": "y"}]}]
    lines = summarize(json.dumps(conversation, ensure_ascii=False)).splitlines()
    used = [line for line in lines if "bash" in line]
    assert len(used) == 1 and re.search(r"[:：] ?date -u$", used[0]) and "{" not in used[0], used
    assert any(re.search(r'[:：] ?\{"path": "a.txt", "limit": 3\}$', line) for line in lines), lines  # two values: JSON


@pytest.mark.parametrize("lang, awkward", [
    ("ja", ["言ったこと", "を使った", "読むだけの確認"]),
    ("zh", ["- 说了："])])
def test_the_summary_and_the_model_s_words_avoid_the_awkward_phrases(shared, lang, awkward):
    text = "\n".join(summaries(shared, lang))
    with start(scenario="parallel", workspace=shared, tool_timeout=10, lang=lang) as run:
        run.run_to_end()
    text += "\n" + json.dumps(run.state.messages, ensure_ascii=False)
    found = [w for w in awkward if w in text]
    assert not found, found
    assert re.search(r"^- \S", text, re.M)  # the summaries' lines were read

