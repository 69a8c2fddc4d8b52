"""Compaction (the course's s06): rewrite the history so it fits the context, in three layers.

1. micro-compact, before every call: tool_results older than the last 3
   (longer than 100 characters, not read_file's) are replaced in place by
   `[Previous: used <tool>]`. Earlier messages change: the history is no
   longer append-only.
2. auto-compact, when the estimated tokens (JSON length / 4) pass a
   threshold: a model call summarises the history, and the history is
   replaced by that summary.
3. the `compact` tool: the model asks for the same summary itself; the loop
   compacts after writing the tool's result back.

Each rewrite is a `compact` step of the trace (after a `summarize` step for
2 and 3, the model call), and the history before it stays in the trace, so
nothing is truly lost. This module says *what* to rewrite; the runner
(`runner.py`) decides *when*.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..text.catalogs import N_, languages, say
from .rules import tool_results, tool_uses
from ..tools import Tool, ToolOutput

KEEP_RECENT = 3
MIN_CHARS = 100  # shorter results are left as they are
PRESERVE = ("read_file",)  # what a file holds is worth keeping
THRESHOLD = 50_000  # tokens, the course's
SUMMARY_MAX_TOKENS = 2000
SUMMARY_PROMPT = ("Summarize this conversation for continuity. Include: 1) What was accomplished, 2) Current state, "
                  "3) Key decisions made. Be concise but preserve critical details.\n\n")
SUMMARY_CHARS = 80_000  # the end of the conversation the summary call sees, as in the course
SHORT_RESULT = 200  # characters of an older tool_result a summary call keeps when the history outgrew the window
# The line a summary begins with. It is part of the history the model reads, so it is written in the run's
# language when the summary is made (as the model's own words are), never translated when drawn.
COMPRESSED = N_("[Conversation compressed. The full history before this point is kept in the trace.]")
COURSE_COMPRESSED = "[Conversation compressed."  # how the course's s06 (and a learner's copy of it) begins its line
# Why each compaction happened, as a step's detail says it (in English; narrate.py says it again in any language)
MICRO_WHY = N_("{n} old tool_result(s) replaced by placeholders; the newest {keep} are kept")
AUTO_WHY = N_("the history is about {tokens} tokens, past the threshold of {threshold}")
MANUAL_WHY = N_("the model called the compact tool")
# Why an imported log's history was replaced (the importers record these in English; views say them in any language)
COMPACTED_WHY = N_("Claude Code compacted the conversation: from here the model sees the summary, not the messages "
                   "before it")
REWRITTEN_WHY = N_("the history the log goes on with is not the one before it: it was rewritten")
RESENT_WHY = N_("{name}'s request does not go on from the history before it: it sent {sent} message(s) where the "
                "thread held {held}")
SUMMARY_WHY = N_("the history is replaced by the summary the model just wrote")
# The complete loop's compact_resume (profiles.py): compact, then call again
REFUSED_WHY = N_("the API refused the prompt as too long ({tokens} tokens > {maximum} maximum): summarise, then call "
                 "again")
STILL_TOO_LONG = N_("the API refused the prompt as too long ({tokens} tokens > {maximum} maximum) even after a "
                    "compaction: the loop ends")
BUDGET_WHY = N_("the history is about {tokens} tokens, past the budget of {budget}: summarise before the call")


def placeholder(name: str) -> str:
    return f"[Previous: used {name}]"


def estimate_tokens(messages: list) -> int:
    """A rough count the loop can make without asking the API: JSON length / 4."""
    return len(json.dumps(messages, default=str)) // 4


def micro_compact(messages: list) -> list[tuple[int, dict]]:
    """The messages micro-compact rewrites, as (index, new message); `messages` itself is left as it is.

    A new message replaces an old one, so the history before the rewrite stays
    exactly as it was sent.
    """
    found = [(i, j, block) for i, message in enumerate(messages)
             if isinstance(message, dict) and message.get("role") == "user"
             and isinstance(message.get("content"), list)
             for j, block in enumerate(message["content"])
             if isinstance(block, dict) and block.get("type") == "tool_result"]
    if len(found) <= KEEP_RECENT:
        return []
    names = {use.get("id"): use.get("name") for message in messages
             if isinstance(message, dict) and message.get("role") == "assistant" for use in tool_uses(message)}
    changed: dict[int, dict] = {}
    for i, j, block in found[:-KEEP_RECENT]:
        content = block.get("content")
        if not isinstance(content, str) or len(content) <= MIN_CHARS:
            continue  # short already (or a placeholder from an earlier call)
        name = names.get(block.get("tool_use_id"), "unknown")
        if name in PRESERVE:
            continue
        message = changed.get(i) or dict(messages[i], content=list(messages[i]["content"]))
        message["content"][j] = dict(block, content=placeholder(name))
        changed[i] = message
    return sorted(changed.items())


def summary_messages(messages: list, within: int | None = None) -> list[dict]:
    """What the summary call sends: one user message with the conversation's JSON (its last 80,000 characters).

    With `within` (estimated tokens of the whole call), the call must fit a
    context window the history has outgrown: the older tool_results are cut to
    their first characters (the newest is kept whole, nobody has read it yet),
    then, if still too long, the oldest messages after the first go; the first
    (the task, or the summary before) always stays, so the summary still knows
    what was asked.
    """
    if within is None:
        return [{"role": "user", "content": SUMMARY_PROMPT + json.dumps(messages, default=str)[-SUMMARY_CHARS:]}]
    results = [(i, j) for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"
               and isinstance(m.get("content"), list)
               for j, b in enumerate(m["content"]) if isinstance(b, dict) and b.get("type") == "tool_result"]
    shortened = list(messages)

    def shorten(keep: int) -> None:
        for i, j in results[:-1]:
            block = shortened[i]["content"][j]
            content = block.get("content")
            if isinstance(content, str) and len(content) > keep + 40:
                message = dict(shortened[i], content=list(shortened[i]["content"]))
                message["content"][j] = dict(block, content=content[:keep] + f"… ({len(content) - keep} more "
                                                                             "characters)")
                shortened[i] = message

    shorten(SHORT_RESULT)
    if estimate_tokens([{"role": "user", "content": SUMMARY_PROMPT + json.dumps(shortened, default=str)}]) > within:
        shorten(0)  # what the model said of them stays; then the oldest messages go, if need be
    kept = shortened[1:]

    def sent() -> list[dict]:
        return [{"role": "user", "content": SUMMARY_PROMPT + json.dumps(shortened[:1] + kept, default=str)}]

    while kept and estimate_tokens(sent()) > within:
        kept = kept[1:]
    return sent()


def summary_text(response: dict) -> str:
    texts = [b.get("text", "") for b in response.get("content") or [] if isinstance(b, dict) and b.get("type") == "text"]
    return "".join(texts).strip() or "No summary generated."


def compressed(lang: str = "en") -> str:
    """The line a summary begins with, in `lang` (the run's language)."""
    return say(lang, COMPRESSED)


def summarized(summary: str, lang: str = "en") -> list[dict]:
    """The history after an auto or manual compaction: the summary, as one user message, its first line in `lang`."""
    return [{"role": "user", "content": f"{compressed(lang)}\n\n{summary}"}]


def is_summary(text: object) -> bool:
    """Does `text` begin with a compaction's line, in any language Loopscope writes it in?"""
    return isinstance(text, str) and (text.startswith(COURSE_COMPRESSED)
                                      or any(text.startswith(compressed(lang)) for lang in languages()))


def compact_requested(messages: list) -> bool:
    """Did the last write-back answer a `compact` tool_use? (the loop compacts before its next call)"""
    if len(messages) < 2 or not isinstance(messages[-2], dict) or messages[-2].get("role") != "assistant":
        return False
    asked = {u.get("id") for u in tool_uses(messages[-2]) if u.get("name") == Compact.name}
    return bool(asked) and any(r.get("tool_use_id") in asked for r in tool_results(messages[-1]))


class Compact(Tool):
    """The course's `compact` tool: the model asks for its history to be summarised."""

    name = "compact"
    description = "Trigger manual conversation compression."
    input_schema = {"type": "object",
                    "properties": {"focus": {"type": "string", "description": "What to preserve in the summary"}}}

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        return ToolOutput("Compressing...")


@dataclass
class Compaction:
    """A run's compaction settings: on when the toolset is s06."""

    threshold: int = THRESHOLD  # estimated tokens past which the history is summarised
    # JSON length of each message seen, by identity (the message kept alive with it): the estimate before
    # every call then costs a lookup a message, not a JSON dump of the whole history.
    sizes: dict = field(default_factory=dict, repr=False, compare=False)

    def estimate(self, messages: list) -> int:
        """`estimate_tokens(messages)`, the same number, from the sizes already known."""
        total = 2 + 2 * max(0, len(messages) - 1)  # "[" "]" and the ", " between messages
        sizes = self.sizes
        for message in messages:
            known = sizes.get(id(message))
            if known is None or known[0] is not message:
                known = sizes[id(message)] = (message, len(json.dumps(message, default=str)))
            total += known[1]
        return total // 4

    def due(self, messages: list, done: str | None = None) -> tuple[str | None, list]:
        """The compaction the loop makes before its next call ("manual", "micro", "auto"), or None to call,
        with micro-compact's changes when that is the one.

        `done` is the kind of compaction already made since the last call: after
        a summary the loop calls, even if the summary is long.
        """
        if done in ("auto", "manual", "resume"):
            return None, []
        if done is None and compact_requested(messages):
            return "manual", []
        if done is None:
            changes = micro_compact(messages)
            if changes:
                return "micro", changes
        if self.estimate(messages) > self.threshold:
            return "auto", []
        return None, []
