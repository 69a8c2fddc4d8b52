"""The seven classic mistakes, each defined once (loop/engine/mistakes.py): what the Mistakes lab makes, the
offline model refuses with the API's words its definition names, the wire shows as the definition says (Your loop's
recognizer names the very request the lab's broken loop sent), in every language; and no other module of `loop/`
spells a mistake's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loop.engine import mistakes, rules
from loop.engine.broken import lab
from loop.engine.mistakes import ANTHROPIC, DIALECTS, MISTAKES, NAMES, OPENAI, recognize
from loop.engine.runner import new_workspace
from loop.engine.toolsets import default_toolbox
from loop.text.catalogs import say

ROOT = Path(__file__).resolve().parent.parent
RULES_WORDS = {name: value for name, value in vars(rules).items() if name.isupper() and isinstance(value, str)}


def test_no_other_module_of_loop_spells_a_mistakes_name():
    home = ROOT / "loop" / "engine" / "mistakes.py"
    for name in NAMES:
        spelled = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")
        found = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "loop").rglob("*.py"))
                 if p != home and spelled.search(p.read_text(encoding="utf-8"))]
        assert found == [], f"{name!r} is spelled outside {home.relative_to(ROOT)}: {found}"
        assert spelled.search(home.read_text(encoding="utf-8"))


def test_no_page_quotes_the_apis_words_and_about_says_the_chapters_two_mistakes_from_their_definitions():
    from loop.files.export import prose
    from pages.about import CLASSIC

    from .apptest import app

    pages = sorted((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    for name, words in RULES_WORDS.items():  # the longest piece of the API's words between two placeholders
        piece = max(re.split(r"\{\w*\}", words), key=len).strip(" .")
        if len(piece) < 20:  # SYSTEM: "system", no words of the API
            continue
        quoted = [str(p.relative_to(ROOT)) for p in pages if piece in p.read_text(encoding="utf-8")]
        assert quoted == [], f"rules.{name} is quoted in {quoted}: read it from its mistake's definition"
    assert [MISTAKES[name].title for name in CLASSIC] == [MISTAKES[mistakes.NO_ASSISTANT_APPEND].title,
                                                          MISTAKES[mistakes.NO_WRITE_BACK].title]
    for lang in ("en", "ja"):
        drawn = "\n".join(m.value for m in app("pages/about.py", lang=lang).markdown)
        for name in CLASSIC:
            m = MISTAKES[name]
            for text in (say(lang, m.title), say(lang, m.rule), prose(m.said(ANTHROPIC)), say(lang, m.fix)):
                assert text in drawn, (lang, name, text)


def test_each_definition_is_whole_in_every_language_and_quotes_the_apis_words_from_rules():
    assert len(NAMES) == 7 and list(NAMES) == list(MISTAKES)
    for name, m in MISTAKES.items():
        for text in (m.title, m.fix, m.shows, m.cannot, *([m.rule] if m.rule else [])):
            assert say("ja", text) != text and say("zh", text) != text and say("ja", text) != say("zh", text), text
        assert set(m.words) == set(DIALECTS)
        for dialect, words in m.words.items():  # the API's words are rules.py's own constants, never copied
            assert words is None or any(words is value for value in RULES_WORDS.values()), (name, dialect)
        assert bool(m.rule) == m.breaks_a_rule == (m.words[ANTHROPIC] is not None)
        assert m.changes and m.wrong != m.right
    assert MISTAKES[mistakes.NO_WRITE_BACK].said(OPENAI) == rules.CHAT_UNANSWERED.format(ids="…")
    assert MISTAKES[mistakes.NO_ASSISTANT_APPEND].said(OPENAI) == rules.CHAT_NOT_A_RESPONSE
    assert MISTAKES[mistakes.NO_LOOP].said(OPENAI) is None and MISTAKES[mistakes.MAX_TOKENS_GO_ON].said(OPENAI) is None


@pytest.mark.parametrize("name", NAMES)
def test_what_the_lab_makes_is_refused_in_the_definitions_words_and_recognized_by_the_definitions_wire(name):
    with default_toolbox(new_workspace()) as tools:  # the mistake as the Mistakes lab makes it
        trace = lab(name, tools)
    m = MISTAKES[name]
    last = trace.steps[-1]
    made = [s for s in trace.steps if s.detail.get("mistake") == name and s.stage != "refused"]
    assert made and all(m.made_at(s) for s in made)  # made at the steps the definition says it changes
    if not m.breaks_a_rule:  # no loop: nothing breaks a rule; the tool_use is never run
        assert last.stage == "decide" and not any(s.stage == "run_tool" for s in trace.steps)
        call = max(i for i, s in enumerate(trace.steps) if s.stage == "call_model")
        assert mistakes.recognize_end(trace.response_at(call), ran_tools=False) == name
        return
    assert last.stage == "refused"
    said = last.detail.error["message"]
    template = m.words[ANTHROPIC]
    pattern = re.escape(template).replace(r"\{ids\}", ".+").replace(r"\{id\}", ".+").replace(r"\{n\}", r"\d+")
    assert re.fullmatch(rf"messages\.\d+(\.content\.\d+)?: {pattern}", said), said  # the API's words, as defined
    before = max(i for i, s in enumerate(trace.steps) if s.stage == "call_model")
    sent = trace.request_at(last.index)["messages"]
    assert recognize(trace.response_at(before), sent) == name  # the wire shows it as the definition reads it
