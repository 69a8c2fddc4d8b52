"""A streamed answer (server-sent events) as the one answer it makes: what a recording keeps of a stream.

The Messages API's events (`message_start`, `content_block_start`, `content_block_delta`, `content_block_stop`,
`message_delta`, `message_stop`, `ping`, `error`) make a message; OpenAI Chat Completions' `data:` chunks (up to
`data: [DONE]`) make a chat completion. An `error` event makes an error body. What cannot be read is left out:
the recording keeps what the stream said, never more.
"""

from __future__ import annotations

import json

from ..files.transcript import parse_json


def events(data: bytes) -> list[tuple[str, object]]:
    """The (event name, data as JSON) of each event of a stream; a data line that is not JSON as its text."""
    found: list[tuple[str, object]] = []
    for chunk in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        name, lines = "", []
        for line in chunk.decode("utf-8", "replace").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if not lines:
            continue
        text = "\n".join(lines)
        try:
            found.append((name, parse_json(text)))
        except (ValueError, RecursionError):
            found.append((name, text))
    return found


def message(data: bytes) -> tuple[int, dict]:
    """A Messages API stream as (200, the message it made), or (the error's status, its error body)."""
    message: dict = {}
    blocks: dict[int, dict] = {}
    partial: dict[int, str] = {}
    for _, event in events(data):
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "error":
            return 500, event
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[_index(event)] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            block = blocks.setdefault(_index(event), {})
            delta = event["delta"]
            if delta.get("type") == "input_json_delta":
                partial[_index(event)] = partial.get(_index(event), "") + str(delta.get("partial_json", ""))
            else:
                for key in ("text", "thinking", "signature"):
                    if isinstance(delta.get(key), str):
                        block[key] = (block.get(key) or "") + delta[key] if key != "signature" else delta[key]
                if isinstance(delta.get("citation"), dict):
                    block.setdefault("citations", []).append(delta["citation"])
        elif kind == "message_delta":
            if isinstance(event.get("delta"), dict):
                message.update(event["delta"])
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
    for index, text in partial.items():
        try:
            blocks.setdefault(index, {})["input"] = json.loads(text) if text.strip() else {}
        except ValueError:
            blocks.setdefault(index, {})["input"] = text  # as the stream sent it
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return 200, message


def completion(data: bytes) -> tuple[int, dict]:
    """An OpenAI Chat Completions stream as (200, the chat completion it made), or (status, its error body)."""
    head: dict = {}
    text: list[str] = []
    calls: dict[int, dict] = {}
    finish = None
    usage = None
    for _, chunk in events(data):
        if not isinstance(chunk, dict):
            continue
        if isinstance(chunk.get("error"), dict):
            return 500, chunk
        for key in ("id", "model", "created"):
            head.setdefault(key, chunk.get(key))
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        if isinstance(delta.get("content"), str):
            text.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            made = calls.setdefault(call.get("index") if isinstance(call.get("index"), int) else len(calls),
                                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
            if call.get("id"):
                made["id"] = call["id"]
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    made["function"][key] += function[key]
        if choice.get("finish_reason"):
            finish = choice["finish_reason"]
    said: dict = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        said["tool_calls"] = [calls[i] for i in sorted(calls)]
    answer = {**head, "object": "chat.completion",
              "choices": [{"index": 0, "message": said, "finish_reason": finish}]}
    if usage is not None:
        answer["usage"] = usage
    return 200, answer


def _index(event: dict) -> int:
    index = event.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0
