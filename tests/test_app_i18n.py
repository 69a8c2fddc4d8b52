"""Languages: with ?lang=ja no English interface text is left on the Step through page (its Saved runs panel
too), the stage note beside the diagram is the one of the stage just executed, and the sidebar switches the
language."""

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from loop.notes import note
from loop.scripted import SCENARIOS
from tests.apptest import choose_server, click

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

# The chapter's terms, kept in Latin letters in Japanese as the chapter does, and names that are data.
KEPT = r"""messages?|tool_use_id|tool_use|text|tool_results?|turn_count|turn|transition_reason|stop_reason|write-back|loop|model|
response|assistant|user|system|tools?|max_tokens|max|turns|bash|read_file|write_file|edit_file|block|context|
append|budget|real|execution|id|ID|JSON|Raw|API|key|Base|URL|LoopState|workspace|Loopscope|transcript|
Request|request|history|SDK|Messages|HTTP|Claude|Code|OpenAI|chat|jsonl|CSV|Markdown|tokens?|is_error|None|trace|header|body|end_turn|refusal|Model|Python|Anthropic|server|sk-ant|cm|s01|s02"""
KEPT_RE = re.compile(r"\b(?:" + KEPT.replace("\n", "") + r")\b")


def english_left(text: str, data: list[str]) -> str:
    """What remains of `text` once data, code, icons and the chapter's Latin terms are taken out."""
    for d in data:
        text = text.replace(d, " ")
    text = re.sub(r"`[^`]*`", " ", text)  # code: commands, ids, JSON
    text = re.sub(r":\w+-badge\[[^\]]*\]|:material/\w+:|:\w+\[", " ", text)  # icons and colours
    text = re.sub(r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b", " ", text)  # scenario names such as two-tools
    text = KEPT_RE.sub(" ", text)
    return " ".join(re.findall(r"[A-Za-z]{2,}", text))


def walk(node, skip):
    if skip(node):
        return
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child, skip)


def texts_on_page(at: AppTest) -> list[str]:
    """Every label, header, caption, message and option the page shows, outside the history's data."""
    def skip(node):  # the history's blocks, code and tables are data (a table's headers: see column_labels)
        return node.type in ("chat_message", "code", "dataframe", "json") or (
            node.type == "markdown" and node.value.startswith("| "))  # Pairs and LoopState: the chapter's fields

    out = []
    for root in (at.main, at.sidebar):
        for el in walk(root, skip):
            has_label = isinstance(getattr(el, "label", None), str)
            for attr in ("label", "placeholder", "help") if has_label else ("value",):
                v = getattr(el, attr, None)
                if isinstance(v, str) and v:
                    out.append(v)
            if el.type in ("selectbox", "radio"):
                out.extend(el.options)
    return out


def test_japanese_leaves_no_english_label_on_step_through():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "ja"
    at.run()
    assert at.title[0].value == "loop をステップ実行"
    assert [b.label for b in at.button][:5] == ["最初", "戻る", "進む", "最終ステップ", "最後まで"]
    run = at.session_state["live-run"]
    data = [run.task, str(run.workspace), run.model.name, *SCENARIOS]
    seen = set()
    for k in range(12):  # every stage, the pending response and results, the end
        seen.update(texts_on_page(at))
        if at.button(key="live-step").disabled:
            break
        at.button(key="live-step").click().run()
        assert not at.exception, at.exception
        if k == 2:
            at.session_state["live-raw"] = True  # the raw view's captions too
            at.session_state["live-exports"] = True  # and the export buttons
    assert run.done
    for response in (run.trace.response_at(i) for i in range(len(run.trace))):  # the model's words are data
        data += [b["text"] for b in (response or {}).get("content", []) if b.get("type") == "text"]
    leftovers = {s: english_left(s, data) for s in seen}
    left = {s: w for s, w in leftovers.items() if w}
    assert not left, "English left on the page:\n" + "\n".join(f"{w!r}  <=  {s[:120]!r}" for s, w in left.items())
    assert any(s.startswith("### ステップ 10 / 10 · turn 2") for s in seen)
    assert "#### ペア · tool_use ↔ tool_result" in seen


def test_the_checker_does_find_english():
    assert english_left("Step 1 of 10 · turn 1", []) == "Step of"
    assert english_left("**Received, not yet appended** · stop_reason `end_turn`", []) == "Received not yet appended"
    assert english_left("ステップ 1 / 10 · turn 1 · `ls -la`", []) == ""


def test_the_stage_note_beside_the_diagram_follows_the_step_and_the_sidebar_language():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for _ in range(2):
        at.button(key="live-step").click().run()
    assert note("call_model", "en") in [m.value for m in at.markdown]
    at.segmented_control(key="lang").set_value("zh").run()
    assert at.query_params["lang"] == ["zh"] or at.query_params["lang"] == "zh"
    assert note("call_model", "zh") in [m.value for m in at.markdown]
    assert at.button(key="live-step").label == "下一步"
    at.button(key="live-step").click().run()
    assert note("append_assistant", "zh") in [m.value for m in at.markdown]


def open_in_japanese(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(page)
    at.query_params["lang"] = "ja"
    at.run()
    assert not at.exception, at.exception
    return at


def test_japanese_replay_page_has_no_english_label_either():
    at = open_in_japanese("pages/replay.py")
    assert at.title[0].value == "実行をリプレイ"
    trace = at.session_state["replay"]["trace"]
    data = [trace.meta.get("task", ""), str(trace.meta.get("model")), "two-tools.json", "loopscope", *SCENARIOS]
    for response in (trace.response_at(i) for i in range(len(trace))):
        data += [b["text"] for b in (response or {}).get("content", []) if b.get("type") == "text"]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data))}
    assert not left, left


def test_japanese_mistakes_lab_has_no_english_label_and_keeps_the_api_error_verbatim():
    at = open_in_japanese("pages/mistakes.py")
    wrong, right = at.session_state["mistakes-runs"]["no-assistant-append"]
    assert wrong.broke_at.error in at.error[0].value  # the API's words stay as the API wrote them
    data = [wrong.broke_at.error, right.calls[0].messages[0]["content"], *SCENARIOS, "end_turn"]
    for run in (wrong, right):
        for call in run.calls:
            data += call.tool_outputs
            data += [b.get("text", "") for b in (call.response or {}).get("content", []) if b.get("type") == "text"]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data))}
    assert not left, left


def graphviz_source(at: AppTest) -> str:
    charts = at.get("graphviz_chart")
    assert charts, "no diagram on the page"
    return charts[0].proto.spec


def test_japanese_about_page_and_its_diagram_have_no_english_label():
    at = open_in_japanese("pages/about.py")
    assert at.title[0].value == "loop について"
    # The API's errors stay verbatim; the chapter itself writes terminal, code and agent in Latin letters.
    data = ["unexpected `tool_use_id` found in `tool_result` blocks",
            "`tool_use` ids were found without `tool_result` blocks immediately after", "terminal", "code", "agent"]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data))}
    assert not left, left
    labels = " ".join(re.findall(r'label="([^"]*)"', graphviz_source(at)))
    assert "model を呼ぶ" in labels and not english_left(labels.replace("\\n", " "), [])


def test_the_diagram_on_step_through_speaks_chinese():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "zh"
    at.run()
    at.button(key="live-step").click().run()
    assert not at.exception, at.exception
    assert "调用模型" in graphviz_source(at) and "call the model" not in graphviz_source(at)


def column_labels(node) -> list[str]:
    """The headers of the first table in `node`: its column_config labels, else its columns' names."""
    table = next(el for el in walk(node, lambda n: False) if el.type == "dataframe")
    config = json.loads(table.proto.columns or "{}")
    return [(config.get(c) or config.get(f"col:name:{c}") or {}).get("label", c) for c in table.value.columns]


@pytest.fixture
def two_saved_runs(fake_api, no_key_in_environment):
    """A browser's id with two saved runs: one on the offline model, then one on a real model (its key not saved)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    click(at, "live-step")
    first = at.session_state["live-run"]
    choose_server(at, fake_api.url, "sk-ant-i18n-test", gate=None)
    for _ in range(3):
        click(at, "live-step")
    sid = at.query_params["session"]
    return (sid[0] if isinstance(sid, list) else sid), [first.task, at.session_state["live-run"].task]


def test_japanese_saved_runs_panel_with_runs_listed_has_no_english_label(two_saved_runs, fake_api):
    sid, tasks = two_saved_runs
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"session": sid, "lang": "ja"})
    at.run()
    assert not at.exception, at.exception
    labels = [e.label for e in at.expander]
    assert "保存した実行 · 2" in labels, labels
    panel = at.expander[labels.index("保存した実行 · 2")]
    box = at.selectbox(key="saved-run")
    assert len(box.options) == 2 and "3 ステップ" in box.options[0] and "未終了" in box.options[0]
    assert at.text_input(key="resume-api-key").label == "この実行の API key"  # the newest run is on a real model
    run = at.session_state["live-run"]
    data = [*tasks, run.task, str(run.workspace), "claude-test", "loopscope-scripted", *SCENARIOS]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data))}
    assert not left, left
    headers = column_labels(panel)
    assert headers == ["タスク", "model", "ステップ数", "終了", "保存日時"], headers

    at.text_input(key="resume-api-key").set_value("sk-ant-i18n-again")
    click(at, "resume-run")
    resumed = at.session_state["live-run"]
    notes = [m.value for m in at.success]
    assert notes and notes[0].startswith("再開しました: 3 ステップ")
    assert not [w for n in notes if (w := english_left(n, [str(resumed.workspace)]))]

    click(at, "delete-run")  # the other run, the only one offered now
    notes = [m.value for m in at.success]
    assert notes and notes[0].startswith("保存した実行 ") and not english_left(notes[0], [])
    assert "保存した実行 · 0" in [e.label for e in at.expander]


def test_the_saved_runs_panel_speaks_chinese(two_saved_runs):
    sid, _ = two_saved_runs
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"session": sid, "lang": "zh"})
    at.run()
    assert not at.exception, at.exception
    assert "已保存的运行 · 2" in [e.label for e in at.expander]
    assert (at.button(key="resume-run").label, at.button(key="delete-run").label) == ("恢复", "删除")
    assert at.selectbox(key="saved-run").label == "已保存的运行"
    assert "3 步" in at.selectbox(key="saved-run").options[0]
    assert "API key" in at.text_input(key="resume-api-key").label and "从不" in at.text_input(key="resume-api-key").help
