"""What every importer hands over, and the few repairs they share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..text.catalogs import N_, N_n
from .notes import FILE_LINE, LINE, Note, Notes

OF_THREAD = N_("{where} of {thread}")  # messages.7 of agent-ab12: a place in a thread that is not the main one

# The settings of a model call that a trace keeps in its meta (and each call_model step in its request).
SETTINGS = ("model", "system", "tools", "max_tokens")


@dataclass
class Parsed:
    """A history in Messages API form, plus what the file recorded beside it (see derive.py).

    A log of several threads, or whose history was rewritten, fills `threads`
    instead (the main thread first); `messages` is then the main thread's final
    history.
    """

    messages: list = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    responses: dict = field(default_factory=dict)  # assistant message index -> the response as recorded
    tool_details: dict = field(default_factory=dict)  # tool_use id -> extra facts for its run_tool step
    times: dict = field(default_factory=dict)  # message index -> seconds since the epoch
    origins: list = field(default_factory=list)  # message index -> where in the file it came from ("line 12")
    threads: list = field(default_factory=list)  # ParsedThread, when there is more than one history


@dataclass
class Segment:
    """A stretch of one thread's history between two compactions, and what was recorded beside it."""

    messages: list  # the history at the end of the stretch
    start: int = 0  # messages[:start] came with the compaction that opened it (the summary, say)
    compaction: dict | None = None  # facts on that compaction for its step's detail (kind, trigger, ...)
    responses: dict = field(default_factory=dict)  # keyed by index in `messages`, as Parsed.responses
    times: dict = field(default_factory=dict)
    origins: list = field(default_factory=list)
    # index in `messages` -> why (in English, a catalog message): a message the agent's harness put there, which
    # no model call produced and no stage of the loop made (derive.py gives it a `harness` step)
    harness: dict = field(default_factory=dict)
    # index in `messages` -> what happened before that message that put nothing in it, each {"stage", "detail"}:
    # a call that failed (a `retry` step), words the agent showed its user and sent no model (a `harness` step)
    events: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)  # index -> why a user message is a request of its own (its step's note)
    summarize: dict | None = None  # the call that wrote the summary of the compaction that opened it, as recorded


@dataclass
class ParsedThread:
    """One thread of a log: the main loop, or a sub-agent's linked to the tool_use that started it."""

    id: str
    segments: list  # of Segment, oldest first
    parent: str | None = None
    parent_tool_use_id: object = None
    system: object = None
    tools: list | None = None
    label: str = ""
    facts: dict = field(default_factory=dict)

    @property
    def messages(self) -> list:
        return self.segments[-1].messages if self.segments else []


def id_key(value: object) -> object:
    """A tool_use id usable as a dict key or set member: a broken file may hold a list or an object there."""
    if type(value) is str:
        return value
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def clean_content(content: object, where: str | Note, notes: Notes) -> str | list | None:
    """A message's content as the API's form: a string, or a list of blocks (objects).

    Valid content is returned as it is. A bare string in the list becomes a
    text block; any other non-object item is kept as `{"type": "unknown",
    "raw": ...}` so it is shown, never dropped. None when there is no content.
    `where` names the message in warnings: a path in the file ("messages[3]") or a Note ("line 12").
    """
    def item(j: int) -> str | Note:  # where the content's item j is
        if isinstance(where, str):
            return f"{where}.content[{j}]"
        return Note(N_("{where}.{item}"), where=where, item=f"content[{j}]")

    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    if all(isinstance(b, dict) for b in content):
        return content
    out = []
    for j, block in enumerate(content):
        if isinstance(block, dict):
            out.append(block)
        elif isinstance(block, str):
            out.append({"type": "text", "text": block})
            notes.count(N_("repaired content items that were bare strings into text blocks"), item(j))
        else:
            out.append({"type": "unknown", "raw": json.dumps(block, ensure_ascii=False)})
            notes.count(N_("kept content items that are not blocks as type 'unknown'"), item(j))
    return out


def quoted(value: object) -> str:
    """A value from the file, in a message: a string in quotes ('tool_use'), anything else as the JSON the file
    holds (null, ["text", "tool_use"]), never Python's repr of it (None, ['text', 'tool_use'])."""
    if isinstance(value, str):
        return repr(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def describe_json(value: object):
    """A few words on what a JSON value is, for an error message: a Note (notes.py), said in any language."""
    if isinstance(value, dict):
        keys = list(value)[:8]
        if not keys:
            return Note(N_("an empty object"))
        return Note(N_("an object with keys {keys} …") if len(value) > 8 else N_("an object with keys {keys}"),
                    keys=", ".join(keys))  # the names, not a Python list's repr
    if isinstance(value, list):
        if not value:
            return Note(N_("an empty list"))
        kinds = ", ".join(sorted({type(v).__name__ for v in value}))
        if isinstance(value[0], dict):
            return Note(N_n("a list of {n} item of type {kinds} (the first has keys {keys})",
                            "a list of {n} items of type {kinds} (the first has keys {keys})"), n=len(value),
                        kinds=kinds, keys=", ".join(list(value[0])[:6]))
        return Note(N_n("a list of {n} item of type {kinds}", "a list of {n} items of type {kinds}"), n=len(value),
                    kinds=kinds)
    return Note(N_("a single {kind}"), kind=type(value).__name__)


def origin_of(origins: list, index: int) -> dict | None:
    """Where message `index` came from, as a step's detail keeps it (docs/transcript-format.md, "origin"):
    {"file", "line"} or {"line"} for a record of a log of lines, {"at"} for a place in a JSON file (a course
    trace's "cycle 3.response"); None where the importer named no place."""
    where = origins[index] if 0 <= index < len(origins) else None
    if isinstance(where, Note) and where.message in (LINE, FILE_LINE):
        return {k: where.values[k] for k in ("file",) if k in where.values} | {"line": where.values["n"]}
    if isinstance(where, (str, Note)) and str(where):
        return {"at": where if isinstance(where, str) else where.render()}
    return None
