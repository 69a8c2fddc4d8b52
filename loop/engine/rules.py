"""The tool-use rules of the model APIs, checked in one place.

Everything that needs to know whether a history is valid asks here: the
scripted model (to answer a broken request with the API's own 400 error), the
transcript loader, `python -m loop check`, and the pairs view.

Two dialects: the Messages API's (`check`: tool_use blocks answered by tool_result
blocks in the next user message; a harness's `role: "system"` turn among the messages, as Claude Code sends its
environment block, is passed over: "next" and "previous" mean the next and previous user or assistant message) and OpenAI Chat Completions' (`check_chat`:
an assistant message's `tool_calls` answered by one `role: "tool"` message each,
right after it). The wording of each violation is the API's own, so a learner
who meets it here will recognise it when a real model says it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (`messages.N` or `messages.N.content.M`) and the API's words."""

    where: str
    message: str
    index: int  # the message it is about, for highlighting

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True)
class Pair:
    """One `tool_use` joined by id with its `tool_result` (or an orphan result)."""

    tool_use_id: str
    name: str | None
    input: object
    use_index: int | None  # index in messages of the assistant message holding the tool_use
    result_index: int | None  # index of the user message holding the tool_result
    result: object  # the tool_result's content
    is_error: bool
    status: str  # "paired", "waiting" (no message after it yet) or "orphan"


def blocks(message: dict) -> list:
    """The content of a message as a list of blocks (a string becomes one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def message_text(message: dict) -> str:
    """The text of a message, or a note of what it holds when it has no text."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
    if texts:
        return "\n".join(str(t) for t in texts)
    kinds = [b.get("type") if isinstance(b, dict) else type(b).__name__ for b in blocks(message)]
    return "(" + ", ".join(str(k) for k in kinds) + ")" if kinds else "(empty)"


def _of_type(message: dict, kind: str) -> list[dict]:
    return [b for b in blocks(message) if isinstance(b, dict) and b.get("type") == kind]


def tool_uses(message: dict) -> list[dict]:
    """The `tool_use` blocks of a message, in order."""
    return _of_type(message, "tool_use")


def tool_results(message: dict) -> list[dict]:
    """The `tool_result` blocks of a message, in order."""
    return _of_type(message, "tool_result")


def _id(value: object) -> object:
    """An id as a set member: a broken history may hold a list or an object where an id belongs."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


SYSTEM = "system"  # a harness's own turn inside `messages` (Claude Code 2.1's environment block)


def is_system(message: object) -> bool:
    """A `role: "system"` turn among the messages: the harness's words, which no pairing rule is about."""
    return isinstance(message, dict) and message.get("role") == SYSTEM


def _turns(messages: list, begin: int = 0) -> list[int]:
    """The indices of the messages the pairing rules read, from `begin` on: every one but the system turns."""
    return [i for i in range(begin, len(messages)) if not is_system(messages[i])]


def _turn_before(messages: list, start: int) -> int:
    """The last message before `start` that is no system turn (`start` when there is none): what the pairing
    rules read before `start`. A check from `start` reads from there, not the whole history again: a long
    transcript checked call by call stays one pass over its messages."""
    for i in range(min(start, len(messages)) - 1, -1, -1):
        if not is_system(messages[i]):
            return i
    return start


def _is_empty(message: dict) -> bool:
    content = message.get("content")
    return content is None or content == "" or content == []


# The Messages API's words for each broken rule (loop/engine/mistakes.py names the mistake that breaks each)
UNANSWERED = ("`tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
              "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
UNEXPECTED_ID = ("unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
                 "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
NOT_FIRST = ("Did not find {n} `tool_result` block(s) at the beginning of this message. "
             "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.")
EMPTY_CONTENT = "all messages must have non-empty content except for the optional final assistant message"


def check(messages: list, *, as_request: bool = True, start: int = 0) -> list[Violation]:
    """Every tool-use rule `messages` breaks, in message order.

    `as_request=True` judges the list as the body of the next API call: a final
    assistant message whose `tool_use` blocks have no answer is an error then.
    With `as_request=False` (a paused run, a saved transcript) those are only
    waiting for their results. `start` checks only the messages from there on
    (the ones before are known to be checked already).
    """
    found: list[Violation] = []
    start = max(0, start)
    turns = _turns(messages, _turn_before(messages, start))  # from the turn a message at `start` answers
    last = turns[-1] if turns else -1
    at = {i: k for k, i in enumerate(turns)}
    for i in range(start, len(messages)):
        message = messages[i]
        if not isinstance(message, dict):
            found.append(Violation(f"messages.{i}", "Input should be a valid dictionary", i))
            continue
        role = message.get("role")
        if _is_empty(message) and not (i == last and role == "assistant"):
            found.append(Violation(f"messages.{i}", EMPTY_CONTENT, i))
        if role == SYSTEM:
            continue
        k = at[i]
        if role == "user":
            before = messages[turns[k - 1]] if k > 0 else None
            previous = before if isinstance(before, dict) else {}
            asked = {_id(b.get("id")) for b in tool_uses(previous)} if previous.get("role") == "assistant" else set()
            for j, block in enumerate(blocks(message)):
                if isinstance(block, dict) and block.get("type") == "tool_result" and _id(block.get("tool_use_id")) not in asked:
                    found.append(Violation(f"messages.{i}.content.{j}",
                                           UNEXPECTED_ID.format(id=block.get("tool_use_id")), i))
        if role == "assistant":
            uses = [_id(b.get("id")) for b in tool_uses(message)]
            if not uses or (i == last and not as_request):
                continue
            after = turns[k + 1] if i < last else None
            following = messages[after] if after is not None and isinstance(messages[after], dict) else {}
            answered = following.get("role") == "user"
            leading: set = set()
            for block in blocks(following) if answered else []:
                if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                    break
                leading.add(_id(block.get("tool_use_id")))
            anywhere = {_id(b.get("tool_use_id")) for b in tool_results(following)} if answered else set()
            missing = [u for u in uses if u not in anywhere]
            if missing:
                found.append(Violation(f"messages.{i}", UNANSWERED.format(ids=", ".join(str(m) for m in missing)), i))
            elif not set(uses) <= leading:
                found.append(Violation(f"messages.{after}", NOT_FIRST.format(n=len(uses)), after))
    found.sort(key=lambda v: v.index)
    return found


def pairs(messages: list) -> list[Pair]:
    """Each `tool_use` joined with its `tool_result` by id, then any result nobody asked for.

    A `tool_use` is "paired" when the next message answers it, "waiting" when it
    is in the last message (its result is not written back yet), and "orphan"
    when a later message exists but does not answer it. A `tool_result` whose id
    the previous message never asked for is an "orphan" row of its own.
    """
    rows: list[Pair] = []
    claimed: set[tuple[int, str]] = set()
    turns = _turns(messages)
    for k, i in enumerate(turns):
        message = messages[i]
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        after = turns[k + 1] if k + 1 < len(turns) else None
        following = messages[after] if after is not None and isinstance(messages[after], dict) else None
        answers = {}
        if following is not None and following.get("role") == "user":
            answers = {_id(b.get("tool_use_id")): b for b in tool_results(following)}
        for use in tool_uses(message):
            result = answers.get(_id(use.get("id")))
            if result is not None:
                claimed.add((after, _id(use.get("id"))))
                status = "paired"
            else:
                status = "waiting" if following is None else "orphan"
            rows.append(Pair(
                tool_use_id=str(use.get("id")),
                name=use.get("name"),
                input=use.get("input"),
                use_index=i,
                result_index=after if result is not None else None,
                result=result.get("content") if result is not None else None,
                is_error=bool(result.get("is_error")) if result is not None else False,
                status=status,
            ))
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        for result in tool_results(message):
            if (i, _id(result.get("tool_use_id"))) not in claimed:
                rows.append(Pair(
                    tool_use_id=str(result.get("tool_use_id")),
                    name=None,
                    input=None,
                    use_index=None,
                    result_index=i,
                    result=result.get("content"),
                    is_error=bool(result.get("is_error")),
                    status="orphan",
                ))
    return rows


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------------

CHAT_UNANSWERED = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                   "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}")
CHAT_NOT_A_RESPONSE = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                       "'tool_calls'.")  # the API's own spelling
CHAT_UNKNOWN_ID = "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."


def chat_calls(message: object) -> list[dict]:
    """The `tool_calls` of an OpenAI assistant message, in order (objects only)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def check_chat(messages: list) -> list[Violation]:
    """Every tool-call rule an OpenAI Chat Completions `messages` list breaks, in message order.

    `where` is the API's `param` (`messages.[3].role`), each message its words.
    """
    found: list[Violation] = []
    asked: list = []  # the ids of the open assistant message's tool_calls, still to be answered
    answered: set = set()
    opener = -1
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            use_id = _id(message.get("tool_call_id"))
            if opener < 0:
                found.append(Violation(f"messages.[{i}].role", CHAT_NOT_A_RESPONSE, i))
            elif use_id not in asked:
                found.append(Violation(f"messages.[{i}].tool_call_id",
                                       CHAT_UNKNOWN_ID.format(id=message.get("tool_call_id")), i))
            else:
                answered.add(use_id)
            continue
        if opener >= 0:
            missing = [str(u) for u in asked if u not in answered]
            if missing:
                found.append(Violation(f"messages.[{opener}].role", CHAT_UNANSWERED.format(ids=", ".join(missing)),
                                       opener))
        opener, asked, answered = -1, [], set()
        calls = chat_calls(message)
        if calls:
            opener, asked = i, [_id(c.get("id")) for c in calls]
    if opener >= 0:  # a request may not end on tool_calls either: they would go unanswered
        missing = [str(u) for u in asked if u not in answered]
        if missing:
            found.append(Violation(f"messages.[{opener}].role", CHAT_UNANSWERED.format(ids=", ".join(missing)),
                                   opener))
    return found  # in the order the API meets them, message by message
