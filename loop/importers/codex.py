"""OpenAI Codex CLI rollouts: JSON Lines under ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl.

The same loop as Claude Code's, in the Responses API's words. Each line is
`{"timestamp", "type", "payload"}`:

    session_meta   the session: id, cwd, cli_version, originator, instructions (base_instructions in later ones)
    turn_context   the settings of the turn's calls: model, cwd, approval and sandbox policy
    response_item  what the model's input holds, item by item (payload.type):
      message                 role user (the person's words, or Codex's own context: <environment_context>,
                              AGENTS.md), assistant (output_text), developer or system (instructions)
      reasoning               a summary of the model's reasoning (its encrypted_content is opaque: not shown)
      function_call           name, arguments (a JSON string), call_id: a tool_use
      custom_tool_call        name, input (free text, apply_patch's), call_id: a tool_use
      function_call_output,   call_id, output: that call's tool_result
      custom_tool_call_output
    event_msg      what the CLI showed (user_message, agent_message, agent_reasoning: the same words again),
                   token_count (the usage of the call just made), exec_command_end, turn_aborted, ...
    compacted      the history replaced by a summary (payload.message)

Items of one response (reasoning, message, calls) become one assistant message; a `token_count` event closes
it. The outputs that follow become one user message of tool_results, each paired to its `function_call` by
`call_id` (the chapter's stage 5). Older rollouts write the items bare, one a line, after a first line
`{id, timestamp, instructions}`; they are read the same way.
"""

from __future__ import annotations

import json
from datetime import datetime

from ..engine.blocks import tool_result
from ..engine.trace import MAIN
from ..files.transcript import NumberTooLong, parse_json, too_deep
from ..text.catalogs import N_
from ..tools import ToolOutput
from .common import Parsed, ParsedThread, Segment, id_key, origin_of
from ..engine.rules import message_text
from .notes import Note, Notes, on_line

ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call")
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
CONTEXT_MARKS = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>", "<INSTRUCTIONS>",
                 "<permissions instructions>", "<user_shell_command>")
CONTEXT_WHY = N_("Codex put this message into the model's input itself (its environment, AGENTS.md, instructions); "
                 "the person did not type it")
COMPACTED_WHY = N_("Codex compacted the conversation: the history was replaced by a summary (a compacted record)")
SILENT_EVENTS = ("user_message", "agent_message", "agent_reasoning", "agent_reasoning_section_break",
                 "exec_command_begin", "task_started", "task_complete", "turn_started", "turn_complete")


def _item(record: object) -> tuple[str | None, object]:
    """(the record's type, its payload): a wrapped line, or an older rollout's bare item."""
    if not isinstance(record, dict):
        return None, None
    if "payload" in record and isinstance(record.get("type"), str):
        return record["type"], record["payload"]
    if isinstance(record.get("type"), str):
        return "response_item", record
    return None, record


def looks_like(records: list) -> bool:
    """JSON Lines that are a Codex rollout: a session_meta line, or (older) a first line {id, timestamp} followed
    by bare Responses API items."""
    first = records[0][1] if records else None
    if any(isinstance(r, dict) and r.get("type") == "session_meta" and isinstance(r.get("payload"), dict)
           for _, r in records[:50]):
        return True
    return isinstance(first, dict) and "id" in first and "timestamp" in first and "type" not in first and any(
        isinstance(r, dict) and r.get("type") in ("message", *ASSISTANT_ITEMS, *OUTPUT_ITEMS) and "payload" not in r
        for _, r in records[1:50])


class _Reader:
    def __init__(self, notes: Notes):
        self.notes = notes
        self.segments = [Segment([])]
        self.meta: dict = {}
        self.systems: list[str] = []
        self.model: str | None = None
        self.tool_details: dict = {}
        self.open: str | None = None  # "assistant" or "results": the message items are being added to
        self.users_seen = False  # response_item user messages exist: event_msg user_message is their echo

    @property
    def segment(self) -> Segment:
        return self.segments[-1]

    def append(self, role: str, content: list, where: Note, ts: float) -> int:
        segment = self.segment
        segment.messages.append({"role": role, "content": content})
        segment.origins.append(where)
        segment.times[len(segment.messages) - 1] = ts
        return len(segment.messages) - 1

    def assistant(self, where: Note, ts: float) -> dict:
        """The assistant message of the response being read, opened on its first item."""
        if self.open != "assistant":
            index = self.append("assistant", [], where, ts)
            self.segment.responses[index] = {"model": self.model, "request": {"model": self.model} if self.model
                                             else {}}
            self.open = "assistant"
        return self.segment.messages[-1]

    def results(self, where: Note, ts: float) -> dict:
        if self.open != "results":
            self.append("user", [], where, ts)
            self.open = "results"
        return self.segment.messages[-1]


def read(records: list[tuple[int, object]], notes: Notes) -> Parsed:
    """A rollout's lines: one history, or its stretches when it was compacted."""
    reader = _Reader(notes)
    reader.users_seen = any(_item(r)[0] == "response_item" and isinstance(_item(r)[1], dict)
                            and _item(r)[1].get("type") == "message" and _item(r)[1].get("role") == "user"
                            for _, r in records)
    for n, record in records:
        kind, payload = _item(record)
        where = on_line(n)
        ts = _epoch(record.get("timestamp") if isinstance(record, dict) else None)
        if not isinstance(payload, dict):
            notes.count(N_("passed over lines that are not a rollout's record"), where)
            continue
        if kind == "session_meta" or (kind is None and n == records[0][0] and "id" in payload):
            _session(reader, payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                reader.model = payload["model"]
                reader.meta.setdefault("model", reader.model)
        elif kind == "response_item":
            _response_item(reader, payload, where, ts)
        elif kind == "event_msg":
            _event(reader, payload, where, ts)
        elif kind == "compacted":
            _compacted(reader, payload, where, ts)
        elif kind is None and payload.get("record_type") == "state":
            continue  # an older rollout's saved state: nothing the model was sent
        else:
            notes.count(N_("passed over records that are not part of the conversation ({kind})"), where,
                        kind=str(kind))
    if reader.systems:
        reader.meta["system"] = "\n\n".join(reader.systems)
    segments = [s for s in reader.segments if s.messages or s is reader.segments[0]]
    every = [m for s in segments for i, m in enumerate(s.messages) if i not in s.harness]
    first_user = next((m for m in every if m["role"] == "user" and not _only_results(m)), None)
    reader.meta["task"] = message_text(first_user) if first_user else ""
    parsed = Parsed(meta=reader.meta, tool_details=reader.tool_details)
    only = segments[0]
    if len(segments) == 1 and not only.harness:
        parsed.messages, parsed.responses, parsed.times, parsed.origins = (only.messages, only.responses, only.times,
                                                                           only.origins)
    else:
        parsed.messages = segments[-1].messages
        parsed.origins = only.origins if len(segments) == 1 else []
        parsed.threads = [ParsedThread(MAIN, segments, label="main conversation")]
    return parsed


def _session(reader: _Reader, payload: dict) -> None:
    facts = {"session_id": payload.get("id"), "cwd": payload.get("cwd"), "codex_version": payload.get("cli_version"),
             "codex_originator": payload.get("originator"), "model_provider": payload.get("model_provider")}
    reader.meta.update({k: v for k, v in facts.items() if isinstance(v, str) and v})
    base = payload.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else base
    for said in (text, payload.get("instructions")):
        if isinstance(said, str) and said.strip():
            reader.systems.append(said)


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(part.get("text", "")) for part in content if isinstance(part, dict)
            and part.get("type") in ("input_text", "output_text", "text", "summary_text")] \
        if isinstance(content, list) else []


def _response_item(reader: _Reader, item: dict, where: Note, ts: float) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        content = item.get("content")
        if role in ("developer", "system"):  # instructions sent beside the conversation: the system prompt's part
            reader.systems.append("\n".join(_texts(content)))
            reader.notes.count(N_("{role} messages of the model's input are kept with the system prompt "
                                  "(meta.system), not in messages"), where, role=str(role))
            return
        if role == "assistant":
            reader.assistant(where, ts)["content"].extend(
                {"type": "text", "text": text} for text in _texts(content))
            return
        if role != "user":
            reader.notes.count(N_("passed over messages of role {role}"), where, role=repr(role))
            return
        blocks = _user_blocks(content)
        reader.open = None
        index = reader.append("user", blocks, where, ts)
        if any(text.lstrip().startswith(CONTEXT_MARKS) for text in _texts(content)):
            reader.segment.harness[index] = CONTEXT_WHY
    elif kind == "reasoning":
        summary = "\n".join(_texts(item.get("summary"))) or "\n".join(_texts(item.get("content")))
        block = {"type": "thinking", "thinking": summary}
        if item.get("encrypted_content"):
            block["signature"] = ""  # the reasoning itself is encrypted: only its summary is shown
        reader.assistant(where, ts)["content"].append(block)
    elif kind in ASSISTANT_ITEMS:
        reader.assistant(where, ts)["content"].append(_tool_use(item, where, reader.notes))
    elif kind in OUTPUT_ITEMS:
        call_id = item.get("call_id")
        output = item.get("output")
        if isinstance(output, dict):  # {content, success} in some versions
            output = output.get("content", json.dumps(output, ensure_ascii=False))
        if isinstance(output, list):
            output = "\n".join(_texts(output))
        block = tool_result(call_id, ToolOutput(output if isinstance(output, str) else json.dumps(output)))
        reader.results(where, ts)["content"].append(block)
        reader.tool_details.setdefault(id_key(call_id), {})["origin"] = origin_of([where], 0)
    else:
        reader.notes.count(N_("passed over response items of type {kind}"), where, kind=repr(kind))


def _user_blocks(content: object) -> list:
    out = []
    for part in content if isinstance(content, list) else [{"type": "input_text", "text": str(content or "")}]:
        if isinstance(part, dict) and part.get("type") in ("input_text", "text"):
            out.append({"type": "text", "text": str(part.get("text", ""))})
        elif isinstance(part, dict) and part.get("type") == "input_image":
            out.append({"type": "image", "source": {"type": "url", "url": str(part.get("image_url", ""))}})
        else:
            out.append({"type": "unknown", "raw": json.dumps(part, ensure_ascii=False, default=str)})
    return out


def _tool_use(item: dict, where: Note, notes: Notes) -> dict:
    """A call of the model's response as the Messages API's tool_use block."""
    name = item.get("name") or item.get("type")
    if item.get("type") == "function_call":
        arguments = item.get("arguments", "{}")
        tool_input: object = arguments
        if isinstance(arguments, str):
            try:
                tool_input = parse_json(arguments) if arguments.strip() else {}
                if too_deep(tool_input):
                    raise RecursionError
            except (json.JSONDecodeError, NumberTooLong, RecursionError):
                notes.count(N_("function_call arguments that are not readable JSON; kept as the raw string"), where)
                tool_input = arguments
    elif item.get("type") == "custom_tool_call":
        tool_input = {"input": item.get("input")}
    else:
        tool_input = {k: v for k, v in item.items() if k not in ("type", "call_id", "id", "status")}
    return {"type": "tool_use", "id": item.get("call_id") or item.get("id"), "name": str(name),
            "input": tool_input}


def _event(reader: _Reader, event: dict, where: Note, ts: float) -> None:
    kind = event.get("type")
    if kind == "token_count":
        info = event.get("info") if isinstance(event.get("info"), dict) else {}
        usage = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else None
        if reader.open == "assistant":
            index = len(reader.segment.messages) - 1
            if usage is not None:
                reader.segment.responses[index]["usage"] = {
                    "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens"),
                    **({"cache_read_input_tokens": usage["cached_input_tokens"]}
                       if "cached_input_tokens" in usage else {})}
            reader.open = None  # the response is whole: the next item starts another
        if isinstance(info.get("total_token_usage"), dict):
            reader.meta["codex_usage"] = info["total_token_usage"]
    elif kind == "user_message" and not reader.users_seen and isinstance(event.get("message"), str):
        reader.open = None
        reader.append("user", [{"type": "text", "text": event["message"]}], where, ts)
    elif kind == "exec_command_end" and event.get("call_id") is not None:
        facts = {k: event.get(k) for k in ("exit_code", "duration", "command") if event.get(k) is not None}
        reader.tool_details.setdefault(id_key(event["call_id"]), {})["codex_exec"] = facts
    elif kind == "turn_aborted":
        reader.notes.count(N_("turns the person stopped (turn_aborted)"), where)
    elif kind not in SILENT_EVENTS:
        reader.notes.count(N_("passed over events that are not part of the conversation ({kind})"), where,
                           kind=str(kind))


def _compacted(reader: _Reader, payload: dict, where: Note, ts: float) -> None:
    summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
    if not reader.segment.messages:
        return
    segment = Segment([], start=1, compaction={"kind": "imported", "source": f"compacted ({where.render()})",
                                               "why": COMPACTED_WHY, "summary": summary})
    reader.segments.append(segment)
    reader.open = None
    reader.append("user", [{"type": "text", "text": summary}], where, ts)


def _only_results(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _epoch(ts: object) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() if isinstance(ts, str) else 0.0
    except ValueError:
        return 0.0
