"""The engine's words in the learner's language: errors, the narration, why the loop ended."""

import anthropic
import httpx2
import pytest

from loop import start
from loop.views.errors import explain
from loop.engine.model import MissingKey
from loop.views.narrate import describe
from loop.engine.endings import why_ended


def status_error(status: int, message: str = "quoted as the API said it") -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "http://api.invalid/v1/messages")
    response = httpx2.Response(status, request=request, headers={"retry-after": "3"})
    return anthropic.APIStatusError(message, response=response,
                                    body={"type": "error", "error": {"type": "x", "message": message}})


@pytest.mark.parametrize("lang, words", [("ja", "API key が必要です"), ("zh", "需要 API key")])
def test_a_missing_key_is_explained_in_the_learner_s_language(lang, words):
    text = explain(MissingKey("claude-x"), lang)
    assert words in text and "'claude-x'" in text and "ANTHROPIC_API_KEY" in text
    assert explain(MissingKey("claude-x")) == str(MissingKey("claude-x"))  # English: as the exception says it


def test_an_api_error_is_explained_in_japanese_and_the_api_s_own_words_stay_as_they_are():
    text = explain(status_error(429), "ja")
    assert text.startswith("回数制限です（429）") and "3 秒待つよう" in text
    assert text.endswith("quoted as the API said it")


def test_the_narration_and_why_the_loop_ended_speak_chinese(shared):
    run = start(scenario="list-files", workspace=shared, tool_timeout=10, lang="zh")
    run.run_to_end()
    lines = [describe(run.trace, i, "zh") for i in range(len(run.trace))]
    assert lines[0].startswith("[1] 第 1 轮之前 · 1 · 用户请求放进 messages: messages ← user：列出工作区里的文件。")
    assert lines[1].startswith("[2] 第 1 轮 · 2 · ")  # the request comes once, before turn 1
    assert lines[-1].endswith("循环结束：模型已答完（end_turn）")
    assert why_ended("max_tokens", "ja") == "答えが max_tokens で切れました。loop は続かず、ここで終わります"
    assert why_ended("weird", "zh") == "stop_reason 'weird' 不是 tool_use，所以循环结束"


def test_the_markdown_export_is_in_the_learner_s_language(shared):
    from loop.files.export import to_markdown

    run = start(scenario="recover", workspace=shared, tool_timeout=10, lang="ja")
    run.run_to_end()
    text = to_markdown(run.trace, lang="ja")
    assert text.startswith("# notes.txt は何行ありますか？\n")
    assert "## tool_use / tool_result のペア" in text and "| 対応済み |" in text
    assert "**tool_result** · `toolu_" in text and "No such file" in text  # tool output as it was
    english = to_markdown(run.trace)
    assert "## tool_use / tool_result pairs" in english and "| paired |" in english


def test_a_refused_fork_says_why_in_any_language(shared):
    from loop.text.catalogs import say
    from loop.engine.fork import ForkRefused, fork_task, fork_tool_result

    run = start(scenario="list-files", workspace=shared, tool_timeout=10)
    run.run_to_end()
    with pytest.raises(ForkRefused) as empty:
        fork_task(run, "  ")
    assert str(empty.value) == "the task is empty" and say("ja", empty.value.message) == "タスクが空です"
    with pytest.raises(ForkRefused) as wrong:
        fork_tool_result(run, 1, "x")
    assert say("zh", wrong.value.message, **wrong.value.values) == "第 2 步是 call_model 步；只能修改工具的结果"


@pytest.mark.parametrize("lang, marker", [
    ("ja", "[会話を圧縮しました。この時点より前の履歴はすべて trace に残っています。]\n\n"),
    ("zh", "[对话已压缩。此前的完整历史保存在 trace 中。]\n\n"),
    ("en", "[Conversation compressed. The full history before this point is kept in the trace.]\n\n")],
    ids=["ja", "zh", "en"])
def test_a_compaction_s_summary_begins_with_its_marker_in_the_run_s_language(shared, lang, marker):
    # The marker is in the history the model reads next: written in the run's language, as the model's words are.
    run = start(scenario="compact", workspace=shared, tool_timeout=10, lang=lang)
    run.run_to_end()
    summaries = [s for s in run.trace.steps if s.stage == "compact" and s.detail["kind"] != "micro"]
    assert summaries
    for step in summaries:
        first = run.trace.messages_at(step.index)[0]["content"]
        assert first.startswith(marker) and first[len(marker):] == step.detail["summary"]
    if lang != "en":
        assert "Conversation compressed" not in str(run.state.messages)
