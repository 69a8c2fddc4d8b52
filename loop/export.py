"""A trace as Markdown, readable in a course page: the task, each turn's messages, the pairs."""

from __future__ import annotations

import json
import re

from . import rules
from .catalogs import say
from .trace import Trace


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
        return str(block.get("text", ""))
    if kind == "tool_use":
        return (f"**tool_use** `{block.get('name')}` · id `{block.get('id')}`\n\n"
                + fenced(json.dumps(block.get("input"), ensure_ascii=False, indent=1), "json"))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", b)) if isinstance(b, dict) else str(b) for b in content)
        flag = " · **is_error**" if block.get("is_error") else ""
        head = say(lang, "**tool_result** for `{id}`", id=block.get("tool_use_id"))
        return f"{head}{flag}\n\n" + fenced(str(content or ""))
    return say(lang, "**{kind}** (shown raw)", kind=kind) + "\n\n" + \
        fenced(json.dumps(block, ensure_ascii=False, indent=1), "json")


def to_markdown(trace: Trace, upto: int | None = None, lang: str = "en") -> str:
    """The history up to step `upto` (default: the whole trace) as Markdown, its headings in `lang`."""
    index = len(trace.steps) - 1 if upto is None else upto
    messages = trace.messages_at(index) if index >= 0 else []
    step = trace.steps[index] if index >= 0 else None
    meta = trace.meta
    scripted = " " + say(lang, "(scripted, offline)") if meta.get("scripted") else ""
    task = meta.get("task") if isinstance(meta.get("task"), str) else ""  # a hostile file's task may be anything
    out = ["# " + (task or say(lang, "Agent loop transcript")), "",
           f"- model: `{meta.get('model')}`{scripted}",
           "- " + say(lang, "steps: {k} of {n}", k=index + 1, n=len(trace.steps))]
    thread = trace.thread_of(index)
    if trace.has_threads:  # whose history this is: the main loop's or a sub-agent's
        out += [f"- thread: `{thread.id}`" + (f" ← `{thread.parent_tool_use_id}`" if thread.parent_tool_use_id else "")]
    if step:
        out += [f"- turn_count: {step.turn_count}", f"- transition_reason: {step.transition_reason}",
                f"- stop_reason: {step.stop_reason}", "- " + say(lang, "ended: {reason}", reason=step.ended or
                                                                     say(lang, "not yet"))]
    system = meta.get("system") if thread.is_main else thread.system
    if system:
        out += ["", "## " + say(lang, "System prompt"), "", fenced(str(system))]
    out += ["", "## messages", ""]
    for i, message in enumerate(messages):
        out += [f"### {i}. {message.get('role')}", ""]
        for block in rules.blocks(message):
            out += [_block(block, lang), ""]
    pairs = rules.pairs(messages)
    if pairs:
        out += ["## " + say(lang, "tool_use / tool_result pairs"), "",
                "| id | " + say(lang, "tool") + " | " + say(lang, "status") + " | is_error |", "| --- | --- | --- | --- |"]
        out += [f"| `{p.tool_use_id}` | {p.name or ''} | {say(lang, p.status)} | {p.is_error} |" for p in pairs]
    return "\n".join(out).rstrip() + "\n"
