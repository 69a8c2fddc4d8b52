"""Agent files written as learners write them run unchanged with `python -m loop yours FILE`.

Each file here is written in the shape learners' files take (after the course's chapter files): python-dotenv,
a client of their own (base_url, api_key, an Authorization header), `MODEL = os.environ["MODEL_ID"]`, their own
`run_bash` with subprocess, a dispatch map, an `input()` REPL under `if __name__ == "__main__"`, agent_loop(messages)
or agent_loop(state), the openai SDK with tool_calls against a provider's https address, modules of their own and
a package with relative imports, a byte-order mark, `max_tokens=8000`. Run on two-tools, each exits 0 and every
tool_use (or tool_call) a response asked for has its run_tool step with that id in the transcript.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from unittest import mock

import pytest

from loop.files import transcript
from loop.engine.scenarios import SCENARIOS

from .cli import clean_env

S01 = '''#!/usr/bin/env python3
"""My agent loop, after the course's s01."""
import os
import subprocess

from anthropic import Anthropic
from dotenv import load_dotenv

load_dotenv(override=True)

client = Anthropic(
    api_key=os.getenv("ANTHROPIC_API_KEY"),
    base_url=os.getenv("ANTHROPIC_BASE_URL"),
    default_headers={"Authorization": f"Bearer {os.getenv('ANTHROPIC_API_KEY')}"},
)
MODEL = os.environ["MODEL_ID"]
SYSTEM = f"You are a coding agent at {os.getcwd()}. Use bash to solve tasks."
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def run_bash(command: str) -> str:
    r = subprocess.run(command, shell=True, cwd=os.getcwd(), capture_output=True, text=True, timeout=120)
    out = (r.stdout + r.stderr).strip()
    return out[:50000] if out else "(no output)"


def agent_loop(messages: list):
    while True:
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=TOOLS,
                                          max_tokens=8000)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                print(f"\\033[33m$ {block.input['command']}\\033[0m")
                output = run_bash(block.input["command"])
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    history = []
    while True:
        try:
            query = input("\\033[36ms01 >> \\033[0m")
        except (EOFError, KeyboardInterrupt):
            break
        if query.strip().lower() in ("q", "exit", ""):
            break
        history.append({"role": "user", "content": query})
        agent_loop(history)
        for block in history[-1]["content"]:
            if hasattr(block, "text"):
                print(block.text)
'''

OPENAI = '''import json
import os
import subprocess
import sys

from openai import OpenAI
from dotenv import load_dotenv

load_dotenv()
client = OpenAI(base_url="https://api.deepseek.com/v1", api_key=os.getenv("DEEPSEEK_API_KEY"))
MODEL = os.getenv("OPENAI_MODEL_ID", "deepseek-chat")
SYSTEM = "You are a coding agent. Use bash to solve tasks."
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


def run_bash(command):
    r = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    return (r.stdout + r.stderr).strip() or "(no output)"


def agent_loop(messages):
    while True:
        response = client.chat.completions.create(model=MODEL, messages=[{"role": "system", "content": SYSTEM},
                                                                          *messages],
                                                  tools=TOOLS, max_tokens=8000)
        message = response.choices[0].message
        messages.append({"role": "assistant", "content": message.content, "tool_calls": message.tool_calls})
        if not message.tool_calls:
            return
        for call in message.tool_calls:
            command = json.loads(call.function.arguments)["command"]
            WRITE_BACK
'''
OPENAI_WRITE_BACK = ('messages.append({"role": "tool", "tool_call_id": call.id, "content": run_bash(command)})\n'
                     + '''

if __name__ == "__main__":
    history = []
    while True:
        try:
            query = input("> ")
        except EOFError:
            break
        history.append({"role": "user", "content": query})
        agent_loop(history)
        print(history[-1]["content"])
''')

# s02's shape, split into modules of the learner's own: tools.py beside the file, and a package with relative imports
TOOLS_MODULE = '''import subprocess
from pathlib import Path

WORKDIR = Path.cwd()


def run_bash(command: str) -> str:
    r = subprocess.run(command, shell=True, cwd=WORKDIR, capture_output=True, text=True, timeout=120)
    return (r.stdout + r.stderr).strip()[:50000] or "(no output)"


def run_read(path: str, limit: int = None) -> str:
    return (WORKDIR / path).read_text()[:50000]


TOOL_HANDLERS = {
    "bash": lambda **kw: run_bash(kw["command"]),
    "read_file": lambda **kw: run_read(kw["path"], kw.get("limit")),
}
TOOLS = [
    {"name": "bash", "description": "Run a shell command.",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "read_file", "description": "Read file contents.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
]
'''
STATE_LOOP = '''import os
from dataclasses import dataclass, field

import anthropic
from dotenv import load_dotenv

from IMPORT import TOOL_HANDLERS, TOOLS

load_dotenv(override=True)
client = anthropic.Anthropic(base_url=os.getenv("ANTHROPIC_BASE_URL"))
MODEL = os.environ["MODEL_ID"]


@dataclass
class LoopState:
    messages: list = field(default_factory=list)
    turn_count: int = 1
    transition_reason: str | None = None


def agent_loop(state: LoopState):
    while True:
        response = client.messages.create(model=MODEL, system="Use tools.", messages=state.messages, tools=TOOLS,
                                          max_tokens=8000)
        state.messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            state.transition_reason = None
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                handler = TOOL_HANDLERS.get(block.name)
                output = handler(**block.input) if handler else f"Unknown tool: {block.name}"
                print(f"> {block.name}: {output[:200]}")
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        state.messages.append({"role": "user", "content": results})
        state.turn_count += 1
        state.transition_reason = "tool_result"


if __name__ == "__main__":
    query = input("s02 >> ")
    agent_loop(LoopState(messages=[{"role": "user", "content": query}]))
'''

# Plain HTTP, no SDK: urllib against the Messages API, a key header of its own
URLLIB = '''import json
import os
import subprocess
import urllib.request

URL = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com") + "/v1/messages"
TOOLS = [{"name": "bash", "description": "Run a shell command.",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]


def call(messages):
    body = json.dumps({"model": os.environ["MODEL_ID"], "max_tokens": 8000, "tools": TOOLS,
                       "messages": messages}).encode()
    request = urllib.request.Request(URL, data=body, headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                                              "content-type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


messages = [{"role": "user", "content": input()}]
while True:
    response = call(messages)
    messages.append({"role": "assistant", "content": response["content"]})
    if response["stop_reason"] != "tool_use":
        break
    results = []
    for block in response["content"]:
        if block["type"] == "tool_use":
            out = subprocess.run(block["input"]["command"], shell=True, capture_output=True, text=True).stdout
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": out or "(no output)"})
    messages.append({"role": "user", "content": results})
print(response["content"][0]["text"])
'''


# s04's shape: a sub-agent of its own, with fresh messages, behind a `task` tool
S04 = '''import os
import subprocess
from pathlib import Path

from anthropic import Anthropic
from dotenv import load_dotenv

load_dotenv(override=True)
client = Anthropic(api_key=os.getenv("ANTHROPIC_API_KEY"), base_url=os.getenv("ANTHROPIC_BASE_URL"))
MODEL = os.environ["MODEL_ID"]
WORKDIR = Path.cwd()
SYSTEM = "Use the task tool to delegate."
SUBAGENT_SYSTEM = "You are a subagent."


def run_bash(command):
    r = subprocess.run(command, shell=True, cwd=WORKDIR, capture_output=True, text=True, timeout=120)
    return (r.stdout + r.stderr).strip() or "(no output)"


def run_read(path, limit=None):
    return (WORKDIR / path).read_text()


TOOL_HANDLERS = {"bash": lambda **kw: run_bash(kw["command"]), "read_file": lambda **kw: run_read(kw["path"])}
CHILD_TOOLS = [
    {"name": "bash", "description": "Run", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "read_file", "description": "Read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
]
PARENT_TOOLS = CHILD_TOOLS + [{"name": "task", "description": "Spawn a subagent", "input_schema": {"type": "object", "properties": {"prompt": {"type": "string"}, "description": {"type": "string"}}, "required": ["prompt"]}}]


def run_subagent(prompt):
    sub_messages = [{"role": "user", "content": prompt}]
    for _ in range(30):
        response = client.messages.create(model=MODEL, system=SUBAGENT_SYSTEM, messages=sub_messages, tools=CHILD_TOOLS, max_tokens=8000)
        sub_messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            break
        results = []
        for block in response.content:
            if block.type == "tool_use":
                handler = TOOL_HANDLERS.get(block.name)
                output = handler(**block.input) if handler else f"Unknown tool: {block.name}"
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": str(output)[:50000]})
        sub_messages.append({"role": "user", "content": results})
    return "".join(b.text for b in response.content if hasattr(b, "text")) or "(no summary)"


def agent_loop(messages):
    while True:
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=PARENT_TOOLS, max_tokens=8000)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type == "tool_use":
                if block.name == "task":
                    output = run_subagent(block.input["prompt"])
                else:
                    output = TOOL_HANDLERS[block.name](**block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": str(output)})
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    history = []
    while True:
        try:
            query = input("s04 >> ")
        except (EOFError, KeyboardInterrupt):
            break
        history.append({"role": "user", "content": query})
        agent_loop(history)
'''


def yours(file: Path, *args: str, cwd: Path) -> tuple[int, str]:
    """`python -m loop yours FILE ARGS` through `main`, from the folder `cwd`: its exit status and what it printed."""
    from loop.__main__ import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, clean_env(), clear=True), contextlib.chdir(cwd), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["yours", str(file), *args])
    return code, out.getvalue()


def every_tool_use_ran(path: Path) -> list[str]:
    """The ids of every tool_use the transcript's responses asked for, each checked to have its run_tool step."""
    trace = transcript.load(path)
    asked = [b["id"] for s in trace.steps if s.stage == "call_model"
             for b in s.detail.response["content"] if b["type"] == "tool_use"]
    ran = [s.detail.tool_use_id for s in trace.steps if s.stage == "run_tool"]
    assert asked and ran == asked, (asked, ran)
    return asked


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text.encode("utf-8-sig" if name.endswith("bom.py") else "utf-8"))
    return tmp_path


@pytest.mark.parametrize("files, run, expect_printed", [
    ({"agent_bom.py": S01, ".env": "MODEL_ID=claude-from-my-env\n"}, "agent_bom.py", "$ date -u"),
    ({"agents/chat.py": OPENAI.replace("WRITE_BACK", OPENAI_WRITE_BACK)}, "agents/chat.py", "> "),
    ({"tools.py": TOOLS_MODULE, "s02.py": STATE_LOOP.replace("IMPORT", "tools")}, "s02.py", "> bash:"),
    ({"myagent/__init__.py": "", "myagent/tools.py": TOOLS_MODULE,
      "myagent/main.py": STATE_LOOP.replace("IMPORT", ".tools")}, "myagent/main.py", "> bash:"),
    ({"plain.py": URLLIB}, "plain.py", "Two tool calls in one turn"),
    ({"plain.py": URLLIB.replace("import urllib.request\n", "import requests\n").replace(
        """    request = urllib.request.Request(URL, data=body, headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                                              "content-type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)""", """    answer = requests.post(URL, data=body, headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]}, timeout=60)
    return answer.json()""")}, "plain.py", "Two tool calls in one turn"),
], ids=["s01-dotenv-bom", "openai-tool-calls", "modules-of-its-own", "package-relative-imports", "urllib",
        "requests"])
def test_a_learners_file_runs_unchanged_and_every_tool_use_has_its_run_tool_step(tmp_path, files, run,
                                                                                 expect_printed):
    folder = project(tmp_path / "project", files)
    out = tmp_path / "t.json"
    code, said = yours(folder / run, "--scenario", "two-tools", "--out", str(out), cwd=folder)
    assert code == 0, said
    assert "every rule kept" in said and "broken rule" not in said and "error:" not in said
    assert "what your program printed:" in said and expect_printed in said
    assert "\x1b" not in said and "\\x1b" not in said  # its colours as a terminal shows them: not at all
    ids = every_tool_use_ran(out)
    trace = transcript.load(out)
    runs = [s for s in trace.steps if s.stage == "run_tool"]
    assert [s.detail["ran_by"] for s in runs] == ["program"] * len(ids)  # its own code ran them, by its report
    assert all(s.detail["reported"]["line"] for s in runs)
    assert not any("also_ran" in s.detail for s in trace.steps)  # the SDKs' own subprocesses are not the program's
    assert SCENARIOS["two-tools"].task in said  # typed into its input(), echoed as a terminal does
    if run == "agent_bom.py":  # its .env, read by python-dotenv from its own folder, wins over what is set
        assert trace.steps[1].detail.request["model"] == "claude-from-my-env"
    if run == "agents/chat.py":
        assert trace.meta["dialect"] == "openai" and all(i.startswith("call_") for i in ids)
    if run == "s02.py":  # the transcript keeps the module of its own it imported, to be drawn beside its steps
        assert trace.meta["yours"]["file"] == "s02.py" and trace.meta["yours"]["files"] == {"tools.py": TOOLS_MODULE}
    else:
        assert "files" not in trace.meta["yours"] or run == "myagent/main.py"


def test_a_missing_library_and_a_module_not_given_exit_1_with_what_the_sandbox_has(tmp_path):
    from loop.yours.sandboxed import missing_words

    folder = project(tmp_path, {"uses_mine.py": "from helpers import run_bash\n"})
    code, said = yours(folder / "uses_mine.py", cwd=folder)  # a module of its own, not in the folder it runs from
    assert code == 1, said
    assert ("error: No module named 'helpers': helpers is not available in the sandbox (it has: anthropic, openai, "
            "python-dotenv") in said
    assert "If helpers is a module of your own, run the file from your project folder" in said
    assert "broken rule" not in said
    # A library the sandbox lacks takes the same way out of it (the name its import failed on, as above): its words
    # are these, and a module the sandbox has is never called missing
    assert missing_words("langchain_anthropic").render().startswith(
        "No module named 'langchain_anthropic': langchain_anthropic is not available in the sandbox (it has: "
        "anthropic, openai, python-dotenv")
    assert missing_words("anthropic") is None and missing_words("json") is None and missing_words("dotenv") is None


def test_a_write_back_with_role_tool_in_an_anthropic_request_is_a_broken_rule_at_its_call(tmp_path):
    wrong = S01.replace('messages.append({"role": "user", "content": results})',
                        'messages.extend({"role": "tool", "tool_call_id": r["tool_use_id"], "content": r["content"]}'
                        ' for r in results)')
    folder = project(tmp_path, {"agent.py": wrong})
    code, said = yours(folder / "agent.py", "--scenario", "two-tools", cwd=folder)
    assert code == 1, said
    assert "broken rule: no-write-back: call 2:" in said
    assert "the API's error: 400 messages.2.role: Input should be 'user' or 'assistant'" in said


def test_an_openai_loop_that_forgets_the_tool_messages_gets_openais_own_words(tmp_path):
    folder = project(tmp_path, {"chat.py": OPENAI.replace("WRITE_BACK", "run_bash(command)\n" + OPENAI_WRITE_BACK.split(
        "\n", 1)[1])})
    code, said = yours(folder / "chat.py", "--scenario", "two-tools", cwd=folder)
    assert code == 1, said
    assert "broken rule: no-write-back" in said
    assert ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: call_") in said


def test_a_sub_agent_of_the_learners_own_is_drawn_as_a_thread_inside_its_task(tmp_path):
    folder = project(tmp_path, {"s04.py": S04})
    out = tmp_path / "t.json"
    code, said = yours(folder / "s04.py", "--scenario", "subagent", "--out", str(out), cwd=folder)
    assert code == 0, said
    trace = transcript.load(out)
    (child,) = [t for t in trace.threads.values() if t.parent is not None]
    task = next(s for s in trace.steps if s.stage == "run_tool" and s.detail.name == "task")
    assert task.detail.thread == child.id and child.parent_tool_use_id == task.detail.tool_use_id
    inside = [s for s in trace.steps if s.thread == child.id]
    assert inside[0].stage == "user_request" and inside[0].detail.started_by == task.detail.tool_use_id
    assert trace.steps.index(inside[-1]) < trace.steps.index(task)  # its steps sit inside the task's run_tool
    assert [s.stage for s in inside].count("call_model") == 3
    [checked] = [main_check(out)]
    assert "ok: thread " + child.id in checked


def main_check(path: Path) -> str:
    from loop.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check", str(path)]) == 0
    return out.getvalue()
