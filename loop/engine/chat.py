"""OpenAI Chat Completions, spoken over the Messages API: a chat request read as a Messages request, and a Message
written back as a chat completion (whole, or streamed as `chat.completion.chunk` events).

Many learners' agents use the `openai` SDK against an OpenAI-compatible provider. The offline model (and a real
Messages API model) answers them through this translation, each API in its own shape:

    {"role": "system"}                         -> the request's `system`
    {"role": "assistant", "tool_calls": [..]}  -> an assistant message with tool_use blocks (ids kept)
    {"role": "tool", "tool_call_id": ..}       -> a tool_result block; consecutive ones share ONE user message
    tools [{"type": "function", "function"}]   -> tools [{name, description, input_schema}]

Chat's own pairing rules are checked before the translation (rules.check_chat), so a broken history gets
OpenAI's words, not Anthropic's.
"""

from __future__ import annotations

import json

from .blocks import tool_result
from ..tools import ToolOutput

DEFAULT_MAX_TOKENS = 8000  # a chat request may leave max_tokens out; the Messages API needs one
FINISH = {"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
          "refusal": "content_filter"}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _input(arguments: object) -> object:
    """A tool call's `arguments` (a JSON string) as the tool_use's input; kept as given when it is no JSON object."""
    if not isinstance(arguments, str):
        return arguments if isinstance(arguments, dict) else {}
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": arguments}


def messages_of(chat_messages: list) -> tuple[str | None, list]:
    """(system, messages) of an OpenAI `messages` list, in the Messages API's form."""
    system, messages, _ = _converted(chat_messages)
    return system, messages


def origins(chat_messages: list) -> list[tuple[int, list[int]]]:
    """For each message of `messages_of(chat_messages)`: the index of the chat message it came from, and for each
    of its blocks the chat message's (a tool message is a block of the user message of tool_results it joins)."""
    return _converted(chat_messages)[2]


def _converted(chat_messages: list) -> tuple[str | None, list, list]:
    systems, messages, came = [], [], []
    collecting = False  # the last message is a user message of tool_results, still taking more
    for j, item in enumerate(chat_messages):
        if not isinstance(item, dict):
            continue
        role, content = item.get("role"), item.get("content")
        if role in ("system", "developer"):
            systems.append(_text(content))
            continue
        if role == "tool":
            block = tool_result(item.get("tool_call_id"), ToolOutput(_text(content) if content is not None else ""))
            if collecting:
                messages[-1]["content"].append(block)
                came[-1][1].append(j)
            else:
                messages.append({"role": "user", "content": [block]})
                came.append((j, [j]))
                collecting = True
            continue
        collecting = False
        if role == "assistant":
            blocks: list = [{"type": "text", "text": _text(content)}] if _text(content) else []
            for call in item.get("tool_calls") or []:
                if isinstance(call, dict):
                    function = call.get("function") if isinstance(call.get("function"), dict) else {}
                    blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                                   "input": _input(function.get("arguments"))})
            messages.append({"role": "assistant", "content": blocks})
            came.append((j, [j] * len(blocks)))
        else:  # user, and any role the Messages API does not have: its checks say so
            messages.append({"role": role, "content": content if isinstance(content, str) else
                             [{"type": "text", "text": _text(content)}] if isinstance(content, list) else content})
            came.append((j, [j] if isinstance(content, list) else []))
    return ("\n\n".join(systems) if systems else None), messages, came


def tools_of(chat_tools: object) -> list:
    """OpenAI function tools as the Messages API's tools."""
    out = []
    for tool in chat_tools if isinstance(chat_tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            out.append({"name": function.get("name"), "description": function.get("description", ""),
                        "input_schema": function.get("parameters") or {"type": "object", "properties": {}}})
    return out


def messages_request(body: dict) -> dict:
    """A chat completions request body as a Messages API request body."""
    system, messages = messages_of(body.get("messages") if isinstance(body.get("messages"), list) else [])
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
    request = {"model": body.get("model"), "max_tokens": max_tokens, "messages": messages}
    if system is not None:
        request["system"] = system
    if "tools" in body:
        request["tools"] = tools_of(body.get("tools"))
    return request


def call_id(use_id: object) -> str:
    """A tool_use id as OpenAI writes a tool call's: call_…"""
    text = str(use_id)
    return "call_" + text[len("toolu_"):] if text.startswith("toolu_") else text


def completion(message: dict, model: object) -> dict:
    """A Messages API response as a chat completion."""
    content = message.get("content") if isinstance(message.get("content"), list) else []
    text = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    calls = [{"id": call_id(b.get("id")), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input"), ensure_ascii=False)}}
             for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    said: dict = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        said["tool_calls"] = calls
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    prompt, written = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    return {"id": "chatcmpl-" + str(message.get("id", "")).removeprefix("msg_"), "object": "chat.completion",
            "created": 0, "model": model if isinstance(model, str) else message.get("model"),
            "choices": [{"index": 0, "message": said, "logprobs": None,
                         "finish_reason": FINISH.get(message.get("stop_reason"), "stop")}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": written, "total_tokens": prompt + written}}


def error(status: int, body: dict, param: str | None = None) -> dict:
    """A Messages API error body (`{"type": "error", "error": {type, message}}`) in OpenAI's shape."""
    said = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else {}
    return {"error": {"message": said.get("message", ""), "type": said.get("type", "invalid_request_error"),
                      "param": param, "code": None}}


def sse_bytes(answer: dict, include_usage: bool = False) -> bytes:
    """A chat completion as the server-sent events of `stream: true`, ending with `data: [DONE]`."""
    choice = answer["choices"][0]
    said = choice["message"]
    head = {k: answer[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        data = dict(head, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    parts = [chunk({"role": "assistant", "content": ""})]
    text = said.get("content") or ""
    parts += [chunk({"content": text[i:i + 40]}) for i in range(0, len(text), 40)]
    for j, call in enumerate(said.get("tool_calls") or []):
        parts.append(chunk({"tool_calls": [{"index": j, "id": call["id"], "type": "function",
                                            "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        parts.append(chunk({"tool_calls": [{"index": j, "function": {"arguments": call["function"]["arguments"]}}]}))
    parts.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        parts.append(f"data: {json.dumps(dict(head, choices=[], usage=answer['usage']))}\n\n".encode())
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens", "content_filter": "refusal",
        "function_call": "tool_use"}


def message(answer: object) -> dict | None:
    """A chat completion as a Messages API response (content blocks, stop_reason, usage); None when it is none."""
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list) or not answer["choices"]:
        return None
    choice = answer["choices"][0] if isinstance(answer["choices"][0], dict) else {}
    said = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content: list = [{"type": "text", "text": _text(said.get("content"))}] if _text(said.get("content")) else []
    for call in said.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            content.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                            "input": _input(function.get("arguments"))})
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    return {"id": answer.get("id"), "type": "message", "role": "assistant", "model": answer.get("model"),
            "content": content, "stop_reason": STOP.get(choice.get("finish_reason"), "end_turn"),
            "stop_sequence": None, "usage": {"input_tokens": usage.get("prompt_tokens", 0),
                                             "output_tokens": usage.get("completion_tokens", 0)}}
