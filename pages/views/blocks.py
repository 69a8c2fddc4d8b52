"""Content blocks as HTML, by their type. Nothing is dropped: an unknown type is shown raw.

The history is drawn as HTML made here, not as Streamlit Markdown: a click
redraws a window of a dozen messages, and HTML the browser only has to insert
costs it a fraction of what parsing Markdown and highlighting code does, on
every click. A model's text is still Markdown: it is rendered here by a
CommonMark parser with raw HTML off, so whatever a model or a tool printed is
shown as text, never run (the page sanitises the HTML once more).

Everything that is data (the model's words, commands, tool output, ids) sits in
an element of class `ls-data`; the rest is interface text in the page's language.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from contextvars import ContextVar
from html import escape

import streamlit as st
from markdown_it import MarkdownIt

# The one way a page puts a value in Markdown (st.markdown, st.caption, the alerts): `plain(value)`, or
# `inline_code(value)` for the look of code, `cell(…)` around it in a table's cell; else a number.
# tests/test_hardening_markdown.py reads pages/ and fails on a value that enters Markdown any other way.
from loop.files.export import cell, inline_code, plain  # noqa: F401 (the pages' Markdown escapes are the exports')
from loop.text.catalogs import Note
from loop.views.parts import id_colour, result_text

from .i18n import t

TEXT_LIMIT = 4000  # characters drawn of one block; the Raw view has all of it
# Raw HTML off (shown as text) and images off: `![alt](url)` is "!" and a link, so no viewer's browser ever
# fetches a URL a transcript names.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": False}).enable("table").disable("image")

# The id colours (loop.views.parts.ID_COLOURS) and red, kept for is_error: (background, text)
PALETTE = {
    "blue": ("#e7f1fc", "#0b5cad"), "green": ("#e3f4e8", "#1b6e30"), "orange": ("#fff0dc", "#a34f00"),
    "violet": ("#f1eafc", "#6236a8"), "yellow": ("#fbf3cf", "#7a5d00"), "gray": ("#eceff2", "#3f474f"),
    "red": ("#fde8e8", "#b42323"),
}

CSS = """<style>
/* a projector's 800 px: the page starts just under Streamlit's toolbar (not 6rem down), and the title is a size
   smaller, so the stage's note comes on the first screen (presenter mode sets its own) */
[data-testid="stMainBlockContainer"] { padding-top: 3.75rem !important; }
.st-key-title-row h1 { font-size: 2.25rem; padding: 0.75rem 0 0.5rem; }
.ls-grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem 3rem; }
.ls-grid.ls-present { grid-template-columns: minmax(0, 1.05fr) minmax(0, 1fr); gap: 0.5rem 1.2rem; }
/* the complete loop's picture is a column wider: on a projector its stages keep the note's size */
.ls-grid.ls-present.ls-wide { grid-template-columns: minmax(0, 1.2fr) minmax(0, 1fr); }
/* and beside the history too: its stages' text stays readable (the history's text wraps, it does not shrink) */
.ls-grid:not(.ls-present):has(.ls-diagram.ls-complete) {
  grid-template-columns: minmax(0, 1.25fr) minmax(0, 1fr); gap: 1rem 2rem; }
@media (max-width: 760px) { .ls-grid, .ls-grid.ls-present, .ls-grid.ls-present.ls-wide { grid-template-columns: minmax(0, 1fr); } }
.ls-empty { border-radius: 0.5rem; background: rgba(28,131,225,0.1); color: #004280; padding: 0.8rem 1rem 0.1rem; }
.ls-h4 { font-size: 1.5rem; font-weight: 600; margin: 0; padding: 0.5rem 0 0.3rem; line-height: 1.2; }
.ls-caption { color: rgba(49,51,63,0.6); font-size: 0.875rem; margin: 0 0 0.5rem; }
/* bottom-up: the panel opens at its newest message with no script; a short history still starts at the top */
.ls-panel { overflow-y: auto; overscroll-behavior: contain; display: flex; flex-direction: column-reverse; }
.ls-panel > .ls-history { margin-bottom: auto; }
.ls-panel.ls-panel-compact { display: block; }  /* before and after a compaction, read top-down */
.ls-compact { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 0.3rem 0.8rem; }
.ls-compact p { margin: 0 0 0.3rem; }
.ls-history { font-size: 0.95rem; }
.ls-msg { border: 1px solid rgba(49,51,63,0.12); border-radius: 0.6rem; padding: 0.45rem 0.75rem 0.2rem;
          margin: 0 0 0.6rem 0; background: #fff; }
.ls-msg.ls-user { background: rgba(240,242,246,0.55); }
.ls-msg.ls-new { border: 2px solid #ff9a3c; }
.ls-head { font-size: 0.85rem; color: #555867; margin-bottom: 0.25rem; display: flex; flex-wrap: wrap;
           gap: 0.15rem 0.45rem; align-items: baseline; }
.ls-role { font-weight: 700; color: #31333f; }
.ls-role::before { content: ""; display: inline-block; width: 0.6rem; height: 0.6rem; border-radius: 50%;
                   margin-right: 0.3rem; background: #ff4b4b; }
.ls-assistant .ls-role::before { background: #ffa421; }
/* a harness's system turn among the messages (Claude Code's environment block): not the person's, drawn apart */
.ls-msg.ls-system { background: #f6f7f9; border-style: dashed; }
.ls-system .ls-role::before { background: #868e96; }
.ls-mark { font-weight: 700; color: #d9480f; }
.ls-mark.ls-held { color: #1c7ed6; }
.ls-history code, .ls-table code { font-size: 0.85em; background: rgba(151,166,195,0.15); padding: 0.05em 0.3em;
                                   border-radius: 0.25rem; }
.ls-history pre { background: #f6f7f9; border-radius: 0.4rem; padding: 0.5rem 0.7rem; margin: 0.25rem 0 0.5rem;
                  white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.82rem; line-height: 1.4; }
.ls-history pre code { background: none; padding: 0; font-size: inherit; }
/* a word longer than the card (a JSON string, a path) breaks rather than runs out of its column */
.ls-text { overflow-wrap: anywhere; }
.ls-text p { margin: 0 0 0.45rem; } .ls-text ul, .ls-text ol { margin: 0 0 0.45rem 1.2rem; padding: 0; }
.ls-block { margin: 0.3rem 0 0.35rem; }
.ls-bh { font-size: 0.9rem; display: flex; flex-wrap: wrap; gap: 0.15rem 0.4rem; align-items: baseline; }
.ls-badge { display: inline-block; border-radius: 0.35rem; padding: 0 0.4em; font-size: 0.8rem;
            font-family: "Source Code Pro", monospace; overflow-wrap: anywhere; }
.ls-error > pre { background: #fff5f5; border-left: 3px solid #e03131; }
.ls-focus { outline: 3px solid #e8590c; outline-offset: 3px; border-radius: 0.4rem; }
.ls-msg.ls-new.ls-focus { outline: none; }
.ls-callout { background: #fff4e6; border-left: 4px solid #e8590c; border-radius: 0.3rem;
              padding: 0.35rem 0.6rem; margin: 0.35rem 0 0.4rem; font-size: 0.9rem; }
.ls-card { border: 1px dashed #1c7ed6; border-radius: 0.6rem; padding: 0.45rem 0.75rem 0.2rem;
           margin: 0.2rem 0 0.6rem; }
.ls-card-head { font-weight: 700; }
.ls-card-caption { color: #6b6f7b; font-size: 0.85rem; margin: 0.1rem 0 0.3rem; }
.ls-raw { color: #6b6f7b; }
.ls-table { border-collapse: collapse; font-size: 0.88rem; margin: 0.2rem 0 0.8rem; }
.ls-table th, .ls-table td { border: 1px solid rgba(49,51,63,0.14); padding: 0.2rem 0.5rem; text-align: left;
                             vertical-align: top; white-space: nowrap; }
.ls-table td:has(.ls-data) { white-space: normal; overflow-wrap: anywhere; min-width: 8rem; }
.ls-table th { background: rgba(240,242,246,0.8); font-weight: 600; }
.ls-table tr.ls-now td { background: #fff4e6; font-weight: 700; }
.ls-table .ls-cn { display: block; font-weight: 400; font-size: 0.78rem; color: #6b6f7b; }
/* The LoopState steps fit their column at 1280 px: names wrap (at an underscore too), not the table past its edge */
.ls-table th.ls-wraps, .ls-table[data-table="steps"] .ls-cn { white-space: normal; }
.ls-table th.ls-tokens { min-width: 5.5rem; }  /* a long name over short numbers, on two lines */
.ls-wrap { overflow-x: auto; }
.ls-apart { margin-top: 1rem; }  /* the LoopState under the Pairs table, in the same element */
.ls-rule { border: none; border-top: 1px solid rgba(49,51,63,0.2); margin: 1.5rem 0 0.5rem; }
.ls-said, .ls-words p { margin: 0; }
.stElementContainer:has(> .stHtml > .ls-ahead) { display: none; }  /* the steps beside the cursor: data */
.ls-said::before { content: "lightbulb" / ""; display: inline-block; font-family: "Material Symbols Rounded";
                  font-weight: 400; user-select: none; vertical-align: bottom; margin-right: 0.25em; }
.ls-note { border: 1px solid rgba(49,51,63,0.2); border-radius: 0.5rem; padding: 0.7rem 1rem 0.2rem; margin: 0 0 0.8rem; }
.ls-note p { margin: 0 0 0.6rem; }
.ls-note code { font-size: 0.85em; background: rgba(151,166,195,0.15); padding: 0.05em 0.3em; border-radius: 0.25rem; }
.ls-state-row { display: flex; flex-wrap: wrap; gap: 0.2rem 1.3rem; align-items: baseline; font-size: 1.05rem;
                padding: 0.25rem 0.7rem; border: 1px solid rgba(49,51,63,0.14); border-radius: 0.5rem;
                background: rgba(240,242,246,0.6); }
.ls-state-row .ls-state-name { font-weight: 700; }
.ls-state-row .ls-cn { display: none; }
/* the request a call sent: its head (system, tools, max_tokens) over its messages, the ones new since the last call
   marked */
.ls-request { display: flex; flex-wrap: wrap; gap: 0.2rem 0.9rem; align-items: baseline; font-size: 0.88rem;
              color: #31333f; border: 1px solid rgba(49,51,63,0.14); border-radius: 0.5rem; margin: 0 0 0.4rem;
              background: rgba(240,242,246,0.6); padding: 0.3rem 0.6rem; min-width: 0; }
.ls-request code { font-size: 0.85em; background: rgba(151,166,195,0.18); padding: 0.05em 0.3em; border-radius: 0.25rem;
                   margin-right: 0.25rem; }
.ls-req-part b { font-weight: 600; margin-right: 0.2rem; }
.ls-request details.ls-req-system { flex: 1 1 100%; min-width: 0; }
.ls-request details.ls-req-system summary { cursor: pointer; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.ls-request details.ls-req-system[open] summary { white-space: normal; }
.ls-request details.ls-req-system pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.82rem;
                                        background: #f6f7f9; border-radius: 0.4rem; padding: 0.4rem 0.6rem;
                                        margin: 0.25rem 0; max-height: 12rem; overflow-y: auto; }
/* presenter mode: one line, the system prompt's start ellipsed, so the messages keep the room */
.ls-request.ls-one-line { flex-wrap: nowrap; white-space: nowrap; overflow: hidden; font-size: 1.05rem;
                          padding: 0.1rem 0.6rem; margin: 0 0 0.25rem; line-height: 1.35; }
.ls-request.ls-one-line .ls-req-part { flex: none; }
.ls-request.ls-one-line .ls-req-system { flex: 1 1 auto; min-width: 0; overflow: hidden; text-overflow: ellipsis; }
.ls-panel-head .ls-request.ls-one-line { flex: 1 1 0; min-width: 0; margin: 0; padding: 0 0.5rem; line-height: 1.3; }
.ls-msg.ls-since { border-left: 5px solid #ff9a3c; }
</style>"""


_VALUE = re.compile("(`?)\ue000(\\d+)\ue001\\1")  # a Note's value, marked while it is said (note_markdown)


def note_markdown(note: Note, language: str) -> str:
    """`note` as Markdown in `language`, each of its values (a learner's name, a command, an exception's message)
    drawn as the text it is: `inline_code` where the message sets the value in backticks, else `plain`. For the
    values it quotes, the Markdown is the message's own, so it looks as it always did."""
    values: list[object] = []

    def mark(value: object) -> str:
        values.append(value)
        return f"\ue000{len(values) - 1}\ue001"

    def put(found: re.Match) -> str:
        value = values[int(found.group(2))]
        return inline_code(value) if found.group(1) else plain(value)

    return _VALUE.sub(put, note.render(language, data=mark))


def in_code(text: object) -> str:
    """Text to put between single backticks: one line, its own backticks turned into ˋ (a code span ends at one)."""
    return " ".join(str(text).split()).replace("`", "ˋ")


class Ready(str):
    """HTML made here, for `st.html` to take as it is.

    `st.html` dedents a string line by line before it sends it: a millisecond of the server's time a click for
    the views and the steps drawn ahead, which start at their first column anyway. A body that draws itself
    (`_repr_html_`) is sent as given.
    """

    def _repr_html_(self) -> str:
        return str(self)


def draw_style() -> None:
    """The stylesheet of the HTML views, once a page run (outside the step's fragment).

    Kept out of the views themselves: a stylesheet put into the page again on every click would make
    the browser restyle the whole document each time.
    """
    st.html(CSS)


def badge(text: object, colour: str) -> str:
    """A coloured badge, as the history and the tables draw an id."""
    bg, fg = PALETTE.get(colour, PALETTE["gray"])
    return f'<span class="ls-badge ls-data" style="background:{bg};color:{fg}">{escape(str(text))}</span>'


# The colours of the ids one step draws (its Pairs rows': loop.views.parts.screen_colours), so that the history
# paints an id as the table beside it does; an id not among them takes its own colour.
_COLOURS: ContextVar[dict[str, str]] = ContextVar("ls_id_colours", default={})


@contextlib.contextmanager
def id_colours(colours: dict[str, str]):
    """Draw the ids in `colours` (id -> colour) in those colours while inside."""
    token = _COLOURS.set(colours)
    try:
        yield
    finally:
        _COLOURS.reset(token)


def id_badge(tool_use_id: object) -> str:
    """An id in its colour, the same colour in the history and in the Pairs table."""
    return badge(tool_use_id, _COLOURS.get().get(str(tool_use_id)) or id_colour(tool_use_id))


def error_badge(text: str = "is_error") -> str:
    bg, fg = PALETTE["red"]
    return f'<span class="ls-badge" style="background:{bg};color:{fg}">{escape(text)}</span>'


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n" + t("… {n} more characters (see Raw)", n=f"{len(text) - limit:,}")


def pre(text: str) -> str:
    """Text shown exactly as it is, in a block that wraps."""
    return f'<pre class="ls-data">{escape(text) or " "}</pre>'


def markdown_html(text: str) -> str:
    """A model's Markdown as HTML: raw HTML in it is shown as text, a fence it left open ends with the block."""
    return _rendered(_cut(text))


@functools.lru_cache(maxsize=1024)  # at most TEXT_LIMIT characters each: a few MB at most
def _rendered(markdown: str) -> str:
    # A message never changes once written, and every click draws the same window of them again:
    # parsing each text once, not once a click, was a fifth of the server's time for a click.
    return _MARKDOWN.render(markdown)


def input_text(value: object) -> str:
    """A tool_use's input as JSON, once: an input a log kept as a string of JSON is that JSON, not a JSON string of
    it (its quotes and newlines escaped a second time); any other string is shown as it is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # not JSON (a log's raw arguments), or too deep to read: its own text
            return value
        if not isinstance(value, (dict, list)):
            return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def block_html(block: object, *, focus: bool = False, callout: str = "") -> str:
    """One block of a message's content; `focus` rings it, `callout` (HTML) is a note drawn under it."""
    kind = block.get("type") if isinstance(block, dict) else None
    classes = "ls-block" + (" ls-focus" if focus else "")
    if kind == "text":
        return f'<div class="{classes} ls-text ls-data">{markdown_html(str(block.get("text", "")))}</div>{callout}'
    if kind == "tool_use":
        return (f'<div class="{classes}"><div class="ls-bh"><b>tool_use</b> <code class="ls-data">'
                f'{escape(str(block.get("name")))}</code> {id_badge(block.get("id"))}</div>'
                + pre(input_text(block.get("input"))) + f"</div>{callout}")
    if kind == "tool_result":
        error = " " + error_badge() if block.get("is_error") else ""
        classes += " ls-error" if block.get("is_error") else ""
        head = t("**tool_result** for {badge}", badge=id_badge(block.get("tool_use_id")))
        head = head.replace("**tool_result**", "<b>tool_result</b>")
        return (f'<div class="{classes}"><div class="ls-bh">{head}{error}</div>'
                + pre(_cut(result_text(block.get("content")))) + f"{callout}</div>")
    label = kind if isinstance(kind, str) else type(block).__name__
    shown = t("**{kind}** block, shown raw", kind="\0").replace("**", "")
    before, _, after = shown.partition("\0")
    return (f'<div class="{classes}"><div class="ls-bh ls-raw">{escape(before)}<b class="ls-data">{escape(label)}</b>'
            f'{escape(after)}</div>' + pre(_cut(json.dumps(block, indent=2, ensure_ascii=False, default=str)))
            + f"</div>{callout}")


def content_blocks(content: object) -> list:
    """A message's content as a list of blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else [content]


def content_html(content: object, *, focus: set[int] = frozenset(), callouts: dict[int, str] | None = None) -> str:
    """A message's content as HTML, block by block; blocks in `focus` are ringed, `callouts` go under blocks."""
    callouts = callouts or {}
    return "".join(block_html(b, focus=j in focus, callout=callouts.get(j, ""))
                   for j, b in enumerate(content_blocks(content)))
