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
from .compact import COMPRESSED, SUMMARY_PROMPT

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
    toolset: str | None = None  # the tools it needs (None: any toolset)
    compact_at: int | None = None  # its auto-compact threshold, with toolset s06


@dataclass(frozen=True)
class Reply:
    text: str = ""
    commands: tuple[str, ...] = ()  # bash commands, one tool_use each
    calls: tuple[tuple[str, dict], ...] = ()  # other tool_use blocks: (tool name, input), after the commands


class Seen(list):
    """The tool_results written back so far, in order (a list, as every play reads it), and the summary a
    compaction left at the start of the history, if any: after a compaction that is all the model knows."""

    summary: str = ""


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


# -- s04: a sub-agent searches, the parent answers from its summary only --
PROJECT = ("mkdir -p src docs && printf 'def add(a, b):\\n    return a + b\\n' > src/maths.py && "
           "printf 'def greet(name):\\n    return f\"Hello, {name}!\"\\n' > src/people.py && "
           "printf '# Notes\\nThe greeting is somewhere in src.\\n' > docs/notes.md && ls -R")
CHILD_PROMPT = ("Find which file under src/ defines the function greet, and what it returns. Search with commands, "
                "read the file, then answer with the path, the line and the return value.")


def _subagent(results: list[dict]) -> Reply:
    if not results:
        return Reply("First I'll write a small project to search.", (PROJECT,))
    if len(results) == 1:
        if results[0].get("is_error"):
            return Reply(f"Writing the project failed:\n{_quote(_out(results[0]))}")
        return Reply("Now I'll delegate the search to a subagent. It starts with a fresh history; only its final "
                     "answer will come back to me.",
                     calls=(("task", {"prompt": CHILD_PROMPT, "description": "find where greet is defined"}),))
    answer = results[-1]
    if answer.get("is_error"):
        return Reply(f"The subagent could not do it:\n{_quote(_out(answer))}")
    return Reply("The subagent answered:\n" + _quote(_out(answer)) + "\n\nThat summary is all I saw of its "
                 "work: its commands and the file it read stayed in its own messages, not in mine.")


def _search(results: list[dict]) -> Reply:
    """The sub-agent's own loop: grep, read the file grep found, answer."""
    if not results:
        return Reply("I'll search the workspace for the definition.", ("grep -rn 'def greet' .",))
    found = re.search(r"^\.?/?(\S+?):(\d+):", _out(results[0]), re.M)
    if found is None:
        return Reply(f"I could not find greet; grep printed:\n{_quote(_out(results[0]))}")
    path, line = found.group(1), found.group(2)
    if len(results) == 1:
        return Reply(f"grep found it in {path}, line {line}. I'll read the file.", calls=(("read_file", {"path": path}),))
    returns = next((ln.strip()[len("return "):] for ln in _lines(results[1]) if ln.strip().startswith("return ")), None)
    if results[1].get("is_error") or returns is None:
        return Reply(f"greet is defined in {path}, line {line}, but reading it failed:\n{_quote(_out(results[1]))}")
    return Reply(f"greet is defined in `{path}` at line {line}. It returns `{returns}`. "
                 "(I ran one command and read one file.)")


# -- s06: reads files until micro-compact, then auto-compact, happen; finishes from the summary --
PARTS = 5
MAKE_PARTS = ("for i in 1 2 3 4 5; do for j in $(seq 1 16); do "
              "echo \"part $i, line $j: the loop calls the model, runs each tool, writes the results back.\"; "
              "done > part$i.txt; done; echo 'part 5, line 17: a falcon circles over the loop.' >> part5.txt; ls -l")
NO_FALCON = "part{n}.txt does not mention the falcon."


def _part_read(result: dict) -> int | None:
    found = re.match(r"\s*(?:\d+\s+)?part (\d+), line", _out(result))
    return int(found.group(1)) if found else None


def _falcon(results: list[dict]) -> Reply:
    summary = getattr(results, "summary", "")
    known = {int(n) for n in re.findall(r"part(\d+)\.txt does not mention the falcon", summary)}
    if not results and not summary:
        return Reply("I'll write the five parts first.", (MAKE_PARTS,))
    newest = summary.split("the newest said:\n", 1)[1] if "the newest said:\n" in summary else ""
    if re.search(r"\n… \(\d+ more characters\)$", newest):
        newest = ""  # cut short in the summary: that part must be read again
    last = results[-1] if results else {"type": "tool_result", "content": newest} if newest else None
    said = ""
    if last is not None and _part_read(last):
        n = _part_read(last)
        line = next((ln for ln in _lines(last) if "falcon" in ln), None)
        if line:
            before = (f"\n\nMy history was compacted on the way: I know that "
                      f"{', '.join(f'part{k}.txt' for k in sorted(known))} had no falcon only from the summary "
                      "it left." if known else "")
            return Reply(f"part{n}.txt mentions the falcon:\n    {line.strip()}{before}")
        known.add(n)
        said = NO_FALCON.format(n=n) + " "
    elif last is not None and last.get("is_error"):
        return Reply(f"That failed, so I stop here:\n{_quote(_out(last))}")
    known |= {n for n in (_part_read(r) for r in results[:-1]) if n}
    left = [n for n in range(1, PARTS + 1) if n not in known]
    if not left:
        return Reply(said + "No part mentions the falcon.")
    return Reply(said + f"Next, part{left[0]}.txt.", calls=(("read_file", {"path": f"part{left[0]}.txt"}),))


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
    Scenario("subagent", "Which file in src/ defines greet, and what does it return? Delegate the search to a subagent.",
             N_("s04: a task tool_use runs a sub-agent's loop with fresh messages; only its answer comes back"),
             _subagent, toolset="s04"),
    Scenario("compact", "Read part1.txt to part5.txt one by one (write them first) and tell me which one mentions "
             "the falcon.",
             N_("s06: old tool_results are micro-compacted, then the history is summarised; the loop goes on from "
                "the summary"), _falcon, toolset="s06", compact_at=2100),
]}
CHILDREN = {CHILD_PROMPT: _search}  # the sub-agents' tasks the scripted model knows, by their prompt


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


LATEST_CHARS = 2000


def summarize(conversation: str) -> str:
    """The scripted model's summary for compaction: the task, what each turn said and did, where it stands.

    It reads only what the summary call sent (the conversation's JSON, maybe cut at its start), so after a
    compaction the model knows exactly this and nothing more.
    """
    try:
        messages = json.loads(conversation)
    except ValueError:  # cut at 80,000 characters: read what the messages' text fields still hold
        messages = [{"role": "assistant", "content": [{"type": "text", "text": t}]}
                    for t in re.findall(r'"text": "((?:[^"\\]|\\.)*)"', conversation)]
    messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    first = _first_text(messages)
    earlier = first.split("\n\n", 1)[1] if first.startswith(COMPRESSED) and "\n\n" in first else ""
    task = next((line[len("Task: "):] for line in earlier.splitlines() if line.startswith("Task: ")), first)
    done = [line for line in earlier.splitlines() if line.startswith("- ")]
    calls = 0
    for message in messages[1:] if first else messages:
        for block in rules.blocks(message):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and message.get("role") == "assistant" and block.get("text", "").strip():
                done.append("- said: " + " ".join(str(block["text"]).split()))
            elif block.get("type") == "tool_use":
                calls += 1
                done.append(f"- used {block.get('name')} {json.dumps(block.get('input'), ensure_ascii=False)}")
    results = [b for m in messages for b in rules.tool_results(m)]
    if results:  # the newest result in full (a summary keeps the critical details): nobody has read it yet
        latest = _out(results[-1])
        cut = f"\n… ({len(latest) - LATEST_CHARS} more characters)" if len(latest) > LATEST_CHARS else ""
        state = [f"Current state: {len(results)} tool_result(s) since the last summary; the newest said:",
                 latest[:LATEST_CHARS] + cut]
    else:
        state = ["Current state: no tool has run since the last summary."]
    return "\n".join([f"Task: {task}", "What was done:", *(done or ["- nothing yet"]), *state])


def _compacted(messages: list) -> tuple[str, str]:
    """(the task, the summary) of a history that begins with a compaction's summary; ("", "") otherwise."""
    first = _first_text(messages)
    if not first.startswith(COMPRESSED):
        return "", ""
    summary = first.split("\n\n", 1)[1] if "\n\n" in first else ""
    task = next((line[len("Task: "):] for line in summary.splitlines() if line.startswith("Task: ")), "")
    return task, summary


def respond(body: dict) -> tuple[int, dict]:
    """Answer one Messages API request body: (HTTP status, JSON body)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, error_body("messages: Field required" if messages is None else "messages: at least one message is required")
    if not isinstance(body.get("max_tokens"), int):
        return 400, error_body("max_tokens: Field required")
    broken = rules.check(messages, as_request=True)
    if broken:
        return 400, error_body(str(broken[0]))

    task = _first_text(messages)
    # The results written back so far, in order: what the model "can see" of its tools.
    results = Seen(b for m in messages if isinstance(m, dict) and m.get("role") == "user"
                   for b in rules.tool_results(m))
    if task.startswith(SUMMARY_PROMPT):  # compaction's summary call
        reply = Reply(summarize(task[len(SUMMARY_PROMPT):]))
    else:
        summarized_task, results.summary = _compacted(messages)
        task = summarized_task or task
        scenario = scenario_for_task(task)
        play = scenario.play if scenario else CHILDREN.get(task) or _free_form(task)
        reply = play(results)

    seed = _digest(body.get("system"), messages)
    content: list[dict] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    calls = [("bash", {"command": command}) for command in reply.commands] + list(reply.calls)
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
