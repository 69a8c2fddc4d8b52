"""Find in a long trace: what to find (an error, a tool, a text), Previous and Next match with their keys, and a
strip of ticks where the matches are, drawn under the step slider and in the Find popover.

The matching is loop/views/find.py's, cached per (trace length, query): a jump is a bisection and a cursor move,
so it draws in the time a click on Step does. The keys move the cursor only, like Home, ←, → and End.
"""

from __future__ import annotations

import functools
from html import escape

import streamlit as st

from loop.engine.trace import Trace
from loop.text.catalogs import languages, say
from loop.views.find import ERRORS, KINDS, TEXT, TOOL, Query, matches, next_match, place, previous_match, tool_names

from .i18n import t, t_n

NEXT_KEY, PREVIOUS_KEY = "Alt+Down", "Alt+Up"
TICKS = 400  # at most this many ticks a strip: matches closer than 1/400 of the width share one


@functools.cache
def _said_in_any_language() -> dict[str, str]:
    """{a kind's words in any language: the kind}."""
    return {say(lang, words): kind for kind, words in KINDS.items() for lang in languages()}


def _kind_of(chosen: object) -> str | None:
    """The kind whose words `chosen` are, in any language: after a language switch the browser still holds the
    words it showed in the language before."""
    return _said_in_any_language().get(chosen) if isinstance(chosen, str) else None


def query_of(key: str) -> Query:
    """The query the Find popover of the `key` views holds (errors until another is chosen)."""
    kind = _kind_of(st.session_state.get(f"{key}-find-kind")) or ERRORS
    text = st.session_state.get(f"{key}-find-tool" if kind == TOOL else f"{key}-find-text") if kind != ERRORS else ""
    return Query(kind, str(text or ""))


def _jump(trace: Trace, key: str, forward: bool) -> None:
    found = matches(trace, query_of(key))
    to = next_match(found, trace.cursor) if forward else previous_match(found, trace.cursor)
    if to is not None:
        trace.goto(to)


def marks_html(trace: Trace, found: list[int], key: str, where: str) -> str:
    """A strip as wide as the slider, a tick at each match (and a taller one at the cursor): `where` names the
    strip's place ("slider", "find") in its id."""
    last = max(1, len(trace) - 1)
    ticks = sorted({round(i / last * TICKS) for i in found})
    spans = "".join(f'<span class="ls-find-tick" style="position:absolute;left:{k / TICKS * 100:.2f}%;top:0;'
                    f'width:2px;height:8px;background:#d33;"></span>' for k in ticks)
    cursor = (f'<span class="ls-find-cursor" style="position:absolute;left:{trace.cursor / last * 100:.2f}%;'
              f'top:-3px;width:2px;height:14px;background:#333;"></span>') if trace.cursor >= 0 else ""
    label = escape(t_n("{n} match", "{n} matches", len(found)))
    return (f'<div class="ls-find-marks" id="ls-find-marks-{where}-{key}" data-matches="{len(found)}" '
            f'data-ticks="{len(ticks)}" title="{label}" aria-label="{label}" '
            f'style="position:relative;height:10px;margin:2px 0 6px 0;background:#f0f2f6;border-radius:2px;">'
            f'{spans}{cursor}</div>')


def draw_slider_marks(trace: Trace, key: str) -> None:
    """The ticks under the step slider: where the query of the Find popover matches."""
    found = matches(trace, query_of(key))
    if found:
        st.html(marks_html(trace, found, key, "slider"))


def _count(found: list[int], cursor: int, query: Query) -> str:
    if query.empty:
        return t("Choose a tool or type a text to find.")
    if not found:
        return t("No match in this trace.")
    k = place(found, cursor)
    if k is None:
        return t_n("{n} match", "{n} matches", len(found))
    return t("Match {k} of {n}", k=int(k), n=len(found))


def _draw_query(trace: Trace, key: str) -> None:
    """What to find, and where it matches: the Find popover's content."""
    # The options are the words shown (not the kinds, through format_func): a test client sees them as they are.
    st.selectbox(t("Find"), [t(words) for words in KINDS.values()], key=f"{key}-find-kind")
    kind = query_of(key).kind
    if kind == TOOL:
        names = tool_names(trace)
        st.selectbox(t("Tool name"), names, key=f"{key}-find-tool", disabled=not names,
                     placeholder=t("No tool was run"))
    elif kind == TEXT:
        st.text_input(t("Text"), key=f"{key}-find-text", placeholder=t("a word, a path, an id…"))
    query = query_of(key)
    found = matches(trace, query)
    st.caption(_count(found, trace.cursor, query))  # the buttons show their keys themselves
    if found:
        st.html(marks_html(trace, found, key, "find"))


def _keep_query(key: str) -> None:
    """The query chosen stays while the popover is closed, and over a language switch: Streamlit forgets the value
    of a widget a run does not draw (or draws with another label), unless the page sets it itself; the kind is
    set again in this page's words."""
    for widget in (f"{key}-find-kind", f"{key}-find-tool", f"{key}-find-text"):
        if widget in st.session_state:
            st.session_state[widget] = st.session_state[widget]
    kind = _kind_of(st.session_state.get(f"{key}-find-kind"))
    if kind is not None:
        st.session_state[f"{key}-find-kind"] = t(KINDS[kind])


def draw_find(trace: Trace, key: str) -> None:
    """Find (a popover: what to find, where it matches) and Previous/Next match, in the row of buttons.

    Previous and Next match are drawn only while the query finds a step (the trace's errors until another query
    is chosen): the Find popover says when it finds none."""
    # Its content is drawn only while it is open: a cursor move would send its widgets again for nothing.
    _keep_query(key)  # before its widgets are drawn
    popover = st.popover(t("Find"), icon=":material/search:", key=f"{key}-find", on_change="rerun")
    with popover:
        if popover.open:
            _draw_query(trace, key)
    found = matches(trace, query_of(key))
    if not found:  # nothing to jump to: both would be disabled, their keys do nothing; a cursor move sends neither
        return
    st.button(t("Previous match"), key=f"{key}-find-previous", icon=":material/arrow_upward:",
              disabled=previous_match(found, trace.cursor) is None, shortcut=PREVIOUS_KEY,
              on_click=_jump, args=(trace, key, False), help=t("Jump to the previous step the Find query matches."))
    st.button(t("Next match"), key=f"{key}-find-next", icon=":material/arrow_downward:",
              disabled=next_match(found, trace.cursor) is None, shortcut=NEXT_KEY,
              on_click=_jump, args=(trace, key, True), help=t("Jump to the next step the Find query matches."))
