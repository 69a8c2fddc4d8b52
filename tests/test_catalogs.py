"""The gettext catalogs: every message the code shows is translated in every language, none is left over,
placeholders match, and a new language is one .po file."""

import json
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from loop.text import catalogs

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "locales"
# As `make messages` extracts them (see the Makefile).
EXTRACT = ["-q", "extract", "-F", "locales/babel.cfg", "--ignore-dirs=.* ._ .venv tests bench", "--sort-output",
           "--add-location=file", "--project=Loopscope"]
LANGS = sorted(p.parent.parent.name for p in LOCALES.glob("*/LC_MESSAGES/loopscope.po"))


def key(message) -> str:
    return message.id if isinstance(message.id, str) else message.id[0]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> dict:
    """The messages in the code today, {msgid: message}, extracted by Babel."""
    out = tmp_path_factory.mktemp("pot") / "loopscope.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", *EXTRACT, "-o", str(out), "."],
                   cwd=ROOT, check=True)
    with out.open("rb") as f:
        return {key(m): m for m in read_po(f) if m.id}


def catalog(lang: str):
    with (LOCALES / lang / "LC_MESSAGES" / "loopscope.po").open("rb") as f:
        return read_po(f, locale=lang)


def test_there_are_catalogs_for_japanese_and_chinese():
    assert {"ja", "zh"} <= set(LANGS)
    assert list(catalogs.languages())[:1] == ["en"] and {"ja": "日本語", "zh": "中文"}.items() <= catalogs.languages().items()


@pytest.mark.parametrize("lang", LANGS)
def test_every_message_in_the_code_is_translated_and_no_entry_is_left_unused(lang, extracted):
    entries = {key(m): m for m in catalog(lang) if m.id}
    missing = [k for k in extracted if k not in entries]
    untranslated = [k for k, m in entries.items() if k in extracted and (
        m.fuzzy or not (m.string if isinstance(m.string, str) else all(m.string)))]
    unused = [k for k in entries if k not in extracted]
    assert not missing, f"{lang}: not in the catalog (run `make messages`, then translate):\n" + "\n".join(missing)
    assert not untranslated, f"{lang}: empty or fuzzy (translate, then remove the fuzzy flag):\n" + "\n".join(untranslated)
    assert not unused, f"{lang}: no longer in the code (run `make messages`):\n" + "\n".join(unused)


def test_the_template_is_the_code_s_messages(extracted):
    with (LOCALES / "loopscope.pot").open("rb") as f:
        template = {key(m) for m in read_po(f) if m.id}
    assert template == set(extracted), "locales/loopscope.pot is stale: run `make messages`"


def placeholders(text: str) -> set[str]:
    return set(re.findall(r"\{(\w*)\}", text))


@pytest.mark.parametrize("lang", LANGS)
def test_translations_keep_the_placeholders_of_their_message(lang):
    wrong = []
    for m in catalog(lang):
        if not m.id:
            continue
        ids = [m.id] if isinstance(m.id, str) else list(m.id)
        strings = [m.string] if isinstance(m.string, str) else list(m.string)
        want = set().union(*(placeholders(i) for i in ids))
        wrong += [f"{ids[0]!r} → {s!r}" for s in strings if s and placeholders(s) - want]
        if isinstance(m.id, str) and m.string and placeholders(m.string) != want:
            wrong.append(f"{m.id!r} → {m.string!r}")
    assert not wrong, "\n".join(wrong)


def test_no_message_hides_in_an_f_string_where_extraction_cannot_see_it():
    """Python 3.11's tokenizer gives an f-string as one token, so Babel skips a t("…") inside one."""
    hidden = []
    for path in [ROOT / "app.py", *(ROOT / "pages").rglob("*.py"), *(ROOT / "loop").rglob("*.py")]:
        with tokenize.open(path) as f:
            for token in tokenize.generate_tokens(f.readline):
                if token.type == tokenize.STRING and re.match(r"^[rbRB]*[fF]", token.string) and \
                        re.search(r"\{[^{}]*\b(?:t|say|say_n)\(\s*['\"]", token.string):
                    hidden.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string[:80]}")
    assert not hidden, "\n".join(hidden)


def test_a_new_language_is_one_po_file(tmp_path, monkeypatch):
    """Copy a catalog under a new code, and the language is offered, named in itself, and spoken."""
    japanese = catalogs.say("ja", "Step")
    (tmp_path / "ko" / "LC_MESSAGES").mkdir(parents=True)
    shutil.copy(LOCALES / "ja" / "LC_MESSAGES" / "loopscope.po", tmp_path / "ko" / "LC_MESSAGES" / "loopscope.po")
    monkeypatch.setattr(catalogs, "LOCALES", tmp_path)
    catalogs.languages.cache_clear()
    catalogs.translations.cache_clear()
    try:
        assert catalogs.languages() == {"en": "English", "ko": "한국어"}
        assert catalogs.say("ko", "Step") == japanese != "Step"
        assert catalogs.say("fr", "Step") == "Step"  # no catalog: English
    finally:
        catalogs.languages.cache_clear()
        catalogs.translations.cache_clear()


def test_a_fuzzy_entry_is_not_shown(tmp_path, monkeypatch):
    """An entry the update marked fuzzy (a guess from a similar message) shows as English until checked."""
    (tmp_path / "ja" / "LC_MESSAGES").mkdir(parents=True)
    text = (LOCALES / "ja" / "LC_MESSAGES" / "loopscope.po").read_text(encoding="utf-8")
    text = text.replace('msgid "Step"\n', '#, fuzzy\nmsgid "Step"\n', 1)
    (tmp_path / "ja" / "LC_MESSAGES" / "loopscope.po").write_text(text, encoding="utf-8")
    monkeypatch.setattr(catalogs, "LOCALES", tmp_path)
    catalogs.translations.cache_clear()
    try:
        assert catalogs.say("ja", "Step") == "Step" and catalogs.say("ja", "Back") != "Back"
    finally:
        catalogs.translations.cache_clear()


CJK = "\u3040-\u30ff\u3400-\u9fff"
ITALIC = re.compile(rf"(?<![*\w])([*_])(?![*_\s])[^*_\n]*[{CJK}][^*_\n]*(?<![\s*_])\1(?![*\w])")


@pytest.mark.parametrize("lang", LANGS)
def test_no_cjk_text_is_set_in_italics(lang):
    """Chinese and Japanese have no italic: a browser slants the glyphs instead."""
    slanted = [f"{key(m)!r} → {s!r}" for m in catalog(lang) if m.id
               for s in ([m.string] if isinstance(m.string, str) else m.string) if ITALIC.search(s)]
    assert not slanted, "\n".join(slanted)


def test_the_italics_check_finds_italic_cjk():
    assert ITALIC.search("次に *model を呼ぶ* を実行します") and ITALIC.search("将执行 _调用模型_")
    assert not ITALIC.search("**進む** を押す") and not ITALIC.search("*unexpected `tool_use_id` found*")


# One word a concept, the chapter's own (s01): a variant here is a second name for the same thing.
GLOSSARY = {
    "ja": {"write-back": ["書き込", "書き戻", "書き出して戻"], "the scripted model": ["台本 model"],
           "stage (段階) is not step (ステップ)": ["段階 1", "段階 3", "段階 5", "ステップ 1 で", "第 1 ステップ"],
           "the Mistakes lab": ["よくある間違い"], "replay": ["再生する"]},
    "zh": {"write-back (写回)": ["写入 messages", "写进 messages"], "the scripted model": ["脚本模型"],
           "stage (阶段) is not step (步)": ["第 2 步。", "回到第 2 步", "跳过了第 3 步"],
           "the Step button": ["下一次 **下一步**"], "the Mistakes lab": ["常见错误"]},
}


@pytest.mark.parametrize("lang", sorted(GLOSSARY))
def test_one_term_a_concept(lang):
    strings = [s for m in catalog(lang) if m.id for s in ([m.string] if isinstance(m.string, str) else m.string)]
    found = [f"{concept}: {variant!r} in {s!r}" for concept, variants in GLOSSARY[lang].items()
             for variant in variants for s in strings if variant in s]
    assert not found, "\n".join(found)


# The term chosen for a concept, and the other spellings of it no entry may use (the chapter keeps API words such
# as message, tool_use and tool_result in English; a sub-agent's answer is 答案 where zh says it most).
TERMS = {
    "ja": {"sub-agent": ["サブエージェント", "subagent の", "subagent は"], "message": ["メッセージ"],
           # the chapter's terms in Latin letters, as the chapter writes them
           "loop": ["ループ"], "request": ["リクエスト"], "response": ["応答"], "tool": ["ツール"], "model": ["モデル"],
           "block": ["ブロック"]},
    "zh": {"子代理的答案": ["子代理的回答"]},
}


@pytest.mark.parametrize("lang", sorted(TERMS))
def test_each_term_is_spelled_one_way_across_the_catalog(lang):
    strings = [s for m in catalog(lang) if m.id for s in ([m.string] if isinstance(m.string, str) else m.string)]
    for chosen, others in TERMS[lang].items():
        assert any(chosen in s for s in strings), f"{chosen!r} is used nowhere"
        found = [f"{other!r} (say {chosen!r}) in {s!r}" for other in others for s in strings if other in s]
        assert not found, "\n".join(found)


# A CJK sentence ends with 。, never with an ASCII period ("…呼び直す."); a "." before a name (ファイル.txt, .jsonl) is
# not a sentence's end, so a letter or digit after the period is allowed.
ASCII_PERIOD = re.compile(rf"[{CJK}]\.(?![\w.])")


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_no_cjk_sentence_ends_with_an_ascii_period_in_the_catalog_or_the_scripted_model_s_words(lang):
    found = [f"{key(m)!r} → {s!r}" for m in catalog(lang) if m.id
             for s in ([m.string] if isinstance(m.string, str) else m.string) if ASCII_PERIOD.search(s)]
    # what the offline model wrote in the built-in scenarios (its words and summaries), as the samples keep it, and
    # the one-line narration of each of their steps
    from loop.files import transcript
    from loop.views.narrate import describe

    for sample in sorted((ROOT / "samples" / lang).glob("*.json")):
        trace = transcript.load(sample)
        text = json.dumps(json.loads(sample.read_text(encoding="utf-8")), ensure_ascii=False) + "\n" + "\n".join(
            describe(trace, i, lang) for i in range(len(trace)))
        found += [f"{sample.name}: …{text[max(0, m.start() - 30):m.end()]}" for m in ASCII_PERIOD.finditer(text)]
    assert not found, "\n".join(found)


def test_the_period_check_finds_an_ascii_period_after_cjk():
    assert ASCII_PERIOD.search("待ってから呼び直す.") and ASCII_PERIOD.search("然后重新调用. 下一步")
    assert not ASCII_PERIOD.search("notes.txt を読む。") and not ASCII_PERIOD.search("ファイル.txt") \
        and not ASCII_PERIOD.search("呼び直す…")


# The pages as the sidebar names them: another message that names a page names it the sidebar's way, so a link's
# words ("See this mistake in the Mistakes lab") match the page it opens.
PAGES = ["Step through", "Replay", "Mistakes lab", "Minimal beside complete", "Your loop", "About the loop"]


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_a_page_is_named_as_the_sidebar_names_it(lang):
    strings = {m.id: m.string for m in catalog(lang) if m.id}
    found = [f"{key!r} → {said!r} (say {strings[page]!r})" for page in PAGES if strings.get(page) not in (None, page)
             for key, said in strings.items() if key != page and isinstance(said, str) and page in said]
    assert not found, "\n".join(found)
