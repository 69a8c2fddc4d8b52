"""Anthropic-native histories: a messages list, a request body, a list of responses."""

from __future__ import annotations

from ..text.catalogs import N_, N_n
from ..engine.rules import message_text, tool_uses
from .common import SETTINGS, Parsed, clean_content, quoted
from .notes import Notes

RESPONSE_KEYS = ("id", "type", "model", "stop_reason", "stop_sequence", "usage")  # a Message object beside role/content


def is_response(item: object) -> bool:
    """A Message object as the API returns it (and `Message.to_dict()` writes it)."""
    return isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "assistant"


def read_messages(items: list, notes: Notes, where: str = "messages") -> Parsed:
    """A list of `{role, content}` messages; a response object among them keeps its stop_reason and usage."""
    parsed = Parsed()
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            notes.count(N_("passed over messages that are not objects"), at)
            continue
        role = item.get("role")
        if role not in ("user", "assistant"):
            notes.warn(N_("{where}: role {role} is neither 'user' nor 'assistant'; passed over"), where=at,
                       role=quoted(role))
            continue
        content = clean_content(item.get("content"), at, notes)
        if content is None:
            notes.warn(N_("{where}: the {role} message has no content (a string or a list of blocks); passed over"),
                       where=at, role=role)
            continue
        if role == "assistant":
            recorded = {k: item[k] for k in RESPONSE_KEYS if k in item}
            if recorded:
                parsed.responses[len(parsed.messages)] = recorded
        parsed.messages.append({"role": role, "content": content})
        parsed.origins.append(at)
    parsed.meta["task"] = next((message_text(m) for m in parsed.messages if m["role"] == "user"), "")
    return parsed


def read_request(body: dict, notes: Notes) -> Parsed:
    """A request body `{model, system, messages, tools, max_tokens, ...}`: the settings become the trace's."""
    parsed = read_messages(body["messages"], notes)
    parsed.meta.update({k: body[k] for k in SETTINGS if k in body})
    options = {k: v for k, v in body.items() if k not in (*SETTINGS, "messages")}
    if options:
        parsed.meta["request_options"] = options
    return parsed


def read_responses(items: list, notes: Notes) -> Parsed:
    """A list of response Message objects: the assistant side only, as recorded."""
    parsed = read_messages(items, notes, where="responses")
    uses = sum(len(tool_uses(m)) for m in parsed.messages)
    if uses:
        notes.warn(N_n("a list of responses holds no user messages: the request and the tool_results were not "
                       "recorded, so its {n} tool_use block has no tool_result",
                       "a list of responses holds no user messages: the request and the tool_results were not "
                       "recorded, so its {n} tool_use blocks have no tool_result"), n=uses)
    else:
        notes.warn(N_("a list of responses holds no user messages: the request and the tool_results were not "
                      "recorded"))
    models = [r.get("model") for r in parsed.responses.values() if r.get("model")]
    if models:
        parsed.meta["model"] = models[0]
    return parsed
