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


_SPECIAL = re.compile(r"([\\`*\[\]<$~])")
_IMAGE = re.compile(r"!(?=\[)")


def plain(text: object) -> str:
    """Any text (a file's name, a model id, a task, a server's error) as Markdown that shows it as it is: no link,
    image, HTML, directive (`:red[…]`), code, emphasis or LaTeX of its own. (A heading or a list mark at the start
    of a line still is one: only the look changes.)"""
    return _SPECIAL.sub(r"\\\1", str(text))


def in_code(text: object) -> str:
    """Text to put between single backticks: one line, its own backticks turned into ˋ (a code span ends at one)."""
    return " ".join(str(text).split()).replace("`", "ˋ")


def inline_code(text: object) -> str:
    """`text` as inline code, with a fence of backticks no run in it can close; one line."""
    text = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _no_images(markdown: str) -> str:
    """A model's or a file's Markdown with its images made links (`![alt](url)` → `!` + a link to url):
    no viewer's browser fetches a URL a transcript names. Code (fenced, indented or inline) is left as is:
    an image there is text already."""
    out, fence = [], None
    for line in markdown.split("\n"):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
        elif fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip()[len(match.group(1)):]:
                fence = None
        elif "![" in line:
            # outside code spans: split on backtick runs; a run opens a span closed by the next run of its length
            parts = re.split(r"(`+)", line)
            opened = None
            for i, part in enumerate(parts):
                if part.startswith("`"):
                    opened = None if opened == part else (opened or part)
                elif opened is None:
                    parts[i] = _IMAGE.sub(r"\\!", part)
            line = "".join(parts)
        out.append(line)
    return "\n".join(out)


def _markdown_text(text: str) -> str:
    # A "$" in a model's answer is money, not LaTeX; an image is a link, never fetched.
    return _no_images(_cut(text).replace("$", "\\$"))


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
        return (f":material/build: **tool_use** {inline_code(block.get('name'))} {id_badge(block.get('id'))}\n\n"
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
