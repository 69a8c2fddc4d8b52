"""The offline scripted model: a pure function from a request to a response.

It stands where Anthropic's API stands, behind the real SDK (see `model.py`
and `server.py`), so the requests and responses a learner inspects are real
ones. It reads only the request: the task (the first user message) picks a
scenario, and the `tool_result`s written back so far decide the next move. Its
final answers quote what the tools really printed. Like the API it checks the
tool-use rules on every request and answers a broken history with the API's
own 400 error.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Callable

from . import rules
from .catalogs import N_

MODEL_NAME = "loopscope-scripted"
PLACEHOLDER_KEY = "scripted-offline-no-key"


@dataclass(frozen=True)
class Scenario:
    name: str
    task: str
    about: str
    # (results so far: the tool_result blocks written back, in order) -> the next reply
    play: Callable[[list[dict]], "Reply"]
    max_tokens: int = 8000


@dataclass(frozen=True)
class Reply:
    text: str = ""
    commands: tuple[str, ...] = ()


def _out(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _lines(result: dict) -> list[str]:
    return [line for line in _out(result).splitlines() if line.strip()]


def _quote(text: str, limit: int = 12) -> str:
    lines = text.splitlines()
    shown = "\n".join(f"    {line}" for line in lines[:limit])
    more = f"\n    … and {len(lines) - limit} more lines" if len(lines) > limit else ""
    return shown + more


def _list_files(results: list[dict]) -> Reply:
    if not results:
        return Reply("I'll look at what is in the workspace.", ("ls -la",))
    entries = [line.split()[-1] for line in _lines(results[-1]) if not line.startswith("total")]
    entries = [e for e in entries if e not in (".", "..")]
    if results[-1].get("is_error"):
        return Reply(f"`ls` failed:\n{_quote(_out(results[-1]))}")
    if not entries:
        return Reply("The workspace is empty: `ls -la` listed only `.` and `..`.")
    return Reply(f"The workspace holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}: "
                 + ", ".join(f"`{e}`" for e in entries) + ".")


HELLO = "print('Hello from the agent loop!')"


def _hello_py(results: list[dict]) -> Reply:
    if not results:
        return Reply("I'll create hello.py first.", (f"printf '%s\\n' \"{HELLO}\" > hello.py && cat hello.py",))
    if len(results) == 1:
        if results[0].get("is_error"):
            return Reply(f"Writing hello.py failed:\n{_quote(_out(results[0]))}")
        return Reply("hello.py is written. Now I'll run it.", ("python3 hello.py",))
    run = results[-1]
    if run.get("is_error"):
        return Reply(f"Running hello.py failed; Python said:\n{_quote(_out(run))}")
    return Reply(f"I created hello.py and ran it with `python3 hello.py`. It printed:\n{_quote(_out(run))}")


def _recover(results: list[dict]) -> Reply:
    if not results:
        return Reply("I'll count the lines of notes.txt.", ("wc -l notes.txt",))
    last = results[-1]
    if len(results) == 1 and last.get("is_error"):
        return Reply(
            "That failed:\n" + _quote(_out(last)) + "\nnotes.txt does not exist yet, so I'll create it "
            "with three lines and count again.",
            ("printf 'milk\\neggs\\nbread\\n' > notes.txt && wc -l notes.txt",),
        )
    if last.get("is_error"):
        return Reply(f"It failed again, so I'll stop here. The error was:\n{_quote(_out(last))}")
    words = _out(last).split()
    count = words[0] if words and words[0].isdigit() else "an unknown number of"
    recovered = " after creating it" if len(results) > 1 else ""
    return Reply(f"notes.txt has {count} lines{recovered} (`wc -l` printed `{_out(last).strip()}`).")


def _two_tools(results: list[dict]) -> Reply:
    if not results:
        return Reply("I'll ask for both at once.", ("date -u '+%Y-%m-%d %H:%M UTC'", "du -sh ."))
    date, size = (_out(r).strip() for r in results[-2:]) if len(results) >= 2 else (_out(results[0]), "?")
    return Reply(f"Two tool calls in one turn, answered by one message with two tool_results:\n"
                 f"- the date is {date}\n- the workspace uses {size.split()[0] if size.split() else size}")


ESSAY = (
    "Here is everything the loop did, stage by stage. First, the request went into messages as a user "
    "message. Second, the model was called with the system prompt, the messages, the tools and max_tokens. "
    "Third, the assistant's response was appended to messages itself, because the next turn needs it. "
    "Fourth, the stop_reason was read: tool_use meant running each tool_use block and collecting a "
    "tool_result for it. Fifth, the results went back as one user message, and the model was called again. "
)


def _max_tokens(results: list[dict]) -> Reply:
    if not results:
        return Reply("I'll look at the workspace first.", ("ls -la",))
    entries = len([line for line in _lines(results[-1]) if not line.startswith("total")])
    return Reply(f"`ls -la` listed {entries} lines. " + ESSAY * 4)


# Free-form tasks: the scripted model cannot understand them, so it picks a safe,
# read-only command whose topic matches a word of the task and says so.
FREE_COMMANDS = [
    (("python", "version"), "python3 --version"),
    (("date", "time", "day", "clock", "日付", "時間", "时间", "日期"), "date -u"),
    (("disk", "size", "space", "usage", "容量"), "du -sh ."),
    (("who", "user", "whoami"), "whoami"),
    (("count", "lines", "wc"), "wc -l * 2>/dev/null || echo 'no files to count'"),
    (("where", "directory", "folder", "pwd", "path"), "pwd"),
    (("system", "kernel", "os", "uname", "machine"), "uname -a"),
]


def free_command(task: str) -> str:
    """The safe read-only command the scripted model picks for a free-form task."""
    words = set(re.findall(r"\w+", task.lower()))
    for keys, command in FREE_COMMANDS:
        if words & set(keys) or any(k in task for k in keys if not k.isascii()):
            return command
    return "ls -la"


def _free_form(task: str) -> Callable[[list[dict]], Reply]:
    command = free_command(task)

    def play(results: list[dict]) -> Reply:
        if not results:
            return Reply(f"I am Loopscope's offline scripted model. I'll run `{command}`, a safe read-only "
                         "command that matches your task.", (command,))
        verdict = "It failed" if results[-1].get("is_error") else "It printed"
        return Reply(
            f"I ran `{command}`. {verdict}:\n{_quote(_out(results[-1]))}\n\n"
            "I am the offline scripted model: I cannot read a free-form task, only match a few words of it to a "
            "safe command. For a real answer, choose an Anthropic model and give an API key (sidebar, or "
            "ANTHROPIC_API_KEY)."
        )

    return play


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("list-files", "List the files in the workspace.",
             N_("one tool call, then an answer built from its output"), _list_files),
    Scenario("hello-py", "Create hello.py that prints a greeting, then run it.",
             N_("two turns: write a file, run it, report what it printed"), _hello_py),
    Scenario("recover", "How many lines does notes.txt have?",
             N_("a command fails; the model reads the error and recovers"), _recover),
    Scenario("two-tools", "What is the date, and how much disk does the workspace use?",
             N_("two tool_use blocks in one response, answered by one user message"), _two_tools),
    Scenario("max-tokens", "Look at the workspace, then explain the agent loop in full detail.",
             N_("the answer is cut by max_tokens: the loop ends there and says so"), _max_tokens, max_tokens=120),
]}


def scenario_for_task(task: str) -> Scenario | None:
    return next((s for s in SCENARIOS.values() if s.task == task), None)


def _first_text(messages: list) -> str:
    if not messages or not isinstance(messages[0], dict):
        return ""
    return "\n".join(b.get("text", "") for b in rules.blocks(messages[0]) if b.get("type") == "text")


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


def respond(body: object) -> tuple[int, dict]:
    """Answer one Messages API request body: (HTTP status, JSON body)."""
    malformed = _malformed(body)
    if malformed:
        return 400, error_body(malformed)
    messages = body["messages"]
    broken = rules.check(messages, as_request=True)
    if broken:
        return 400, error_body(str(broken[0]))

    task = _first_text(messages)
    scenario = scenario_for_task(task)
    play = scenario.play if scenario else _free_form(task)
    # The results written back so far, in order: what the model "can see" of its tools.
    results = [b for m in messages if isinstance(m, dict) and m.get("role") == "user"
               for b in rules.tool_results(m)]
    reply = play(results)

    seed = _digest(body.get("system"), messages)
    content: list[dict] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for n, command in enumerate(reply.commands):
        content.append({"type": "tool_use", "id": f"toolu_{_digest(seed, n)[:24]}", "name": "bash",
                        "input": {"command": command}})
    stop_reason = "tool_use" if reply.commands else "end_turn"
    output_tokens = sum(_tokens(json.dumps(b)) for b in content)
    if not reply.commands and output_tokens > body["max_tokens"]:
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
        # Streaming changes how the answer travels, not what it costs: `stream` is not input.
        "usage": {"input_tokens": _tokens(json.dumps({k: v for k, v in body.items() if k != "stream"})),
                  "output_tokens": output_tokens},
    }


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
