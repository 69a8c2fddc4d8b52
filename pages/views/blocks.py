"""One content block, drawn by its type. Nothing is dropped: an unknown type is shown raw."""

from __future__ import annotations

import json
import re

import streamlit as st

from loop.export import fenced
from loop.views import id_colour, result_text

from .i18n import t

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
TEXT_LIMIT = 4000  # characters drawn of one block; the Raw view has all of it


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n" + t("… {n} more characters (see Raw)", n=f"{len(text) - limit:,}")


def id_badge(tool_use_id: object) -> str:
    """Markdown for an id in its colour, the same colour as in the Pairs table."""
    safe = str(tool_use_id).replace("[", "(").replace("]", ")")
    return f":{id_colour(tool_use_id)}-badge[{safe}]"


def _markdown_text(text: str) -> str:
    # A "$" in a model's answer is money, not LaTeX.
    return _cut(text).replace("$", "\\$")


def _closed(markdown: str) -> str:
    """A model's Markdown with a code fence it left open closed, so it cannot swallow the blocks after it."""
    open_fence = None
    for line in markdown.splitlines():
        match = FENCE.match(line)
        if not match:
            continue
        fence = match.group(1)
        if open_fence is None:
            open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not line.strip()[len(fence):]:
            open_fence = None
    return markdown if open_fence is None else f"{markdown}\n{open_fence}"


def block_markdown(block: object) -> str:
    """One block of a message's content as Markdown."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return _closed(_markdown_text(str(block.get("text", ""))))
    if kind == "tool_use":
        return (f":material/build: **tool_use** `{block.get('name')}` {id_badge(block.get('id'))}\n\n"
                + fenced(json.dumps(block.get("input"), indent=2, ensure_ascii=False), "json"))
    if kind == "tool_result":
        error = " :red-badge[:material/error: is_error]" if block.get("is_error") else ""
        return (t(":material/output: **tool_result** for {badge}", badge=id_badge(block.get("tool_use_id"))) + error
                + "\n\n" + fenced(_cut(result_text(block.get("content"))) or " "))
    label = kind if isinstance(kind, str) else type(block).__name__
    return (":gray[" + t("**{kind}** block, shown raw", kind=label.replace("]", ")")) + "]\n\n"
            + fenced(_cut(json.dumps(block, indent=2, ensure_ascii=False, default=str)), "json"))


def content_markdown(content: object) -> str:
    """A message's content as one Markdown text: a string is one text block, a list is its blocks in order."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else \
        content if isinstance(content, list) else [content]
    return "\n\n".join(block_markdown(block) for block in blocks)


def draw_content(content: object, head: str = "") -> None:
    """A message's content under `head`, as ONE element: a click redraws a window of messages, and the
    browser's work grows with the number of elements, not with the text in them."""
    st.markdown((head + "\n\n" if head else "") + content_markdown(content))
