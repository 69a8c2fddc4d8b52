"""A trace as Markdown, readable in a course page: the task, each turn's messages, the pairs.

A Markdown file opened in a viewer is a page too: every name, id and reason from the file enters it as text
(`plain`, `inline_code`), and a message's own Markdown keeps its look but loses its images and raw HTML
(`no_fetch`), so opening an export fetches nothing a transcript names.
"""

from __future__ import annotations

import json
import re

from ..engine import rules
from ..text.catalogs import say
from ..engine.trace import Trace

# Escaped: what opens a link, an image, HTML, code, emphasis, LaTeX or a table's cell, and a colon before a name,
# which opens a directive (`:red[…]`, or `:red` alone). (A bare URL may still show as a link: Streamlit finds
# those in the text itself. A link is followed only when clicked; nothing is fetched.)
_SPECIAL = re.compile(r"([\\`*\[\]<$~|])|:(?=\w)")


def plain(text: object) -> str:
    """Any text (a file's name, a model id, a task, a server's error) as Markdown that shows it as it is: no link,
    image, HTML, directive (`:red[…]`), code, emphasis, LaTeX or table cell of its own. (A heading or a list mark
    at the start of a line still is one: only the look changes.)"""
    return _SPECIAL.sub(_escaped, str(text))


def _escaped(found: re.Match) -> str:
    return "\\" + (found.group(1) or ":")


def inline_code(text: object) -> str:
    """`text` as inline code, with a fence of backticks no run in it can close; one line."""
    text = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def no_fetch(markdown: str) -> str:
    """A model's Markdown with its images and raw HTML made text (`!\\[`, `\\<`), code left as it is."""
    out, fence = [], None
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:  # inside a fenced block: until a fence as long, of the same character
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
        elif opening:
            fence = opening.group(1)
        else:  # an indented line may be code, where a `\` shows: a look lost, never a request made
            pieces, last = [], 0
            for span in _SPAN.finditer(line):
                pieces.append(_unfetch(line[last:span.start()]) + span.group(0))
                last = span.end()
            line = "".join(pieces) + _unfetch(line[last:])
        out.append(line)
    return "\n".join(out)


def prose(text: object) -> str:
    """Like `plain`, but a `code span` in it stays code (a server's words quoting a field): one line."""
    line, pieces, last = " ".join(str(text).split()), [], 0
    for span in _SPAN.finditer(line):
        pieces.append(plain(line[last:span.start()]) + span.group(0))
        last = span.end()
    return "".join(pieces) + plain(line[last:])


def _unfetch(text: str) -> str:
    return text.replace("<", "\\<").replace("![", "!\\[")


def cell(markdown: str) -> str:
    """Markdown in a table's cell: a `|` even in code would end the cell (a value there is `cell(inline_code(v))`,
    or `plain(v)`, which escapes it already)."""
    return markdown.replace("|", "\\|")


def fenced(text: str, language: str = "") -> str:
    """`text` as a fenced code block whose fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _block(block: object, lang: str = "en") -> str:
    if not isinstance(block, dict):
        return fenced(json.dumps(block, ensure_ascii=False), "json")
    kind = block.get("type")
    if kind == "text":
        return no_fetch(str(block.get("text", "")))
    if kind == "tool_use":
        return (f"**tool_use** {inline_code(block.get('name'))} · id {inline_code(block.get('id'))}\n\n"
                + fenced(json.dumps(block.get("input"), ensure_ascii=False, indent=1), "json"))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", b)) if isinstance(b, dict) else str(b) for b in content)
        flag = " · **is_error**" if block.get("is_error") else ""
        head = say(lang, "**tool_result** for `{id}`", id="\0").replace("`\0`", inline_code(block.get("tool_use_id")))
        return f"{head}{flag}\n\n" + fenced(str(content or ""))
    return say(lang, "**{kind}** (shown raw)", kind=plain(kind)) + "\n\n" + \
        fenced(json.dumps(block, ensure_ascii=False, indent=1), "json")


def to_markdown(trace: Trace, upto: int | None = None, lang: str = "en") -> str:
    """The history up to step `upto` (default: the whole trace) as Markdown, its headings in `lang`."""
    index = len(trace.steps) - 1 if upto is None else upto
    messages = trace.messages_at(index) if index >= 0 else []
    step = trace.steps[index] if index >= 0 else None
    meta = trace.meta
    scripted = " " + say(lang, "(scripted, offline)") if meta.get("scripted") else ""
    task = meta.get("task") if isinstance(meta.get("task"), str) else ""  # a hostile file's task may be anything
    out = ["# " + (plain(" ".join(task.split())) or say(lang, "Agent loop transcript")), "",
           f"- model: {inline_code(meta.get('model'))}{scripted}",
           "- " + say(lang, "steps: {k} of {n}", k=index + 1, n=len(trace.steps))]
    thread = trace.thread_of(index)
    if trace.has_threads:  # whose history this is: the main loop's or a sub-agent's
        out += [f"- thread: {inline_code(thread.id)}"
                + (f" ← {inline_code(thread.parent_tool_use_id)}" if thread.parent_tool_use_id else "")]
    if step:
        out += [f"- turn_count: {step.turn_count}", f"- transition_reason: {plain(step.transition_reason)}",
                f"- stop_reason: {plain(step.stop_reason)}",
                "- " + say(lang, "ended: {reason}", reason=plain(step.ended) if step.ended else say(lang, "not yet"))]
    system = meta.get("system") if thread.is_main else thread.system
    if system:
        out += ["", "## " + say(lang, "System prompt"), "", fenced(str(system))]
    out += ["", "## messages", ""]
    for i, message in enumerate(messages):
        out += [f"### {i}. {plain(message.get('role'))}", ""]
        for block in rules.blocks(message):
            out += [_block(block, lang), ""]
    pairs = rules.pairs(messages)
    if pairs:
        out += ["## " + say(lang, "tool_use / tool_result pairs"), "",
                "| id | " + say(lang, "tool") + " | " + say(lang, "status") + " | is_error |", "| --- | --- | --- | --- |"]
        out += [f"| {cell(inline_code(p.tool_use_id))} | {plain(p.name or '')} | {say(lang, p.status)} | {p.is_error} |"
                for p in pairs]
    return "\n".join(out).rstrip() + "\n"
