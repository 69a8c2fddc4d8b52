"""Read what a page draws as HTML (the history, the Pairs and LoopState tables, the diagram) back as a reader sees it."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pandas as pd

VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "area", "base", "source", "track"}


class _Reader(HTMLParser):
    """Text and tables of an HTML fragment; `skip` names classes (and tags) whose text is left out."""

    def __init__(self, skip: set[str]):
        super().__init__(convert_charrefs=True)
        self.skip = skip
        self.stack: list[bool] = []  # for each open element: is it (or an ancestor) skipped?
        self.text: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def _skipped(self) -> bool:
        return bool(self.stack and self.stack[-1])

    def handle_starttag(self, tag, attrs):
        classes = set((dict(attrs).get("class") or "").split())
        skipped = self._skipped() or tag in ("script", "style") or bool(classes & self.skip) or tag in self.skip
        if tag not in VOID:
            self.stack.append(skipped)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []
            if not skipped:
                self.text.append(" ")
        elif tag in ("p", "div", "br", "li", "h4", "tr", "pre") and not skipped:
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self._skipped():
            return
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)


def read(body: str, skip: set[str] = frozenset({"ls-cn"})) -> _Reader:
    reader = _Reader(set(skip))
    reader.feed(body)
    return reader


def html_text(body: str, skip: set[str] = frozenset()) -> str:
    """The text of an HTML fragment, scripts and styles left out (and elements of a class in `skip`)."""
    return re.sub(r"[ \t]+", " ", "".join(read(body, set(skip)).text)).strip()


def html_bodies(at) -> list[str]:
    """The body of every st.html element the page drew, in page order."""
    return [el.proto.body for el in at.get("html")]


def words(at) -> str:
    """The line beside the buttons (what comes next), as the reader sees it."""
    return next(html_text(b) for b in html_bodies(at) if 'class="ls-words"' in b)


def page_text(at) -> str:
    """Everything the page says in Markdown and in HTML elements, as text (for `in` checks)."""
    return "\n".join([m.value for m in at.markdown] + [html_text(b) for b in html_bodies(at)])


def parse(body: str) -> pd.DataFrame | None:
    """The first table in an HTML fragment (every cell as the text shown), or None when it holds none."""
    tables = [t for t in read(body).tables if t]
    if not tables:
        return None
    head, *rows = tables[0]
    return pd.DataFrame(rows, columns=head)


def table(at, column: str) -> pd.DataFrame:
    """The table on the page that has `column` (Pairs: 'status'; LoopState: 'stage'; now: 'turn_count')."""
    for body in html_bodies(at):
        for found in read(body).tables:
            if found and column in found[0]:
                return pd.DataFrame(found[1:], columns=found[0])
    raise AssertionError(f"no table with a {column!r} column")


def diagram_svg(at) -> str:
    """The SVG of the loop diagram the page drew (a script puts it in place: see pages/views/step.py)."""
    for body in html_bodies(at):
        match = re.search(r'innerHTML = ("(?:[^"\\]|\\.)*");', body)
        if match and "ls-diagram" in body:
            return json.loads(match.group(1))
    raise AssertionError("no diagram on the page")


def history_roles(at) -> list[str]:
    """The role of each message the history panel draws, in order (its cards, not what waits outside)."""
    for body in html_bodies(at):
        if 'class="ls-history"' in body:
            return re.findall(r'<div class="ls-msg ls-(user|assistant)[^"]*" data-index="\d+"', body)
    return []


def history_text(at) -> str:
    """The history panel's text (messages, then what waits outside them)."""
    return "\n".join(html_text(b) for b in html_bodies(at) if 'class="ls-history"' in b)


def history_indexes(at) -> list[int]:
    """The index in messages of each card the history panel draws."""
    for body in html_bodies(at):
        if 'class="ls-history"' in body:
            return [int(i) for i in re.findall(r'<div class="ls-msg [^"]*" data-index="(\d+)"', body)]
    return []


def plain(markdown: str) -> str:
    """Markdown as the reader sees it: rendered, then its text (no ** or backticks), on one line."""
    from pages.views.blocks import markdown_html

    return " ".join(html_text(markdown_html(markdown)).split())


def note_text(at) -> str:
    """The stage note beside the diagram, as its text on one line."""
    for body in html_bodies(at):
        found = re.search(r'<div class="ls-note"[^>]*>(.*?)</div>', body, re.S)
        if found:
            return " ".join(html_text(found.group(1)).split())
    return ""
