"""One content block, drawn by its type. Nothing is dropped: an unknown type is shown raw."""

from __future__ import annotations

import json

import streamlit as st

from loop.views import id_colour, result_text

from .i18n import t

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


def draw_block(block: object) -> None:
    """Draw one block of a message's content."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        st.markdown(_markdown_text(str(block.get("text", ""))))
    elif kind == "tool_use":
        st.markdown(f":material/build: **tool_use** `{block.get('name')}` {id_badge(block.get('id'))}")
        st.code(json.dumps(block.get("input"), indent=2, ensure_ascii=False), language="json")
    elif kind == "tool_result":
        error = " :red-badge[:material/error: is_error]" if block.get("is_error") else ""
        st.markdown(t(":material/output: **tool_result** for {badge}", badge=id_badge(block.get("tool_use_id"))) + error)
        st.code(_cut(result_text(block.get("content"))) or " ", language=None)
    else:
        label = kind if isinstance(kind, str) else type(block).__name__
        st.caption(t("**{kind}** block, shown raw", kind=label))
        st.code(_cut(json.dumps(block, indent=2, ensure_ascii=False, default=str)), language="json")


def draw_content(content: object) -> None:
    """A message's content: a string is one text block, a list is drawn block by block."""
    if isinstance(content, str):
        draw_block({"type": "text", "text": content})
    elif isinstance(content, list):
        for block in content:
            draw_block(block)
    else:
        draw_block(content)
