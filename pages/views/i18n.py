"""The interface's words in the learner's language: `t("First")` in the language chosen.

A message is the English text itself (the gettext way), so a view reads as it
did and a missing translation falls back to English (the no-English-left tests
with ja and zh find those). The translations are gettext catalogs,
`locales/<lang>/LC_MESSAGES/loopscope.po`, read by `loop.text.catalogs`; README.md
says how to add a string or a language. The Japanese keeps the chapter's terms
in Latin letters as the chapter does: messages, tool_use, tool_result, turn,
write-back, loop. The language comes from the sidebar or `?lang=`, and is kept
in the URL.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata

import streamlit as st

from loop.text.catalogs import known, languages, say, say_n

from .script_run import token

LANG = "lang"
CHOICES = "lang-choices"  # the keys of the widgets whose options are words in the language (`choice`)
# The document's language, as a browser picks its fonts by it: a page in Chinese marked English (Streamlit's own
# <html lang="en">) is drawn with Japanese glyph forms (Noto Sans CJK JP), and a screen reader reads it as English.
DOCUMENT_LANG = {"zh": "zh-CN"}


_RUN = threading.local()  # (this run's marker, the language): each script thread its own


def lang() -> str:
    """The language chosen: en, or one with a catalog (ja, zh, …).

    Read from the session once a run: a page asks a few dozen times a click, and each read of the session state
    takes the session's lock. A run changes it only in `follow_url`, which says so.
    """
    run = token()
    if run is None:  # outside a run of the page or of a fragment (a widget's callback or format_func may be there)
        return known(st.session_state.get(LANG))
    kept = getattr(_RUN, "kept", None)
    if kept is not None and kept[0] is run:  # each run (a fragment's too) has a token of its own
        return kept[1]
    chosen = known(st.session_state.get(LANG))
    _RUN.kept = (run, chosen)
    return chosen


def _changed() -> None:
    """The session's language was set during this run: read it again."""
    _RUN.kept = None


def t(text: str, _in: str | None = None, **values) -> str:
    """`text` in the chosen language (or `_in`), with `values` filled in; English when there is no translation.

    A widget's format_func passes `_in`: it may be called outside the script run, where the session is not known.
    """
    return say(_in or lang(), text, **values)


def t_n(singular: str, plural: str, n: int, **values) -> str:
    """The form of a message for the number `n` in the chosen language (`n` is also a value to fill in)."""
    return say_n(lang(), singular, plural, n, **values)


def stage_title(stage: str | None) -> str:
    from loop.engine.trace import STAGE_TITLES

    return t(STAGE_TITLES.get(stage or "", stage or ""))


def follow_url() -> None:
    """Take `?lang=` from the URL, and keep a chosen language in it (a page change drops the URL's parameters)."""
    given = st.query_params.get(LANG)
    if given in languages() and given != st.session_state.get(LANG):
        st.session_state[LANG] = given
        _changed()
    chosen = lang()
    if chosen != "en" and given != chosen:
        st.query_params[LANG] = chosen


def choice(key: str) -> str:
    """`key`, for a radio, select box or segmented control whose options are drawn in the chosen language.

    The browser holds such a widget's value as the words it shows, and sends them back with the next click. After
    a language switch those are the old language's words, which the new options do not have: the browser would
    show nothing chosen, and its next click would send a choice the page cannot read (or reads as another option).
    So the switch gives each such widget its value again (`_chosen`), and the page sends it in the new words.
    """
    st.session_state.setdefault(CHOICES, set()).add(key)
    return key


def _choices_again() -> None:
    """Each choice drawn in words is set again, to the value the browser's old words meant (read by the widget of
    the last run, in the language it was drawn in), before any widget of this run is drawn."""
    s = st.session_state
    for key in s.get(CHOICES, ()):
        if key in s:  # (a widget of a page not shown keeps its value elsewhere: see keep.py)
            s[key] = s[key]


def _chosen() -> None:
    _choices_again()
    if lang() == "en":
        st.query_params.pop(LANG, None)
    else:
        st.query_params[LANG] = lang()


def draw_language_picker() -> None:
    """The language switch, at the bottom of the sidebar on every page."""
    if LANG not in st.session_state:
        st.session_state[LANG] = "en"
        _changed()
    names = languages()
    with st.sidebar:
        st.segmented_control(t("Language"), list(names), key=LANG, format_func=names.get,
                             on_change=_chosen, selection_mode="single")


UPRIGHT = """<style>
[data-testid="stCode"] .token.comment, [data-testid="stMarkdownContainer"] em, [data-testid="stHtml"] em {
  font-style: normal !important; }
</style>"""


def document_language() -> None:
    """Mark the page's document with the page's language (`<html lang>`), at every run: the picker changes it."""
    tag = DOCUMENT_LANG.get(lang(), lang())
    with st.sidebar:  # an element of no height: the script only sets the attribute
        st.html(f"<script>document.documentElement.lang = {json.dumps(tag)};</script>", unsafe_allow_javascript=True)


def upright_cjk() -> None:
    """No italics in a language written in Chinese characters, kana or hangul: a browser slants them.

    Code comments (the highlighter sets them italic) and emphasis stay upright.
    """
    name = languages().get(lang(), "")
    if any(unicodedata.east_asian_width(c) in "WF" for c in name):
        st.markdown(UPRIGHT, unsafe_allow_html=True)


_COMMENT = re.compile(r"(#\s*)(.+)$", re.MULTILINE)


def commented(code: str, _in: str | None = None) -> str:
    """Python `code` with each end-of-line comment in the chosen language (the code itself stays as it is).

    A comment is a message of its own: mark it with `N_` where the code is written.
    """
    return _COMMENT.sub(lambda m: m.group(1) + t(m.group(2).rstrip(), _in), code)
