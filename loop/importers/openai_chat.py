"""OpenAI chat completions histories, turned into the Messages API's form.

    {"role": "system"}                       -> meta.system
    {"role": "assistant", "tool_calls": [..]} -> an assistant message with tool_use blocks
    {"role": "tool", "tool_call_id": ..}      -> a tool_result block; consecutive ones share ONE user message

The last rule is the chapter's stage 5: all the results of a turn go back as one message.
"""

from __future__ import annotations

import json

from ..engine.blocks import tool_result
from ..text.catalogs import N_
from ..files.transcript import NumberTooLong, parse_json, too_deep
from ..tools import ToolOutput
from .common import Parsed, quoted
from ..engine.rules import message_text
from .notes import Notes

MARKS = ("tool_calls", "tool_call_id", "function_call")


def looks_like(items: list) -> bool:
    """True when a messages list is OpenAI's rather than Anthropic's."""
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("role") in ("system", "developer", "tool", "function") or any(k in item for k in MARKS):
            return True
        content = item.get("content")
        if content is None and item.get("role") == "assistant":
            return True
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in ("image_url", "input_audio")
                                             for b in content):
            return True
    return False


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _parts(content: list, where: str, notes: Notes) -> list:
    """OpenAI content parts as blocks: text stays text, an image_url becomes an image block, the rest is kept raw."""
    out = []
    for j, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            image = part.get("image_url")
            url = str(image.get("url", "")) if isinstance(image, dict) else str(image or "")
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                out.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
            else:
                out.append({"type": "image", "source": {"type": "url", "url": url}})
        else:
            out.append(part if isinstance(part, dict) else {"type": "unknown", "raw": json.dumps(part)})
            notes.count(N_("kept content parts Loopscope cannot translate, shown raw"), f"{where}.content[{j}]")
    return out


def _tool_use(call: object, where: str, notes: Notes) -> dict:
    if not isinstance(call, dict):
        notes.warn(N_("{where}: a tool call that is not an object; kept raw"), where=where)
        return {"type": "unknown", "raw": json.dumps(call)}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    if call.get("type", "function") != "function":
        notes.warn(N_("{where}: a tool call of type {type}; read as a function call"), where=where,
                   type=quoted(call.get("type")))
    arguments = function.get("arguments", "{}")
    tool_input: object = arguments
    if isinstance(arguments, str):
        try:
            parsed = parse_json(arguments) if arguments.strip() else {}
            if too_deep(parsed):  # it would not render: see transcript.MAX_DEPTH
                raise RecursionError
            tool_input = parsed
        except json.JSONDecodeError as exc:
            notes.warn(N_("{where}: the arguments of {name} are not valid JSON ({error}); kept as the raw string"),
                       where=where, name=quoted(function.get("name")), error=exc.msg)
        except NumberTooLong:  # its words, said here so that they can be translated
            notes.warn(N_("{where}: the arguments of {name} cannot be read (it holds a whole number too long to read "
                          "(over 4,300 digits)); kept as the raw string"), where=where, name=quoted(function.get("name")))
        except RecursionError:
            notes.warn(N_("{where}: the arguments of {name} nest too deeply to read; kept as the raw string"),
                       where=where, name=quoted(function.get("name")))
    return {"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": tool_input}


def read_messages(items: list, notes: Notes, where: str = "messages") -> Parsed:
    parsed = Parsed()
    systems: list[str] = []
    collecting = False  # the last message is a user message of tool_results, still taking more
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            notes.count(N_("passed over messages that are not objects"), at)
            continue
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            systems.append(_text(content))
            if parsed.messages:
                notes.warn(N_("{where}: a {role} message in the middle of the conversation; the Messages API keeps "
                              "the system prompt outside the messages, so it joins meta.system"), where=at, role=role)
            continue
        if role == "tool":
            if not item.get("tool_call_id"):
                notes.warn(N_("{where}: a tool message without tool_call_id"), where=at)
            output = content if isinstance(content, str) else _parts(content, at, notes) if isinstance(content, list) else ""
            block = tool_result(item.get("tool_call_id"), ToolOutput(output))
            if collecting:
                parsed.messages[-1]["content"].append(block)
            else:
                parsed.messages.append({"role": "user", "content": [block]})
                parsed.origins.append(at)
                collecting = True
            continue
        collecting = False
        if role == "user":
            if isinstance(content, list):
                content = _parts(content, at, notes)
            elif not isinstance(content, str):
                notes.warn(N_("{where}: a user message without content; passed over"), where=at)
                continue
            parsed.messages.append({"role": "user", "content": content})
            parsed.origins.append(at)
        elif role == "assistant":
            blocks: list = []
            if isinstance(content, str) and content:
                blocks.append({"type": "text", "text": content})
            elif isinstance(content, list):
                blocks.extend(_parts(content, at, notes))
            if item.get("refusal"):
                blocks.append({"type": "text", "text": str(item["refusal"])})
            calls = item.get("tool_calls") or []
            for j, call in enumerate(calls if isinstance(calls, list) else []):
                blocks.append(_tool_use(call, f"{at}.tool_calls[{j}]", notes))
            if item.get("function_call"):
                notes.warn(N_("{where}: a legacy function_call (no id to pair a result with); kept raw"), where=at)
                blocks.append({"type": "unknown", "raw": json.dumps(item["function_call"])})
            parsed.messages.append({"role": "assistant", "content": blocks})
            parsed.origins.append(at)
        else:
            notes.warn(N_("{where}: role {role} has no counterpart in the Messages API; passed over"), where=at,
                       role=quoted(role))
    if systems:
        parsed.meta["system"] = "\n\n".join(systems)
    parsed.meta["task"] = next((message_text(m) for m in parsed.messages if m["role"] == "user"), "")
    return parsed


def read_request(body: dict, notes: Notes) -> Parsed:
    """A request body `{model, messages, tools, max_tokens}`; tools become the Messages API's shape."""
    parsed = read_messages(body["messages"], notes)
    if body.get("model"):
        parsed.meta["model"] = body["model"]
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    if max_tokens:
        parsed.meta["max_tokens"] = max_tokens
    tools = []
    given = body.get("tools")
    if given is not None and not isinstance(given, list):
        notes.warn(N_("tools: {tools} is not a list; passed over"), tools=json.dumps(given)[:80])
    for tool in given if isinstance(given, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            tools.append({"name": function.get("name"), "description": function.get("description", ""),
                          "input_schema": function.get("parameters") or {"type": "object"}})
        else:
            notes.warn(N_("tools: {tool} is not a function tool; kept raw"), tool=json.dumps(tool)[:80])
            tools.append(tool)
    if tools:
        parsed.meta["tools"] = tools
    _keep_options(body, parsed, notes)
    return parsed


READ_KEYS = ("messages", "model", "tools", "max_tokens", "max_completion_tokens")


def _keep_options(body: dict, parsed: Parsed, notes: Notes) -> None:
    """The request's other fields (temperature, stream, reasoning or thinking settings, ...): kept as recorded and
    named, since one recorded body does not say which of the history's calls were sent with them."""
    options = {k: v for k, v in body.items() if k not in READ_KEYS}
    if options:
        parsed.meta["request_options"] = options
        notes.warn(N_("the request's options {options} are kept in the transcript (`request_options`), not in any "
                      "step's request: the file records one request, not which calls of the history sent them"),
                   options=", ".join(options))


FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
          "content_filter": "refusal"}


def read_response(response: dict, notes: Notes) -> tuple[dict, dict] | None:
    """A chat completion as recorded (`choices[0].message`): (the assistant message in the Messages API's form, the
    response as call_model keeps it), or None when it holds no message."""
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if choice is None or not isinstance(choice.get("message"), dict):
        return None
    parsed = read_messages([{**choice["message"], "role": "assistant"}], notes, where="response.choices[0]")
    if not parsed.messages:
        return None
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    recorded = {"id": response.get("id"), "model": response.get("model"),
                "stop_reason": FINISH.get(choice.get("finish_reason")),
                "usage": {"input_tokens": usage.get("prompt_tokens"), "output_tokens": usage.get("completion_tokens")}}
    return parsed.messages[0], recorded
