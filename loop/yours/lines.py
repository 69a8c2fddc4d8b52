"""The line of a learner's code that made the message a broken rule is about.

The keeper decides the rule from the wire (named.py), and which message of the refused request the rule is about is
the mistake's own (loop/engine/mistakes.py `about`). Which line made that message is the learner's program's word
(watching.py, inside their process, told with each request, and where their loop returned): kept only where it
points at a line of their files, and shown as theirs. A line inside a statement is shown as that statement's first
line, or as the line of the key the mistake wrote wrong in it (`"role": "assistant"`, `"tool_use_id": …`). When the
line is not known, the message is named and the call's line shown.

    made(recording, mistakes.WRONG_ID, 1)   # Made(MADE, call=2, line=31, file=None, message=3, role="user")
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from ..engine import chat
from ..engine.mistakes import MISTAKES, about
from ..text.catalogs import N_
from .recording import Recording

# How the line is known (Made.how)
MADE = "made"  # the line made the message the rule is about
AFTER = "after"  # the line appended the message, and nothing after it answered its tool_use
RETURNED = "returned"  # the loop returned at the line, after its last call
UNKNOWN = "unknown"  # not known: the message is named, and the line is the call's
UNKNOWN_RETURN = "unknown-return"  # where the loop returned is not known: the line is the call's

SAID = {
    MADE: N_("your line {line} made the message the rule is about (message {message} of call {call}): {code}"),
    AFTER: N_("your line {line} appended message {message} of call {call}, and no message after it answers its "
              "tool_use: {code}"),
    RETURNED: N_("your line {line} returned from the loop after call {call}: {code}"),
    UNKNOWN: N_("the line that made message {message} of call {call} ({role}) is not known; the call's line "
                "{line}: {code}"),
    UNKNOWN_RETURN: N_("where your loop returned after call {call} is not known; the call's line {line}: {code}"),
}

# What a learner's program may say of one request (bounded before it is kept)
MESSAGES_MOST = 64
BLOCKS_MOST = 64
INDEX_MOST = 100_000
LINE_MOST = 10**6
FILE_MOST = 300


@dataclass(frozen=True)
class Made:
    """Where the learner's code made the message a broken rule is about (or why that is not known)."""

    how: str  # MADE, AFTER, RETURNED, UNKNOWN or UNKNOWN_RETURN
    call: int  # the call (from 1) whose request holds the message, or after which the loop returned
    line: int | None  # their line; the call's when the line is not known
    file: str | None = None  # their file of `line`, None: the file run
    message: int | None = None  # the message (from 1) in the request as sent
    role: str | None = None  # its role

    @property
    def known(self) -> bool:
        return self.how in (MADE, AFTER, RETURNED)

    def words(self) -> str:
        """The sentence (an English message, its {code} left to the reader): say(lang, words, **values, code=…)."""
        return SAID[self.how]

    def values(self) -> dict:
        line = f"{self.file}:{self.line}" if self.file else self.line
        return {"line": line, "message": self.message, "call": self.call, "role": self.role or "?"}


def made(recording: Recording, name: str, k: int | None) -> Made | None:
    """Where the learner's code made the message mistake `name`, shown at call `k` (0-based), is about; None for
    a broken rule that is none of the seven mistakes, or no call."""
    calls = recording.exchanges
    if name not in MISTAKES or k is None or not 0 <= k < len(calls):
        return None
    call = calls[k]
    refused = call.error is not None and k > 0 and calls[k - 1].response is not None
    if not refused:  # it ended after call k: where its loop returned
        left = _place(recording, recording.left)
        if left is not None:
            return Made(RETURNED, k + 1, _statement(recording, *left), left[0])
        return Made(UNKNOWN_RETURN, k + 1, call.line, _file(recording, call.file))
    request, _ = call.as_messages()
    sent = request.get("messages") if isinstance(request, dict) else None
    sent = sent if isinstance(sent, list) else []
    where = about(name, calls[k - 1].as_messages()[1] or {}, sent)
    if where.message is None or not 0 <= where.message < len(sent):
        return Made(UNKNOWN_RETURN, k + 1, call.line, _file(recording, call.file))
    index, block = where.message, where.block
    if call.dialect == "openai":  # the chat message it came from (a tool message is a message of its own there)
        raw = call.request.get("messages") if isinstance(call.request, dict) else None
        came = chat.origins(raw if isinstance(raw, list) else [])
        if index < len(came):
            index = came[index][1][block] if block is not None and block < len(came[index][1]) else came[index][0]
        block = None
    role = sent[where.message].get("role") if isinstance(sent[where.message], dict) else None
    found = _made_line(call.made, index, block)
    place = _place(recording, found)
    if place is None:
        return Made(UNKNOWN, k + 1, call.line, _file(recording, call.file), index + 1, str(role))
    key = "tool_call_id" if call.dialect == "openai" and where.key == "tool_use_id" else where.key
    line = _statement(recording, *place, key=key, value=where.value)
    return Made(MADE if where.answered else AFTER, k + 1, line, place[0], index + 1, str(role))


def _made_line(made: list, index: int, block: int | None) -> dict | None:
    """The line the program told for message `index` (its block `block`'s, when it told one), or None."""
    for entry in made:
        if entry["i"] != index:
            continue
        if block is not None:
            for b, line, file in entry["blocks"]:
                if b == block:
                    return {"line": line, "file": file}
        return {"line": entry["line"], "file": entry["file"]} if entry["line"] is not None else None
    return None


def text_of(recording: Recording, file: str | None) -> str | None:
    """The text of one of the learner's files, as run: the one run (None, or its name), or another of the project's."""
    if file is None or file == recording.file:
        return recording.source
    text = recording.files.get(file)
    return text if isinstance(text, str) else None


def _file(recording: Recording, file: object) -> str | None:
    """`file` as Made names it: None for the file run."""
    return None if not isinstance(file, str) or file == recording.file else file


def _place(recording: Recording, told: object) -> tuple[str | None, int] | None:
    """(file, line) the program told, when it is a line of one of their files; None otherwise."""
    if not isinstance(told, dict):
        return None
    line, file = told.get("line"), _file(recording, told.get("file"))
    text = text_of(recording, file)
    if text is None or not isinstance(line, int) or isinstance(line, bool) or not 0 < line <= text.count("\n") + 1:
        return None
    return file, line


def _statement(recording: Recording, file: str | None, line: int, key: str | None = None,
               value: str | None = None) -> int:
    """The line to show for `line` of `file`: the first line of the simple statement it is in, or the line of `key`
    (with `value`) in a dict that statement writes."""
    text = text_of(recording, file) or ""
    return _shown_line(text, line, key, value)


@functools.lru_cache(maxsize=64)
def _tree(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _shown_line(text: str, line: int, key: str | None, value: str | None) -> int:
    tree = _tree(text)
    if tree is None:
        return line
    inside = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and node.lineno <= line <=
              (node.end_lineno or node.lineno)]
    if not inside:
        return line
    statement = min(inside, key=lambda node: (node.end_lineno or node.lineno) - node.lineno)
    if hasattr(statement, "body"):  # a compound statement's own line (`for …:`): as it is
        return line
    if key is not None:
        for node in ast.walk(statement):
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value == key and (
                            value is None or isinstance(v, ast.Constant) and v.value == value):
                        return k.lineno
    return statement.lineno


def code_at(recording: Recording, file: str | None, line: int | None) -> str:
    """Line `line` of the learner's `file`, as written (stripped); "" when there is none."""
    text = text_of(recording, file)
    if text is None or not line:
        return ""
    lines = text.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


# -- what a learner's program may tell of a request, checked before it is kept --

def checked_made(value: object) -> list:
    """The lines a program told for a request's messages, as Exchange.made keeps them: bounded, the wrong kinds
    left out."""
    out = []
    for entry in value[:MESSAGES_MOST] if isinstance(value, list) else []:
        if not isinstance(entry, dict):
            continue
        i, line, file = entry.get("i"), _line(entry.get("line")), _name(entry.get("file"))
        if not _int(i) or not 0 <= i < INDEX_MOST:
            continue
        blocks = []
        for told in entry.get("blocks")[:BLOCKS_MOST] if isinstance(entry.get("blocks"), list) else []:
            if isinstance(told, list) and len(told) == 3 and _int(told[0]) and 0 <= told[0] < INDEX_MOST and \
                    _line(told[1]) is not None:
                blocks.append([told[0], told[1], _name(told[2])])
        if line is not None or blocks:
            out.append({"i": i, "line": line, "file": file, "blocks": blocks})
    return out


def checked_place(value: object) -> dict | None:
    """{"line", "file"} a program told (where its loop returned), or None."""
    if not isinstance(value, dict) or _line(value.get("line")) is None:
        return None
    return {"line": value["line"], "file": _name(value.get("file"))}


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _line(value: object) -> int | None:
    return value if _int(value) and 0 < value < LINE_MOST else None


def _name(value: object) -> str | None:
    return value[:FILE_MOST] if isinstance(value, str) else None
