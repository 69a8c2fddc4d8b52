"""Made-up sessions for the tests and the benchmarks: a long run made by the real engine, and a long
Claude Code log written the way Claude Code writes one."""

from __future__ import annotations

import json
import random
import tempfile
import uuid as uuidlib
from datetime import datetime, timedelta, timezone

WORDS = ("the loop calls the model then runs each tool_use and writes every tool_result back into messages "
         "so the next call sees what the tools printed file test python error line count result").split()


def echo_tool():
    """`bash` by name and schema, echoing the command back: a stand-in that runs nothing."""
    from loop.tools import Tool, ToolOutput

    class Echo(Tool):
        name = "bash"
        description = "Echo the command back (a stand-in that runs nothing)."
        input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

        def run(self, tool_input, workspace):
            return ToolOutput(f"ran: {tool_input['command']}\nline 2 of its output")

    return Echo()


def long_trace(n_messages: int):
    """A finished run whose history has exactly `n_messages` messages (an odd count rounds up)."""
    from loop.engine.model import ModelConfig, Reply
    from loop.engine.runner import Run
    from loop.tools import ToolBox

    turns = max(1, (n_messages + 1) // 2)  # each turn adds an assistant message and a user one; the last only one

    class Counting:
        """A model that asks for one command a turn, then answers."""

        config = ModelConfig()
        name = "synthetic-counting-model"

        def create(self, messages, tools, observer=None):
            turn = sum(1 for m in messages if m["role"] == "assistant") + 1
            if turn < turns:
                content = [{"type": "text", "text": f"Turn {turn}: one more command."},
                           {"type": "tool_use", "id": f"toolu_{turn:06d}", "name": "bash",
                            "input": {"command": f"echo {turn}"}}]
                stop = "tool_use"
            else:
                content, stop = [{"type": "text", "text": f"Done after {turn} turns."}], "end_turn"
            response = {"id": f"msg_{turn:06d}", "type": "message", "role": "assistant", "model": self.name,
                        "content": content, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 10 * turn, "output_tokens": 20}}
            request = {"model": self.name, "max_tokens": 8000, "system": self.config.system, "tools": tools}
            return Reply(response=response, request=request, duration_ms=0.0)

    run = Run(f"Count to {turns} with one command a turn.", Counting(), ToolBox([echo_tool()], tempfile.gettempdir()),
              max_turns=turns + 1)
    run.run_to_end()
    return run.trace


def threaded_trace(main_messages: int = 2000, child_messages: int = 200, after: int = 3):
    """A finished run whose main thread has about `main_messages` messages; `after` turns before its end it
    calls `task`, and the sub-agent's loop has about `child_messages` of its own."""
    from loop.engine.model import ModelConfig, Reply
    from loop.engine.runner import Run
    from loop.engine.subagent import Task
    from loop.tools import ToolBox

    main_turns, child_turns = max(after + 2, main_messages // 2), max(1, child_messages // 2)

    class Counting:
        config = ModelConfig()
        name = "synthetic-counting-model"

        def create(self, messages, tools, observer=None, **settings):
            child = messages[0]["content"] == "the sub-task"
            turn = sum(1 for m in messages if m["role"] == "assistant") + 1
            last = child_turns if child else main_turns
            if child or turn != main_turns - after:
                use = {"type": "tool_use", "id": f"toolu_{'c' if child else 'm'}{turn:06d}", "name": "bash",
                       "input": {"command": f"echo {turn}"}}
            else:
                use = {"type": "tool_use", "id": "toolu_task", "name": "task",
                       "input": {"prompt": "the sub-task", "description": "a long sub-task"}}
            if turn < last:
                content, stop = [{"type": "text", "text": f"Turn {turn}: one more."}, use], "tool_use"
            else:
                content, stop = [{"type": "text", "text": f"Done after {turn} turns."}], "end_turn"
            response = {"id": f"msg_{turn:06d}", "type": "message", "role": "assistant", "model": self.name,
                        "content": content, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 10 * turn, "output_tokens": 20}}
            return Reply(response=response, request={"model": self.name, "max_tokens": 8000}, duration_ms=0.0)

    run = Run(f"Count to {main_turns}, with a sub-task near the end.", Counting(),
              ToolBox([echo_tool(), Task()], tempfile.gettempdir()), max_turns=main_turns + 1)
    run.frames[0].max_turns = main_turns + 1
    import loop.engine.subagent as subagent

    limit, subagent.MAX_TURNS = subagent.MAX_TURNS, child_turns + 1  # a sub-agent longer than the course's 30 turns
    try:
        run.run_to_end()
    finally:
        subagent.MAX_TURNS = limit
    return run.trace


def long_transcript(n_messages: int) -> str:
    from loop.files.transcript import dumps

    return dumps(long_trace(n_messages))


class _Log:
    """Appends records the way Claude Code writes them, keeping the chain."""

    def __init__(self, rng: random.Random, session: str):
        self.rng = rng
        self.session = session
        self.lines: list[str] = []
        self.clock = datetime(2025, 11, 23, 9, 0, tzinfo=timezone.utc)
        self.n_ids = 0

    def uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi)))

    def write(self, record: dict) -> None:
        self.clock += timedelta(milliseconds=self.rng.randint(5, 3000))
        record.setdefault("timestamp", self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
        self.lines.append(json.dumps(record, ensure_ascii=False))

    def record(self, kind: str, parent: str | None, message: dict, side: str | None = None, **extra) -> str:
        uid = self.uuid()
        record = {"parentUuid": parent, "isSidechain": side is not None, "userType": "external",
                  "cwd": "/home/learner/project", "sessionId": self.session, "version": "2.0.49",
                  "gitBranch": "main", "type": kind, "message": message, "uuid": uid}
        if side is not None:
            record["agentId"] = side
        record.update(extra)
        self.write(record)
        return uid

    def noise(self, parent: str | None) -> str | None:
        """A record that is not a message; a `system` one sits in the chain, the others beside it."""
        kind = self.rng.choice(["file-history-snapshot", "queue-operation", "system", "progress"])
        if kind == "system":
            uid = self.uuid()
            self.write({"parentUuid": parent, "isSidechain": False, "type": "system", "subtype": "turn_duration",
                        "content": "turn took a while", "level": "info", "uuid": uid, "sessionId": self.session})
            return uid
        if kind == "progress":
            self.write({"parentUuid": parent, "isSidechain": False, "type": "progress", "uuid": self.uuid(),
                        "data": {"type": "bash_progress", "output": self.words(3, 10)}, "sessionId": self.session})
        elif kind == "file-history-snapshot":
            self.write({"type": "file-history-snapshot", "messageId": self.uuid(),
                        "snapshot": {"trackedFileBackups": {}, "timestamp": self.clock.isoformat()},
                        "isSnapshotUpdate": False})
        else:
            self.write({"type": "queue-operation", "operation": "enqueue", "content": self.words(2, 6),
                        "sessionId": self.session})
        return parent

    def turn(self, parent: str, side: str | None, n_tools: int, tool: str = "Bash") -> tuple[str, list[str]]:
        """One response written a line a block (thinking, text, each tool_use), then its results."""
        self.n_ids += 1
        mid = f"msg_{self.n_ids:024d}"
        base = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": self.rng.randint(5, 50), "output_tokens": self.rng.randint(20, 400),
                          "cache_read_input_tokens": self.rng.randint(1000, 90000)}}
        node = self.record("assistant", parent, {**base, "content": [
            {"type": "thinking", "thinking": self.words(20, 80), "signature": "sig" + self.uuid()}]}, side)
        node = self.record("assistant", node, {**base, "content": [{"type": "text", "text": self.words(10, 60)}]}, side)
        uses = []
        for _ in range(n_tools):
            tid = "toolu_" + self.uuid().replace("-", "")[:24]
            command = f"grep -rn '{self.rng.choice(WORDS)}' src | head -{self.rng.randint(5, 40)}"
            block = {"type": "tool_use", "id": tid, "name": tool,
                     "input": {"command": command} if tool == "Bash" else {"prompt": self.words(8, 20)}}
            node = self.record("assistant", node, {**base, "content": [block]}, side)
            uses.append((node, tid))
        last = node
        for use_node, tid in uses:  # each result hangs off the line of its own tool_use
            output = "\n".join(self.words(4, 14) for _ in range(self.rng.randint(1, 25)))
            is_error = self.rng.random() < 0.1
            last = self.record("user", use_node, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid, "content": output, "is_error": is_error}]}, side,
                toolUseResult={"stdout": "" if is_error else output, "stderr": output if is_error else "",
                               "interrupted": False, "isImage": False})
        return last, [tid for _, tid in uses]

    def answer(self, parent: str, side: str | None = None) -> str:
        self.n_ids += 1
        return self.record("assistant", parent, {
            "id": f"msg_{self.n_ids:024d}", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text", "text": self.words(20, 120)}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 150}}, side)

    def ask(self, parent: str | None) -> str:
        return self.record("user", parent, {"role": "user", "content": self.words(6, 30)})


def claude_code_log(records: int = 5000, seed: int = 1) -> bytes:
    """A Claude Code session log of `records` lines (at least 60): tasks of several turns, tools run one or
    three at a time, one sub-agent (sidechain) thread, and noise records beside the chain."""
    rng = random.Random(seed)
    log = _Log(rng, "0b7c2d1e-5f60-4a3b-9c8d-7e6f5a4b3c2d")
    log.write({"type": "summary", "summary": "A long generated session", "leafUuid": "unknown"})
    node = log.ask(None)
    sub_agent_done = False
    while len(log.lines) < records - 40:
        for _ in range(rng.randint(1, 6)):
            if not sub_agent_done and len(log.lines) > records // 3:
                # A Task call: the sub-agent works in a sidechain of its own, then the main thread gets its answer.
                node, (task_id,) = _task(log, node)
                sub_agent_done = True
            else:
                node, _ = log.turn(node, None, rng.choice([1, 1, 1, 3]))
            if rng.random() < 0.5:
                node = log.noise(node)
        node = log.answer(node)
        node = log.ask(node)
    node = log.answer(node)
    while len(log.lines) < records:  # make the count exact with records beside the chain
        log.write({"type": "file-history-snapshot", "messageId": log.uuid(), "snapshot": {"trackedFileBackups": {}},
                   "isSnapshotUpdate": True})
    return ("\n".join(log.lines) + "\n").encode()


def _task(log: _Log, parent: str) -> tuple[str, list[str]]:
    log.n_ids += 1
    tid = "toolu_task" + log.uuid().replace("-", "")[:18]
    mid = f"msg_{log.n_ids:024d}"
    node = log.record("assistant", parent, {
        "id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": tid, "name": "Task",
                     "input": {"description": "look around", "prompt": "Find where the loop is tested"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 40}})
    side = "a1b2c3d4"
    sub = log.record("user", None, {"role": "user", "content": "Find where the loop is tested"}, side)
    for _ in range(4):
        sub, _ = log.turn(sub, side, 1)
    sub = log.answer(sub, side)
    node = log.record("user", node, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": "The loop is tested in tests/."}]}]},
        toolUseResult={"status": "completed", "agentId": side, "totalToolUseCount": 4})
    return node, [tid]


def _agent(log: _Log, parent: str, n: int, in_file: bool) -> tuple[str, str, _Log | None]:
    """A Task call whose sub-agent works four turns: in the session's own file (a sidechain) or in a file of its own."""
    log.n_ids += 1
    tid = "toolu_task" + log.uuid().replace("-", "")[:18]
    agent = f"{n:04d}{log.uuid()[:4]}"
    prompt = f"Sub-task {n}: {log.words(6, 14)}"
    node = log.record("assistant", parent, {
        "id": f"msg_{log.n_ids:024d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "tool_use", "id": tid, "name": "Task",
                     "input": {"description": f"sub-task {n}", "prompt": prompt, "subagent_type": "general-purpose"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 40}})
    side = _Log(log.rng, log.session) if in_file else log
    side.clock, side.n_ids = log.clock, log.n_ids
    sub = side.record("user", None, {"role": "user", "content": prompt}, agent)
    for _ in range(4):
        sub, _ = side.turn(sub, agent, 1)
    side.answer(sub, agent)
    log.clock, log.n_ids = side.clock, side.n_ids
    node = log.record("user", node, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": f"Sub-task {n} is done."}]}]},
        toolUseResult={"status": "completed", "agentId": agent, "totalToolUseCount": 4})
    return node, agent, side if in_file else None


def _compaction(log: _Log, parent: str, n: int) -> str:
    """A compact_boundary, then the summary the model sees from there on."""
    boundary = log.uuid()
    log.write({"parentUuid": None, "logicalParentUuid": parent, "isSidechain": False, "type": "system",
               "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info", "uuid": boundary,
               "sessionId": log.session, "compactMetadata": {"trigger": "auto" if n % 2 else "manual",
                                                              "preTokens": 150_000 + n}})
    return log.record("user", boundary, {"role": "user", "content": f"This session is being continued from a previous "
                                                                    f"conversation (compaction {n}). Summary: "
                                                                    + log.words(40, 90)}, isCompactSummary=True)


def claude_code_session(records: int = 5000, compactions: int = 5, agents: int = 20,
                        seed: int = 2) -> tuple[bytes, dict[str, bytes]]:
    """A Claude Code session of about `records` lines in all, with `compactions` compact boundaries and `agents`
    sub-agents: half as sidechains in the session's file, half in `subagents/agent-<id>.jsonl` files of their own.
    Returns (the session's log, {file name: a sub-agent's log})."""
    rng = random.Random(seed)
    log = _Log(rng, "5e6f7a8b-1c2d-4e3f-9a0b-1c2d3e4f5a6b")
    files: dict[str, bytes] = {}
    written = lambda: len(log.lines) + sum(f.count(b"\n") for f in files.values())  # noqa: E731
    node = log.ask(None)
    made_compactions = made_agents = 0
    while written() < records - 40:
        progress = written() / records
        if made_compactions < compactions and progress > (made_compactions + 1) / (compactions + 1):
            made_compactions += 1
            node = _compaction(log, node, made_compactions)
        elif made_agents < agents and progress > (made_agents + 0.5) / (agents + 1):
            made_agents += 1
            node, agent, side = _agent(log, node, made_agents, in_file=made_agents % 2 == 0)
            if side is not None:
                files[f"subagents/agent-{agent}.jsonl"] = ("\n".join(side.lines) + "\n").encode()
        else:
            node, _ = log.turn(node, None, rng.choice([1, 1, 1, 3]))
            if rng.random() < 0.3:
                node = log.noise(node)
            if rng.random() < 0.2:
                node = log.ask(log.answer(node))
    log.answer(node)
    return ("\n".join(log.lines) + "\n").encode(), files


# -- a transcript whose every string is markup ----------------------------------------------------

HOSTILE_FIELDS = ("task", "label", "tool", "id", "path", "model", "stop", "error", "system", "thread", "file")


def hostile(base: str, field: str) -> str:
    """Markup of each kind Streamlit's Markdown or a browser would act on, named after the `field` it goes into:
    an HTML image with an id, a Markdown image, a script link, emphasis, LaTeX and a colour directive. Every
    URL is under `base` (a listener the test owns)."""
    return (f"{field}<img src={base}/{field}.png id=pwn>![i]({base}/{field}-md.png)[l](javascript:alert(1))"
            f"**bold**$x$:red[x]")


def hostile_transcript(base: str) -> str:
    """samples/subagent.json with hostile markup (`hostile()`) in every string a transcript, a model or a student
    controls: the task, the sub-agent's label and the `task` input's description, a tool's name, each tool_use
    id (so the sub-agent's thread name), a read_file path, the model, the last stop_reason, a failed call's
    error (a retry step), the system prompt, and a third thread's id and label (so the thread picker shows). Written in Loopscope's own format, so nothing is normalised."""
    from pathlib import Path

    sample = Path(__file__).resolve().parent.parent / "samples" / "subagent.json"
    data = json.loads(sample.read_text())
    text = json.dumps(data, ensure_ascii=False)

    def swap(old: str, new: str) -> None:
        nonlocal text
        assert json.dumps(old)[1:-1] in text, old
        text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])

    swap(data["task"], hostile(base, "task"))
    swap(data["system"], hostile(base, "system"))
    swap(data["threads"][1]["system"], hostile(base, "system") + " sub")
    swap("find where greet is defined", hostile(base, "label"))  # the label and the description it came from
    swap(data["model"], hostile(base, "model"))
    ids = sorted({b["id"] for m in data["messages"] for b in m["content"] if isinstance(b, dict) and "id" in b}
                 | {b["id"] for t in data["threads"][1:] for m in t["messages"] if isinstance(m["content"], list)
                    for b in m["content"] if "id" in b})
    for n, tool_use_id in enumerate(ids):
        swap(tool_use_id, hostile(base, "id") + str(n))
    data = json.loads(text)

    tool = hostile(base, "tool")
    stop = hostile(base, "stop")
    path = hostile(base, "path")

    def rename(value: object) -> None:  # the tool `bash` wherever it is named, read_file's path in its inputs
        if isinstance(value, dict):
            if value.get("name") == "bash":
                value["name"] = tool
            if value.get("path") == "src/people.py":
                value["path"] = path
            for v in value.values():
                rename(v)
        elif isinstance(value, list):
            for v in value:
                rename(v)

    rename(data)
    last = [i for i, s in enumerate(data["steps"]) if s["thread"] == "main"][-3:]  # call, append, decide
    for i in last:
        data["steps"][i]["stop_reason"] = stop
    data["steps"][last[0]]["detail"]["response"]["stop_reason"] = stop
    data["steps"][last[-1]]["ended"] = stop
    data["steps"][last[-1]]["detail"]["why"] = f"stop_reason {stop}"
    first_call = next(i for i, s in enumerate(data["steps"]) if s["stage"] == "call_model")
    error = {"status": 529, "type": hostile(base, "error") + " type", "message": hostile(base, "error")}
    data["steps"].insert(first_call, {
        "stage": "retry", "turn_count": 1, "transition_reason": None, "stop_reason": None, "n_messages": 1,
        "input_tokens": 0, "output_tokens": 0, "ended": None, "time": data["steps"][first_call]["time"] - 1,
        "thread": "main", "detail": {"error": error, "attempt": 1, "attempts": 4, "gave_up": False, "backoff_s": 1.0,
                                     "jitter_s": 0.1, "wait_s": 1.1, "stage": "call_model",
                                     "why": "the call failed (529 " + error["type"] + "): attempt 1 of 4"}})
    # a third thread, so that the page offers its thread picker: named by its own id (no tool_use started it)
    data["threads"].append({"id": hostile(base, "thread"), "parent": "main", "parent_tool_use_id": None,
                            "label": hostile(base, "thread") + " label", "messages": []})
    return json.dumps(data, ensure_ascii=False, indent=1)
