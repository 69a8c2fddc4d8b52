"""The offline scripted model: a pure function from a request to a response.

It stands where Anthropic's API stands, behind the real SDK (see `model.py`
and `server.py`), so the requests and responses a learner inspects are real
ones. It reads only the request: the task (the first user message) picks a
play (`scenarios.py`), and the `tool_result`s written back so far decide the
next move. Like the API it checks the tool-use rules on every request and
answers a broken history with the API's own 400 error.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex

from . import rules
from ..text.catalogs import N_, say
from .compact import SUMMARY_PROMPT
from .recovery import is_continuation
from .scenarios import Reply, Seen, compacted, first_text, language_of, play_for, scenario_for_task, summarize
from .waits import scale

SCRIPTED = "scripted"  # the model setting that picks this fake API (the page's and the CLI's default)
MODEL_NAME = "loopscope-scripted"
PLACEHOLDER_KEY = "scripted-offline-no-key"


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))  # a rough, stated estimate: about 4 characters a token


def error_body(message: str, kind: str = "invalid_request_error") -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


NOT_AN_OBJECT = "Input should be a valid dictionary or object to extract fields from"


def _malformed(body: object) -> str | None:
    """What makes `body` no Messages API request at all, in the API's words; None when its shape is right.

    The API checks the shape before the tool-use rules: a list for a body, a number
    for a block or a text that is not a string is a 400, never a dropped connection.
    """
    if not isinstance(body, dict):
        return NOT_AN_OBJECT
    messages = body.get("messages")
    if messages is None:
        return "messages: Field required"
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Input should be a valid integer greater than or equal to 1"
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            continue  # rules.check says it in its words
        if message.get("role") not in ("user", "assistant", "system"):  # e.g. OpenAI's "tool" in a Messages request
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        for j, block in enumerate(content if isinstance(content, list) else []):
            where = f"messages.{i}.content.{j}"
            if not isinstance(block, dict):
                return f"{where}: {NOT_AN_OBJECT}"
            if not isinstance(block.get("type"), str):
                return f"{where}.type: Field required"
            if block["type"] == "text" and not isinstance(block.get("text"), str):
                return f"{where}.text: Input should be a valid string"
    return None


def input_tokens(body: dict) -> int:
    """What a request costs, as the scripted model counts it (about 4 characters a token of its JSON)."""
    # Streaming changes how the answer travels, not what it costs: `stream` is not input.
    return _tokens(json.dumps({k: v for k, v in body.items() if k != "stream"}))


def too_long(tokens: int, maximum: int) -> dict:
    """The API's answer to a prompt longer than the context window (HTTP 400), in its words."""
    return error_body(f"prompt is too long: {tokens} tokens > {maximum} maximum")


def respond(body: object, *, retry: int = 0, context_window: int | None = None) -> tuple[int, dict]:
    """Answer one Messages API request body: (HTTP status, JSON body).

    `retry` is how many times the client had tried this request before (the SDK's
    `x-stainless-retry-count`); `context_window` the tokens a request may hold.
    """
    malformed = _malformed(body)
    if malformed:
        return 400, error_body(malformed)
    messages = body["messages"]
    broken = rules.check(messages, as_request=True)
    if broken:
        return 400, error_body(str(broken[0]))
    if context_window is not None and input_tokens(body) > context_window:
        return 400, too_long(input_tokens(body), context_window)

    task = first_text(messages)
    # The results written back so far, in order: what the model "can see" of its tools.
    results = Seen(b for m in messages if isinstance(m, dict) and m.get("role") == "user"
                   for b in rules.tool_results(m))
    results.retry = retry
    if task.startswith(SUMMARY_PROMPT):  # compaction's summary call
        reply = Reply(summarize(task[len(SUMMARY_PROMPT):]))
    else:
        summarized_task, results.summary = compacted(messages)
        task = summarized_task or task
        reply = play_for(task)(results, language_of(body.get("system"), task))
        reply = _continued(messages, reply)
    if reply.error:
        status, kind, message = reply.error
        return status, error_body(message, kind)

    seed = _digest(body.get("system"), messages)
    content: list[dict] = []
    calls = [("bash", {"command": command}) for command in reply.commands] + list(reply.calls)
    if body.get("tools"):  # the tools the request offers, by their names; none fits: said in words (a request
        # offering none gets the chapter's bash and the file tools, as the offline model always answered one)
        calls, unfit = offered(body.get("tools"), calls)
        if unfit:
            lang = language_of(body.get("system"), task)
            reply = Reply("\n\n".join(t for t in (reply.text.rstrip(), unfit_words(unfit, body.get("tools"), lang))
                                        if t))
    if reply.text:
        content.append({"type": "text", "text": reply.text.rstrip()})
    for n, (name, tool_input) in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_{_digest(seed, n)[:24]}", "name": name, "input": tool_input})
    stop_reason = "tool_use" if calls else "end_turn"
    output_tokens = sum(_tokens(json.dumps(b)) for b in content)
    if not calls and output_tokens > body["max_tokens"]:
        # Cut the answer where a real model would stop: at max_tokens.
        content = [{"type": "text", "text": reply.text[: body["max_tokens"] * 4]}]
        output_tokens = body["max_tokens"]
        stop_reason = "max_tokens"
    return 200, {
        "id": f"msg_{seed[:24]}",
        "type": "message",
        "role": "assistant",
        "model": MODEL_NAME,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens(body), "output_tokens": output_tokens},
    }


COMMAND_TOOLS = ("bash", "shell")
NO_COMMAND_TOOL = N_("None of the tools this request offers runs a command, so I cannot run `{command}`: offer a tool "
                     "named bash (or shell) whose input is a `command` string. Tools offered: {tools}.")
NO_SUCH_TOOL = N_("None of the tools this request offers is `{name}`, so I cannot use it. Tools offered: {tools}.")


def _properties(tool: dict) -> tuple[dict, list]:
    schema = tool.get("input_schema") if isinstance(tool.get("input_schema"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return properties, required


def _takes_command(tool: dict) -> bool:
    command = _properties(tool)[0].get("command")
    return isinstance(command, dict) and command.get("type") == "string"


def command_tool(tools: object) -> str | None:
    """The offered tool a command goes to: one named bash or shell (any case) whose only required property is a
    `command` string, else any tool with a `command` string; None when no tool offered takes a command."""
    named = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)] \
        if isinstance(tools, list) else []
    for tool in named:
        if tool["name"].lower() in COMMAND_TOOLS and _takes_command(tool) and _properties(tool)[1] in (["command"], []):
            return tool["name"]
    return next((tool["name"] for tool in named if _takes_command(tool)), None)


def offered(tools: object, calls: list) -> tuple[list, tuple[str, dict] | None]:
    """The play's tool calls made with the tools the request offers: (the calls, the first that fits none).

    A command goes to the command tool; a file tool (read_file, ...) or `task` to the offered tool of that name in
    any case, and a file read to `cat` when only a command tool is offered. When one call fits no offered tool,
    none is made (the model says why instead)."""
    names = {t["name"].lower(): t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)} \
        if isinstance(tools, list) else {}
    shell = command_tool(tools)
    made = []
    for name, tool_input in calls:
        if name == "bash":
            if shell is None:
                return [], (name, tool_input)
            made.append((shell, tool_input))
        elif name.lower() in names:
            made.append((names[name.lower()], tool_input))
        elif name == "read_file" and shell is not None and isinstance(tool_input.get("path"), str):
            made.append((shell, {"command": "cat -- " + shlex.quote(tool_input["path"])}))
        else:
            return [], (name, tool_input)
    return made, None


def unfit_words(unfit: tuple[str, dict], tools: object, lang: str) -> str:
    """Why the model makes no tool call: the tool it needed is not among those offered."""
    names = ", ".join(f"`{t.get('name')}`" for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ""
    name, tool_input = unfit
    if name == "bash":
        return say(lang, NO_COMMAND_TOOL, command=tool_input.get("command"), tools=names or "-")
    return say(lang, NO_SUCH_TOOL, name=name, tools=names or "-")


def _continued(messages: list, reply: Reply) -> Reply:
    """After a recovery (an answer cut at max_tokens, then "continue"), the rest of the answer: no recap.

    The model reads what it already wrote in the cut answers that end the
    history, each followed by the continuation message, and goes on from there.
    """
    written: list[str] = []
    k = len(messages)
    while k >= 2 and is_continuation(messages[k - 1]) and isinstance(messages[k - 2], dict) \
            and messages[k - 2].get("role") == "assistant":
        written[:0] = [str(b.get("text", "")) for b in rules.blocks(messages[k - 2])
                       if isinstance(b, dict) and b.get("type") == "text"]
        k -= 2
    if k == len(messages) or reply.commands or reply.calls or reply.error:
        return reply
    done = "".join(written)
    return Reply(reply.text[len(done):] if reply.text.startswith(done) else reply.text)


def pace(body: object) -> float:
    """Seconds the scripted model takes to write each block of its answer to this request (0 for most)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return 0.0
    messages = body["messages"]
    task = compacted(messages)[0] or first_text(messages)
    scenario = scenario_for_task(task)
    return scenario.pace * scale() if scenario else 0.0


def blocks_written(message: dict) -> int:
    return len(message.get("content") or []) or 1


def sse_events(message: dict) -> list[tuple[str, dict]]:
    """A response as the stream of server-sent events the API sends for `stream: true`."""
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            text = block["text"]
            for i in range(0, len(text), 40):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": text[i:i + 40]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": dict(block, input={})}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def sse_bytes(message: dict) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in sse_events(message))


def sse_chunks(message: dict, pace: float = 0.0):
    """The same events, one block at a time, `pace` seconds apart: a model writing its answer as it streams."""
    import time

    chunk: list[bytes] = []
    for name, data in sse_events(message):
        chunk.append(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        if name in ("message_start", "content_block_stop"):
            if pace and name == "content_block_stop":
                time.sleep(pace)
            yield b"".join(chunk)
            chunk = []
    yield b"".join(chunk)
