"""A model call as it crosses the wire: which API a request's path names, and its answer in that API's own shape.

    /v1/messages (any path ending in /messages)      -> the Messages API (Anthropic)
    /v1/chat/completions (or /chat/completions)      -> OpenAI Chat Completions, translated (chat.py)
    anything else                                    -> no model API: "the sandbox has no network"

The model behind both is one function from a Messages API body to (status, body): the scripted model by
default (`scripted.respond`), or a real one. A chat request is checked by Chat's own pairing rules first, so a
broken history gets OpenAI's words; its answer and its errors go back in OpenAI's shape.

Used by the HTTP server (`python -m loop serve`) and by the keeper of a learner's program (loop/yours/).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from . import chat, rules, scripted

MESSAGES = "anthropic"
CHAT = "openai"
Model = Callable[[dict], tuple[int, dict]]  # a Messages API body -> (HTTP status, response or error body)

NO_NETWORK = ("the sandbox has no network: {url} is not a model API Loopscope answers (it answers the Messages API, "
              "a path ending in /messages, and OpenAI Chat Completions, /chat/completions)")


def dialect(path: str) -> str | None:
    """The API a request's path names (its query left out), or None for no model API."""
    path = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if path.endswith("/messages"):
        return MESSAGES
    if path.endswith("/chat/completions"):
        return CHAT
    return None


def no_network(url: str) -> tuple[int, dict]:
    """The answer to a request for anything but a model: 502, in words that say why."""
    return 502, scripted.error_body(NO_NETWORK.format(url=url), "no_network")


@dataclass(frozen=True)
class Answer:
    """What goes back over the wire: status, content type and bytes; `body` the answer as JSON (not the stream)."""

    status: int
    content_type: str
    data: bytes
    body: dict


def respond(kind: str, body: object, model: Model) -> tuple[int, dict]:
    """The answer to a request `body` of API `kind`, in that API's shape: (status, response or error body)."""
    if kind == MESSAGES:
        return model(body)
    if not isinstance(body, dict):
        return 400, chat.error(400, scripted.error_body("We could not parse the JSON body of your request."))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, chat.error(400, scripted.error_body("Missing required parameter: 'messages'."), "messages")
    broken = rules.check_chat(messages)
    if broken:
        return 400, chat.error(400, scripted.error_body(broken[0].message), broken[0].where)
    status, answer = model(chat.messages_request(body))
    if status != 200:
        return status, chat.error(status, answer)
    return 200, chat.completion(answer, body.get("model"))


def encode(kind: str, status: int, answer: dict, stream: bool, include_usage: bool = False) -> Answer:
    """`answer` as bytes on the wire: JSON, or the API's server-sent events when the request asked to stream."""
    if status == 200 and stream:
        data = scripted.sse_bytes(answer) if kind == MESSAGES else chat.sse_bytes(answer, include_usage)
        return Answer(status, "text/event-stream", data, answer)
    return Answer(status, "application/json", json.dumps(answer).encode(), answer)


def streams(body: object) -> tuple[bool, bool]:
    """(does the request ask to stream, does it ask for the usage at the stream's end)."""
    if not isinstance(body, dict):
        return False, False
    options = body.get("stream_options")
    return body.get("stream") is True, isinstance(options, dict) and options.get("include_usage") is True
