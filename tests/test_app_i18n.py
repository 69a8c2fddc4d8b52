"""Languages: with ?lang=ja no English interface text is left on the Step through page (its Saved runs panel
too), the stage note beside the diagram is the one of the stage just executed, and the sidebar switches the
language."""

import html
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from loop.importers import ImportFailed
from loop.views.notes import note
from loop.views.parts import short, what_happened
from loop.engine.scenarios import SCENARIOS
from tests.apptest import COOKIE, app, choose_server, click, issued
from tests.tables import diagram_svg, html_bodies, html_text, note_text, plain

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

# The chapter's terms, kept in Latin letters in Japanese as the chapter does, and names that are data.
KEPT = r"""messages?|tool_use_id|tool_use|text|tool_results?|turn_count|turn|transition_reason|stop_reason|write-back|loop|model|
response|assistant|user|system|tools?|max_tokens|state|bash|read_file|write_file|edit_file|block|context|
append|budget|real|execution|id|ID|JSON|Raw|API|key|Base|URL|LoopState|workspace|Loopscope|transcript|
Request|request|history|SDK|Messages|HTTP|Claude|Code|OpenAI|chat|jsonl|CSV|Markdown|tokens?|is_error|None|trace|header|body|end_turn|refusal|Model|Python|Anthropic|server|sk-ant|cm|s01|s02|terminal|true|false|Cookie|
s04|s06|task|compact|micro|auto|manual|sub-agent|subagent|thread|main|toolu_\w*"""
KEPT_RE = re.compile(r"\b(?:" + KEPT.replace("\n", "") + r")\b")
# Names, as scenario names are: the profiles, the complete loop's stages and transition reasons, a header's name.
NAMES = ["minimal", "complete", "retry", "refused", "recover", "retry-after", "overloaded_error", "Overloaded",
         "invalid_request_error", "end_turn", "max_tokens", "transition_reason"]
# The chapter's own Latin words in Japanese (its table: "turn、budget、transition、recovery を explicit に持つ", ...)
CHAPTER_JA = ["transition", "recovery", "explicit", "harness", "jitter", "timeout", "overloaded", "prompt", "window",
              "event-driven", "streaming", "continuation", "truncation", "transport", "error", "branch", "progress",
              "event", "structured", "logs", "UI", "stream", "observability", "handling", "execution", "resume", "system",
              "production"]


def names(lang: str) -> list[str]:
    """The words a page in `lang` keeps in Latin letters beyond KEPT (the sidebar offers every scenario and loop)."""
    return [*SCENARIOS, *NAMES, "5xx", *(CHAPTER_JA if lang == "ja" else [])]  # 5xx: HTTP's name for them


def english_left(text: str, data: list[str], words: list[str] = ()) -> str:
    """What remains of `text` once data, code, icons and the chapter's Latin terms are taken out.

    `data` is taken out wherever it is found; `words` (names(lang)) only as whole words.
    """
    text = re.sub(r"\\([\\`*_{}\[\]<>()#+\-.!|:$~])", r"\1", text)  # Markdown's escapes, as the reader sees them
    for d in sorted(filter(None, data), key=len, reverse=True):  # the longest first: a piece of data may hold another
        text = text.replace(d, " ")
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target: an address, not words the reader sees
    text = re.sub(r"`[^`]*`", " ", text)  # code: commands, ids, JSON
    text = re.sub(r":\w+-badge\[[^\]]*\]|:material/\w+:|:\w+\[", " ", text)  # icons and colours
    text = re.sub(r"\b[a-z0-9]+(?:-[a-z0-9]+)+\b", " ", text)  # scenario names such as two-tools
    text = KEPT_RE.sub(" ", text)
    if words:
        text = re.sub(r"\b(?:" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + r")\b", " ", text)
    return " ".join(re.findall(r"[A-Za-z]{2,}", text))


def walk(node, skip):
    if skip(node):
        return
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child, skip)


DATA = {"ls-data", "pre", "code", "ls-badge"}  # in the pages' HTML: the model's words, commands, output, ids, code


def svg_labels(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text [^>]*>([^<]*)</text>", svg)]


def model_words(at: AppTest) -> list[str]:
    """The text blocks of the history (the task and the model's words), which speak the page's language too."""
    return [html_text(block) for body in html_bodies(at) if 'class="ls-history"' in body
            for block in re.findall(r'<div class="ls-block[^"]*ls-text ls-data">(.*?)</div>', body, re.S)]


def texts_on_page(at: AppTest, tables: bool = True) -> list[str]:
    """Every label, header, caption, message and option the page shows, outside the history's data.

    The HTML views (the history, the Pairs and LoopState tables, the diagram) give their interface text: what is
    data there (the model's words, commands, output, ids, code) is marked so and left out.
    """
    def skip(node):  # code and grids are data (a grid's headers: see column_labels); a diagram: its labels below
        return node.type in ("chat_message", "code", "dataframe", "json") or (
            node.type == "markdown" and (node.value.lstrip().startswith("<style>") or "ls-diagram-box" in node.value))

    out = []
    for root in (at.main, at.sidebar):
        for el in walk(root, lambda n: False):
            if el.type == "markdown" and "ls-diagram-box" in el.value:
                out.extend(svg_labels(el.value))
        for el in walk(root, skip):
            if el.type == "html":
                if el.proto.body.lstrip().startswith("<style>") and "</style>" == el.proto.body.rstrip()[-8:]:
                    continue  # the views' stylesheet
                out.append(html_text(el.proto.body, DATA))
                match = re.search(r'innerHTML = ("(?:[^"\\]|\\.)*");', el.proto.body)
                if match:
                    out.extend(svg_labels(json.loads(match.group(1))))
                continue
            has_label = isinstance(getattr(el, "label", None), str)
            for attr in ("label", "placeholder", "help") if has_label else ("value",):
                v = getattr(el, attr, None)
                if isinstance(v, str) and v:
                    out.append(v)
            if el.type in ("selectbox", "radio"):
                out.extend(el.options)
    return out


PAGE = {  # the title, the five buttons, a header line at the end of two-tools, the Pairs title
    "ja": ("loop をステップ実行", ["最初", "戻る", "進む", "最後のステップへ移動", "最後まで実行"], "### ステップ 10 / 10 · turn 2",
           "ペア · tool_use ↔ tool_result"),
    "zh": ("单步执行循环", ["第一步", "上一步", "下一步", "跳到最后一步", "运行到结束"], "### 第 10 / 10 步 · 第 2 轮",
           "配对 · tool_use ↔ tool_result"),
}


@pytest.mark.parametrize("lang", list(PAGE))
def test_no_english_is_left_on_step_through_its_tables_or_the_model_s_words(lang):
    title, buttons, last_header, pairs_title = PAGE[lang]
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert at.title[0].value == title
    assert [b.label for b in at.button if b.key and b.key.startswith("live-")][:5] == buttons
    run = at.session_state["live-run"]
    for k in range(12):  # the fork's form at every step that has one (the task, each tool_result), opened
        at.session_state[f"live-fork-{k}"] = True
    seen = set()
    for k in range(12):  # every stage, the pending response and results, the end
        seen.update(texts_on_page(at, tables=True))
        if at.button(key="live-step").disabled:
            break
        at.button(key="live-step").click().run()
        assert not at.exception, at.exception
        if k == 0 and lang == "zh":  # the diagram after the first Step: the stage and the turn in Chinese
            labels = " ".join(svg_labels(diagram_svg(at)))
            assert "调用模型" in labels and "第 1 轮" in labels and "call the model" not in labels
        if k == 2:
            at.session_state["live-raw"] = True  # the raw view's captions too
            at.session_state["live-exports"] = True  # and the export buttons
    assert run.done and run.lang == lang
    # Data, not words: the workspace, the tools' inputs and outputs (also as a step's one-line summary), the ids.
    steps = [s for s in run.trace.steps if s.stage == "run_tool"]
    data = [str(run.workspace), run.model.name]
    data += [s.detail["output"] for s in steps] + [short(s.detail["input"]) for s in steps]
    data += [what_happened(run.trace, s.index, lang) for s in steps]
    chats = model_words(at)
    assert any("2 つをまとめて頼みます" in c or "我一次请求两个工具" in c for c in chats), "the model speaks " + lang
    seen.update(chats)  # the history: the task and the model's words are in the page's language too
    leftovers = {s: english_left(s, data, names(lang)) for s in seen}
    left = {s: w for s, w in leftovers.items() if w}
    assert not left, "English left on the page:\n" + "\n".join(f"{w!r}  <=  {s[:120]!r}" for s, w in left.items())
    assert any(s.startswith(last_header) for s in seen)
    assert any(pairs_title in s for s in seen)


def test_the_checker_does_find_english():
    assert english_left("Step 1 of 10 · turn 1", []) == "Step of"
    assert english_left("**Received, not yet appended** · stop_reason `end_turn`", []) == "Received not yet appended"
    assert english_left("ステップ 1 / 10 · turn 1 · `ls -la`", []) == ""


def test_the_stage_note_beside_the_diagram_follows_the_step_and_the_sidebar_language():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for _ in range(2):
        at.button(key="live-step").click().run()
    assert plain(note("call_model", "en")) in note_text(at)
    at.segmented_control(key="lang").set_value("zh").run()
    assert at.query_params["lang"] == ["zh"] or at.query_params["lang"] == "zh"
    assert plain(note("call_model", "zh")) in note_text(at)
    assert at.button(key="live-step").label == "下一步"
    at.button(key="live-step").click().run()
    assert plain(note("append_assistant", "zh")) in note_text(at)


def open_in(page: str, lang: str = "ja", **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(page)
    at.query_params.update({"lang": lang, **query})
    at.run()
    assert not at.exception, at.exception
    return at


def comments_left(at: AppTest, data: list[str] = ()) -> dict[str, str]:
    """English in the comments of the code the page shows (the code itself is Python)."""
    comments = [c for code in at.main.get("code") for c in re.findall(r"#\s*(.+)$", code.value, re.MULTILINE)]
    return {c: w for c in comments if (w := english_left(c, list(data)))}


@pytest.mark.parametrize("lang, title", [("ja", "実行をリプレイ"), ("zh", "回放一次运行")])
def test_replay_page_has_no_english_left(lang, title):
    at = open_in("pages/replay.py", lang)
    assert at.title[0].value == title
    trace = at.session_state["replay"]["trace"]
    assert trace.meta["lang"] == lang  # the sample recorded in the page's language
    steps = [s for s in trace.steps if s.stage == "run_tool"]
    data = [str(trace.meta.get("model")), "two-tools.json", "loopscope", *SCENARIOS]
    data += [s.detail["output"] for s in steps] + [what_happened(trace, s.index, lang) for s in steps]
    seen = texts_on_page(at, tables=True) + model_words(at)
    left = {s: w for s in seen if (w := english_left(s, data))}
    assert not left, left


def api_words(note) -> list[str]:
    """The values of a warning that quote the API's own words (a rule it states, with its own `code`): data."""
    out = []
    for value in note.values.values():
        for item in value if isinstance(value, list) else [value]:
            if hasattr(item, "values"):
                out += api_words(item)
            elif isinstance(item, str) and "`" in item:  # inline code in a longer fence, which english_left cannot read
                out.append(item)
    return out


def switch(at: AppTest, lang: str) -> AppTest:
    """The page's language changed in the sidebar, as a reader changes it after an import."""
    at.segmented_control(key="lang").set_value(lang).run()
    assert not at.exception, at.exception
    return at


SKIPPED = {"ja": "読み飛ばしました", "zh": "已跳过"}


def test_import_warnings_on_replay_are_in_the_page_s_language():
    """Each upload is made in one language and read in both: the warnings box said at the upload, then again once
    the language changes (the uploads alternate, so each language also gets half of them said at the upload)."""
    from loop.text.catalogs import say, say_n
    from tests.test_import_warnings import broken_uploads

    at = open_in("pages/replay.py", "ja")
    # Beside the chapter's terms, the words each language's catalog itself keeps in Latin letters for a concept.
    kept = {lang: [w for concept in ("thread", "System prompt") for w in say(lang, concept).split() if w.isascii()]
            for lang in SKIPPED}
    boxes = {lang: [] for lang in SKIPPED}
    lang = "ja"
    for upload in broken_uploads():
        at.file_uploader(key="replay-upload").set_value([(name, data, "application/json") for name, data in upload])
        at.run()
        assert not at.exception, at.exception
        said_before = []
        for lang in (lang, "zh" if lang == "ja" else "ja"):  # the page's language, then the other
            if at.segmented_control(key="lang").value != lang:
                switch(at, lang)
            assert not at.error, at.error[0].value
            notes = at.session_state["replay"]["warnings"]
            heading = say_n(lang, "**{n} warning while importing:**", "**{n} warnings while importing:**", len(notes))
            box = next(w.value for w in at.warning if w.value.startswith(heading))
            assert box.count("\n- ") == min(len(notes), 10) + (len(notes) > 10), box
            left = english_left(box, [w for note in notes for w in api_words(note)], names(lang) + kept[lang])
            assert not left, f"English left in the {lang} warnings of {upload[0][0]}:\n{left}\n<= {box}"
            assert box not in said_before, box  # said anew in this language, not left as the other said it
            said_before = [box]
            boxes[lang].append(box)
    for lang, skipped in SKIPPED.items():
        said = "\n".join(boxes[lang])
        assert skipped in said and "`messages[3]`" in said  # the page's words, and the file's places as they are
        assert "`Unterminated string starting at`" in said  # the JSON parser's words, quoted as it said them
        assert say(lang, "… and {n} more", n=11) in said  # many.json: 21 warnings, 10 shown
    last = at.session_state["replay"]["warnings"]  # (the last upload's)
    switch(at, "en")  # the page's language changes after the import
    heading = f"**{len(last)} warning{'s' if len(last) > 1 else ''} while importing:**\n- "
    assert at.warning[0].value.startswith(heading) and not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", at.warning[0].value), \
        at.warning[0].value


@pytest.mark.parametrize("lang, mistake", [("ja", "no-assistant-append"), ("zh", "no-assistant-append"),
                                           ("ja", "no-loop"), ("zh", "no-loop")])
def test_mistakes_lab_has_no_english_left_and_keeps_the_api_error_verbatim(lang, mistake):
    at = open_in("pages/mistakes.py", lang, mistake=mistake)
    wrong, right = at.session_state["mistakes-runs"][(mistake, lang)]
    if wrong.broke_at:
        assert wrong.broke_at.error in at.error[0].value  # the API's words stay as the API wrote them
    from loop.engine.mistakes import MISTAKES, OPENAI

    # the API's words stay verbatim, the other dialect's too (with its product's name)
    data = [wrong.broke_at.error if wrong.broke_at else "", MISTAKES[mistake].said(OPENAI) or "",
            "Chat Completions", *SCENARIOS, "end_turn"]
    for run in (wrong, right):
        for call in run.calls:
            data += call.tool_outputs
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data))}
    assert not left, left
    assert right.calls[0].messages[0]["content"] == SCENARIOS["list-files"].task_in(lang)  # the task, in the language
    at.radio(key="mistake-pick").set_value("no-write-back").run()
    assert not comments_left(at) and len(at.main.get("code")) >= 2


def about_svg(at: AppTest) -> str:
    found = [m.value for m in at.markdown if "ls-diagram-box" in m.value]
    assert found, "no diagram on the page"
    return found[0]


@pytest.mark.parametrize("lang, title, node", [("ja", "loop について", "model を呼ぶ"), ("zh", "关于循环", "调用模型")])
def test_about_page_its_diagram_and_its_code_s_comments_have_no_english_left(lang, title, node):
    at = open_in("pages/about.py", lang)
    assert at.title[0].value == title
    from loop.engine.mistakes import ANTHROPIC, MISTAKES
    from pages.about import CLASSIC

    # The API's errors stay verbatim; the chapter itself writes terminal, code and agent in Latin letters.
    data = [*(MISTAKES[name].said(ANTHROPIC) for name in CLASSIC), "terminal", "code", "agent",
            "tool result", "log", "input"]  # the chapter's closing points, quoted as it writes them
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data, names(lang)))}
    assert not left, left
    labels = " ".join(svg_labels(about_svg(at)))
    assert node in labels and not english_left(labels, [])
    assert not comments_left(at)


# The diagram on Step through speaking Chinese after a Step: test_no_english_is_left_on_step_through_its_tables_or_the_model_s_words[zh].


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
    return {COOKIE: issued(at)}, [first.task, at.session_state["live-run"].task]


def test_japanese_saved_runs_panel_with_runs_listed_has_no_english_label(two_saved_runs, fake_api):
    cookies, tasks = two_saved_runs
    at = app(cookies=cookies, lang="ja")  # the same browser, in Japanese
    labels = [e.label for e in at.expander]
    assert "保存した実行 · 2" in labels, labels
    panel = at.expander[labels.index("保存した実行 · 2")]
    box = at.selectbox(key="saved-run")
    assert len(box.options) == 2 and "3 ステップ" in box.options[0] and "未終了" in box.options[0]
    assert at.text_input(key="resume-api-key").label == "この実行の API key"  # the newest run is on a real model
    run = at.session_state["live-run"]
    data = [*tasks, run.task, str(run.workspace), "claude-test", "loopscope-scripted"]
    left = {s: w for s in texts_on_page(at) if (w := english_left(s, data, names("ja")))}
    assert not left, left
    headers = column_labels(panel)
    assert headers == ["タスク", "model", "ステップ数", "終了", "保存日時"], headers

    at.text_input(key="resume-api-key").set_value("sk-ant-i18n-again")
    click(at, "resume-run")
    resumed = at.session_state["live-run"]
    notes = [m.value for m in at.success]
    assert notes and notes[0].startswith("再開しました: 全 3 ステップ")
    assert not [w for n in notes if (w := english_left(n, [str(resumed.workspace)]))]

    click(at, "delete-run")  # the other run, the only one offered now
    notes = [m.value for m in at.success]
    assert notes and notes[0].startswith("保存した実行 ") and not english_left(notes[0], [])
    assert "保存した実行 · 0" in [e.label for e in at.expander]


def test_the_saved_runs_panel_speaks_chinese(two_saved_runs):
    cookies, _ = two_saved_runs
    at = app(cookies=cookies, lang="zh")
    assert "已保存的运行 · 2" in [e.label for e in at.expander]
    assert (at.button(key="resume-run").label, at.button(key="delete-run").label) == ("恢复", "删除")
    assert at.selectbox(key="saved-run").label == "已保存的运行"
    assert "3 步" in at.selectbox(key="saved-run").options[0]
    assert "API key" in at.text_input(key="resume-api-key").label and "从不" in at.text_input(key="resume-api-key").help


def test_a_run_keeps_the_language_it_was_started_in():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "ja"
    at.run()
    run = at.session_state["live-run"]
    assert run.lang == "ja" and run.task == SCENARIOS["two-tools"].task_in("ja")
    at.segmented_control(key="lang").set_value("en").run()  # the page changes language; the run does not
    for _ in range(3):
        click(at, "live-step")
    assert at.session_state["live-run"] is run and run.lang == "ja"
    assert run.state.messages[1]["content"][0]["text"] == "2 つをまとめて頼みます。"
    assert at.button(key="live-step").label == "Step"
    click(at, "new-run")  # a new run starts in the page's language
    assert at.session_state["live-run"].lang == "en"
    assert at.session_state["live-run"].task == SCENARIOS["two-tools"].task


def test_a_scenario_link_with_a_language_opens_the_run_in_it():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"scenario": "hello-py", "step": "3", "lang": "zh"})
    at.run()
    assert not at.exception, at.exception
    run = at.session_state["live-run"]
    assert run.lang == "zh" and run.trace.cursor == 2
    assert run.state.messages[0]["content"] == "创建一个打印问候语的 hello.py，然后运行它。"
    assert run.state.messages[1]["content"][0]["text"] == "我先创建 hello.py。"


FORMAT_NAMES = ["UTF", "Lines", "zip", "learn-claude-code", "subagents", "MiB", "CPU", "Codex", "CLI", "rollout"]  # names of formats and units


def unreadable_uploads() -> list[list[tuple[str, bytes]]]:
    """Uploads the importers refuse, each for a different reason."""
    import io
    import zipfile

    user = b'{"type": "user", "isSidechain": false, "uuid": "%d", "message": {"role": "user", "content": "x"}}'
    no_log = io.BytesIO()
    with zipfile.ZipFile(no_log, "w") as z:
        z.writestr("notes.txt", "no logs here")
    return [[("empty.json", b"  \n")], [("wide.json", b"\xff\xfe{}")], [("latin.json", b'{"a": "\xe9"}')],
            [("bad.json", b'{"messages": [')], [("numbers.json", b"[1, 2, 3]")], [("keys.json", b'{"a": 1, "b": 2}')],
            [("lines.jsonl", b'{"a": 1}\n{"b": 2}\n')], [("deep.json", b"[" * 100_000 + b"]" * 100_000)],
            [("long.json", b'{"n": ' + b"9" * 5000 + b"}")], [("nothing.json", b'{"messages": [{"role": 3}]}')],
            [("a.jsonl", user % 1), ("b.jsonl", user % 2)], [("a.jsonl", user % 1), ("t.json", b'{"x": 1}')],
            [("x.zip", b"PK\x03\x04 broken")], [("e.zip", no_log.getvalue())],
            [("a.jsonl", b"\n"), ("b.jsonl", b" "), ("c.jsonl", b""), ("d.jsonl", b"\n")],
            [("list.json", b"[]")], [("object.json", b"{}")], [("int.json", b"5")], [("dicts.json", b'[{"a": 1}]')],
            [("many-keys.json", json.dumps(dict.fromkeys("abcdefghi", 1)).encode())],
            [("t.json", b'{"format": "loopscope-transcript", "messages": 5}')],
            [("deeper.json", b"[" * 300 + b"]" * 300)], [("request.json", b'{"messages": []}')]]


def test_why_a_file_cannot_be_replayed_is_said_in_the_page_s_language():
    """Each upload made in one language and read in both, as the warnings above are."""
    from loop.text.catalogs import say
    from loop.importers import import_files

    at = open_in("pages/replay.py", "ja")
    lang = "ja"
    for upload in unreadable_uploads():
        with pytest.raises(ImportFailed) as failed:  # the command line's words: English
            import_files(upload)
        at.file_uploader(key="replay-upload").set_value([(name, data, "application/json") for name, data in upload])
        at.run()
        assert not at.exception, at.exception
        said_before = []
        for lang in (lang, "zh" if lang == "ja" else "ja"):  # the page's language, then the other
            if at.segmented_control(key="lang").value != lang:
                switch(at, lang)
            heading = say(lang, "**This file cannot be replayed.**")
            (error,) = at.error
            assert error.value.startswith(heading), error.value
            reason = error.value[len(heading):]
            assert str(failed.value) not in reason
            left = english_left(reason, api_words(failed.value.note), names(lang) + FORMAT_NAMES)
            assert not left, f"English left in why {upload[0][0]} cannot be replayed in {lang}:\n{left}\n<= {error.value}"
            assert error.value not in said_before, error.value  # said anew in this language
            said_before = [error.value]
    switch(at, "en")  # said again in the page's language when it changes
    assert at.error[0].value.replace("`", "").startswith(f"**This file cannot be replayed.** {failed.value}")


def test_the_header_of_a_session_read_with_its_sub_agents_logs_is_in_the_page_s_language():
    from tests.test_import_warnings import _session

    at = open_in("pages/replay.py", "ja")
    upload = _session()  # session.jsonl, agent-zz.jsonl, and an empty file passed over
    at.file_uploader(key="replay-upload").set_value([(name, data, "application/json") for name, data in upload])
    at.run()
    assert not at.exception, at.exception
    for lang in ("ja", "zh", "en"):  # uploaded in Japanese, then read in each language
        if lang != "ja":
            switch(at, lang)
        (header,) = [m.value for m in at.markdown if "session.jsonl" in m.value]
        if lang == "en":
            assert header.startswith("**Replaying session.jsonl with 1 sub-agent log** · format `claude-code`"), header
            continue
        task = at.session_state["replay"]["trace"].meta["task"]  # the log's words: data
        left = english_left(header, ["session\\.jsonl", "session.jsonl", task], names(lang))
        assert not left, f"English left in the {lang} header: {left}\n<= {header}"


def broken_transcripts() -> list[tuple[str, bytes]]:
    """Loopscope transcripts broken in the ways the loader names (loop/files/transcript.py): one file each."""
    import copy

    samples = {name: json.loads((ROOT / "samples" / f"{name}.json").read_text())
               for name in ("two-tools", "subagent", "compact")}
    micro, auto = [i for i, s in enumerate(samples["compact"]["steps"]) if s["stage"] == "compact"]

    def detail(sample: str, i: int) -> dict:
        return samples[sample]["steps"][i]["detail"]

    changes = {
        "version": ("two-tools", lambda d: d.update(version=4)),
        "no-messages": ("two-tools", lambda d: d.pop("messages")),
        "message": ("two-tools", lambda d: d["messages"].__setitem__(1, "hi")),
        "role": ("two-tools", lambda d: d["messages"][2].update(role="tool")),
        "content": ("two-tools", lambda d: d["messages"][0].pop("content")),
        "no-steps": ("two-tools", lambda d: d.pop("steps")),
        "step": ("two-tools", lambda d: d["steps"].__setitem__(2, 7)),
        "fields": ("two-tools", lambda d: [d["steps"][5].pop(k) for k in ("stage", "n_messages")]),
        "stage": ("two-tools", lambda d: d["steps"][2].update(stage="think")),
        "thread": ("two-tools", lambda d: d["steps"][1].update(thread="task-9")),
        "n-messages": ("two-tools", lambda d: d["steps"][1].update(n_messages="x")),
        "turn-count": ("two-tools", lambda d: d["steps"][1].update(turn_count=10**400)),
        "tokens": ("two-tools", lambda d: d["steps"][1].update(input_tokens=-1)),
        "time": ("two-tools", lambda d: d["steps"][1].update(time=[1])),
        "detail": ("two-tools", lambda d: d["steps"][1].update(detail="x")),
        "request": ("two-tools", lambda d: d["steps"][1]["detail"].pop("request")),
        "tool-result": ("two-tools", lambda d: d["steps"][4]["detail"].pop("tool_result")),
        "fit": ("two-tools", lambda d: d["steps"][4].update(n_messages=1)),
        "after": ("two-tools", lambda d: d["steps"][-1].update(n_messages=99)),
        "branches": ("two-tools", lambda d: d.update(branches="x")),
        "branch": ("two-tools", lambda d: d.update(branches=[dict(copy.deepcopy(d), version=7)])),
        "threads": ("subagent", lambda d: d.update(threads="x")),
        "thread-item": ("subagent", lambda d: d["threads"].__setitem__(1, 5)),
        "thread-id": ("subagent", lambda d: d["threads"][1].pop("id")),
        "same-id": ("subagent", lambda d: d["threads"][1].update(id="main")),
        "label": ("subagent", lambda d: d["threads"][1].update(label=5)),
        "facts": ("subagent", lambda d: d["threads"][1].update(facts="x")),
        "main-parent": ("subagent", lambda d: d["threads"][0].update(parent="task")),
        "main-messages": ("subagent", lambda d: d["threads"][0].update(messages=[])),
        "thread-messages": ("subagent", lambda d: d["threads"][1].pop("messages")),
        "no-main": ("subagent", lambda d: d["threads"].pop(0)),
        "parent": ("subagent", lambda d: d["threads"][1].update(parent="nobody")),
        "orphan": ("subagent", lambda d: d["threads"][1].update(parent=None)),
        "kind": ("compact", lambda d: d["steps"][micro]["detail"].update(kind="zip")),
        "replaced": ("compact", lambda d: d["steps"][micro]["detail"].pop("replaced")),
        "replaced-item": ("compact", lambda d: d["steps"][micro]["detail"]["replaced"].__setitem__(0, 5)),
        "index": ("compact", lambda d: d["steps"][micro]["detail"]["replaced"][0].update(index=999)),
        "in-place": ("compact", lambda d: d["steps"][micro].update(n_messages=d["steps"][micro]["n_messages"] + 1)),
        "history-before": ("compact", lambda d: d["steps"][auto]["detail"]["history_before"].pop()),
    }
    assert detail("compact", micro)["kind"] == "micro" and "history_before" in detail("compact", auto)
    out = []
    for name, (sample, change) in changes.items():
        data = copy.deepcopy(samples[sample])
        change(data)
        out.append((f"{name}.json", json.dumps(data).encode()))
    return out


def test_why_a_broken_transcript_cannot_be_loaded_is_said_in_the_page_s_language():
    """Every reason the loader gives, as the page says it (`said`, the words after the error's heading) in each
    language; then one broken transcript uploaded for real: the page shows that reason, said so, with its heading,
    in the language it was uploaded in and again in each one it changes to."""
    from loop.text.catalogs import say
    from loop.importers import import_bytes
    from pages.views.replay import said
    from tests.test_import_warnings import loader_messages, messages_of

    loader = loader_messages()
    kept = {lang: [w for w in say(lang, "thread").split() if w.isascii()] for lang in ("ja", "zh")}
    reasons = set()
    for name, data in broken_transcripts():
        with pytest.raises(ImportFailed) as failed:  # the command line's words: English
            import_bytes(data, name)
        note = failed.value.note
        assert messages_of(note) & loader, note  # the loader's reason travels as its message, not as English text
        reasons |= messages_of(note)
        for lang in ("ja", "zh"):
            shown = said(note, lang)  # what the page writes after its heading
            assert f"`{name}`" in shown and str(failed.value) not in shown.replace("`", "")  # data as code
            words = note.render(lang, data=lambda value: " ")  # the reason's own words, its data (paths, values) left out
            left = english_left(words, [], names(lang) + FORMAT_NAMES + kept[lang])
            assert not left, f"English left in why {name} cannot be replayed in {lang}:\n{left}\n<= {shown}"
    # 31 of the loader's reasons; an upload cannot reach the rest (the importers read the JSON themselves and load a
    # transcript without the pairing check; a saved run's journal is read by the runs store).
    assert len(reasons & loader) >= 31, sorted(reasons & loader)

    at = open_in("pages/replay.py", "ja")  # one of them uploaded: read in the import's own process, said on the page
    name, data = "thread-id.json", dict(broken_transcripts())["thread-id.json"]
    with pytest.raises(ImportFailed) as failed:
        import_bytes(data, name)
    at.file_uploader(key="replay-upload").set_value([(name, data, "application/json")])
    at.run()
    assert not at.exception, at.exception
    for lang in ("ja", "zh"):
        if lang != "ja":
            switch(at, lang)
        (error,) = at.error
        assert error.value == (f"{say(lang, '**This file cannot be replayed.**')} {said(failed.value.note, lang)}\n\n"
                               + say(lang, "The replay below is unchanged.")), error.value
    switch(at, "en")  # said again in the page's language when it changes
    assert at.error[0].value.replace("`", "").startswith(f"**This file cannot be replayed.** {failed.value}")


def test_why_a_sample_cannot_be_opened_follows_a_later_change_of_language(tmp_path, monkeypatch):
    from loop.text.catalogs import say
    from pages.views import replay

    at = open_in("pages/replay.py", "ja")
    broken = tmp_path / "hello-py.json"
    broken.write_text(json.dumps({"format": "loopscope-transcript", "version": 9, "messages": [], "steps": []}))
    monkeypatch.setattr(replay, "sample_path", lambda name, language: broken)
    at.selectbox(key="replay-sample").set_value("hello-py").run()
    assert not at.exception, at.exception
    for lang in ("ja", "zh"):  # chosen in Japanese, then said again in Chinese
        if lang != "ja":
            switch(at, lang)
        (error,) = at.error
        assert say(lang, "The sample {name} cannot be opened: {error}", name="`hello-py`", error="")[:2] in error.value
        assert not english_left(error.value, [], names(lang)), error.value
    switch(at, "en")
    assert at.error[0].value == (
        "**This file cannot be replayed.** The sample `hello-py` cannot be opened: `hello-py.json`: a Loopscope "
        "transcript that cannot be loaded: `version`: this Loopscope reads versions 1 to 3, the file is version `9`"
        "\n\nThe replay below is unchanged.")


def test_an_unknown_language_falls_back_to_english():
    from loop import start
    from loop.text.catalogs import known

    at = open_in("pages/replay.py", "xx")  # a link with a language Loopscope does not have
    assert at.title[0].value == "Replay a run"
    assert "lang" not in at.session_state or at.session_state["lang"] == "en"
    assert at.segmented_control(key="lang").value == "en"
    assert known("xx") == known(None) == "en" and known("zh") == "zh"
    with start(scenario="list-files", lang="xx") as run:  # a run started in it is made in English
        assert run.trace.meta["lang"] == "en" and run.trace.meta["task"] == SCENARIOS["list-files"].task_in("en")
