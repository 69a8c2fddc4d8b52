"""What a Claude Code log records beside its messages, read in one pass before the chain is walked.

- Claude Code 2.1 writes each request it sends: `api-request-shape` (the system prompt's blocks and the tools, by
  `shapeHash`), `api-request-blob` (one message by the sha256 of its JSON, keys sorted), and `api-request`
  (`params`: model, max_tokens, thinking, ...; its messages as `base` (an earlier request) `[:keep]` plus `tail`,
  a list of hashes). A message the log already holds (a response, a turn's tool_results) is written as no blob:
  its hash is that of the message in the history. An `assistant` record names its request (`requestRef`).
  `request_of` rebuilds the body Claude Code sent, system prompt, environment blocks and `role: "system"`
  messages included.
- `cost-state` (the session's cost and durations) and `last-prompt` are kept in the trace's facts.
- `queue-operation` records: a prompt typed while the model worked is enqueued, then dequeued (it becomes a
  `user` record) or removed (it went in beside a tool_result, and no record of its own holds it). Those removed
  are `queued`, to be put where they entered.
- `progress` records of type `agent_progress` carry a sub-agent's records (`data.message`) as it works; a
  sub-agent whose records are nowhere else is read from them (`agent_records`).
- The `-p` stream-json output: its `system` `init` record (model, tools' names, cwd) and its `result` record (the
  answer, the cost) are kept in the trace's facts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ..text.catalogs import N_
from .notes import Notes

REQUEST_KINDS = ("api-request", "api-request-shape", "api-request-blob")
KEPT_KINDS = (*REQUEST_KINDS, "cost-state", "last-prompt", "queue-operation")  # read here, not passed over
MAX_BASES = 10_000  # requests one request may build on: a loop of `base` links stops here


def message_hash(message: object) -> str:
    """The hash Claude Code names a message by in `api-request` records: sha256 of its JSON, keys sorted."""
    text = json.dumps(message, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Queued:
    """A prompt typed while the model worked that reached it beside a tool_result, with no record of its own."""

    text: str
    ts: str  # when it went in (its removal from the queue)
    where: object  # the record that says so, as warnings name it ("line 12")


@dataclass
class Beside:
    shapes: dict = field(default_factory=dict)  # shapeHash -> {system, tools}
    blobs: dict = field(default_factory=dict)  # hash -> message
    requests: dict = field(default_factory=dict)  # id -> the api-request record
    facts: dict = field(default_factory=dict)  # for the trace's meta: cost, last prompt, stream-json's init/result
    queued: list = field(default_factory=list)  # Queued
    agent_records: list = field(default_factory=list)  # (seq of the progress record, a sub-agent's record)
    started_by: dict = field(default_factory=dict)  # tool_use id (of an Agent/Task call) -> the agentId it started

    def request_of(self, ref: object, known: dict) -> dict | None:
        """The body request `ref` sent: {"body": params, system and tools (no messages), "messages": as sent,
        "missing": hashes the log holds no message for}; `known` maps a hash to a message of the history."""
        record = self.requests.get(ref) if isinstance(ref, str) else None
        if record is None:
            return None
        shape = (self.shapes.get(record["shapeHash"]) if isinstance(record.get("shapeHash"), str) else None) or {}
        params = record.get("params") if isinstance(record.get("params"), dict) else {}
        body = {k: v for k, v in params.items() if k != "messages"}
        for key in ("system", "tools"):
            if key in shape:
                body[key] = shape[key]
        messages, missing = self._messages(record, known)
        return {"body": body, "messages": messages, "missing": missing, "id": ref}

    def _messages(self, record: dict, known: dict) -> tuple[list, list]:
        chain, seen = [record], {id(record)}
        while isinstance(chain[-1].get("base"), str) and len(chain) < MAX_BASES:
            base = self.requests.get(chain[-1]["base"])
            if base is None or id(base) in seen:
                break
            chain.append(base)
            seen.add(id(base))
        messages: list = []
        missing: list = []
        for link in reversed(chain):  # the oldest first: each keeps `keep` of what the one before sent
            keep = link.get("keep") if type(link.get("keep")) is int else len(messages)
            del messages[max(0, keep):]
            tail = link.get("tail") if isinstance(link.get("tail"), list) else []
            for digest in tail:
                message = self.blobs.get(digest) if isinstance(digest, str) else None
                if message is None and isinstance(digest, str):
                    message = known.get(digest)
                if message is None:
                    missing.append(str(digest))
                    message = {"role": "unknown", "content": [{"type": "text", "text": f"(not in the log: {digest})"}]}
                messages.append(message)
        return messages, missing


def read(records: list[tuple[int, object]], notes: Notes, place) -> Beside:
    """One pass over the log's (position, record) list."""
    beside = Beside()
    enqueued: list[tuple[str, int]] = []  # (text, seq) in the order typed
    for seq, record in records:
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        if kind == "api-request-shape" and isinstance(record.get("shape"), dict) and isinstance(record.get("shapeHash"), str):
            beside.shapes.setdefault(record.get("shapeHash"), record["shape"])
        elif kind == "api-request-blob" and isinstance(record.get("message"), dict) and isinstance(record.get("hash"), str):
            beside.blobs.setdefault(record.get("hash"), record["message"])
        elif kind == "api-request" and isinstance(record.get("id"), str):
            beside.requests.setdefault(record["id"], record)
        elif kind == "cost-state":
            beside.facts["cost"] = {k: v for k, v in record.items() if k not in ("type", "sessionId")}
        elif kind == "last-prompt" and isinstance(record.get("lastPrompt"), str):
            beside.facts["last_prompt"] = record["lastPrompt"]
        elif kind == "queue-operation":
            operation = record.get("operation")
            if operation == "enqueue" and isinstance(record.get("content"), str):
                enqueued.append((record["content"], seq))
            elif operation == "dequeue" and enqueued:  # it becomes a user record of its own
                enqueued.pop(0)
            elif operation in ("remove", "popAll") and enqueued:
                taken = enqueued[:] if operation == "popAll" else [enqueued[0]]
                del enqueued[:len(taken)]
                ts = str(record.get("timestamp") or "")
                beside.queued += [Queued(text, ts, place(seq)) for text, _ in taken]
        elif kind == "progress":
            _progress(record, seq, beside)
        elif kind == "system" and record.get("subtype") == "init" and "session_id" in record:
            beside.facts["stream_json"] = {k: record.get(k) for k in ("model", "cwd", "session_id", "claude_code_version",
                                                                        "permissionMode") if record.get(k) is not None}
            if isinstance(record.get("tools"), list):
                beside.facts["stream_json"]["tools"] = [str(t) for t in record["tools"]]
        elif kind == "result" and "session_id" in record:
            beside.facts["result"] = {k: record.get(k) for k in (
                "subtype", "is_error", "result", "total_cost_usd", "num_turns", "duration_ms", "duration_api_ms",
                "stop_reason", "usage") if record.get(k) is not None}
    if enqueued:
        notes.count(N_("prompts queued while the model worked that the log never shows sent; not in any step"),
                    place(enqueued[0][1]))
    return beside


def _progress(record: dict, seq: int, beside: Beside) -> None:
    """A sub-agent's record carried by an `agent_progress` record, made a sidechain record of its thread."""
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    agent = data.get("agentId")
    inner = data.get("message")
    if data.get("type") != "agent_progress" or not (isinstance(agent, str) and agent) or not isinstance(inner, dict):
        return
    started = record.get("parentToolUseID")
    if isinstance(started, str) and started:
        beside.started_by.setdefault(started, agent)
    if inner.get("type") not in ("user", "assistant") or not isinstance(inner.get("message"), dict):
        return
    out = dict(inner)
    out.update(isSidechain=True, agentId=agent, sessionId=record.get("sessionId"))
    out.setdefault("timestamp", record.get("timestamp"))
    if not beside.agent_records or all(a.get("agentId") != agent for _, a in beside.agent_records):
        said = inner["message"].get("content")
        if isinstance(data.get("prompt"), str) and data["prompt"] and said != data["prompt"]:  # its prompt first
            beside.agent_records.append((seq, {"type": "user", "isSidechain": True, "agentId": agent,
                                               "uuid": f"{agent}#prompt", "parentUuid": None,
                                               "timestamp": out.get("timestamp"), "progress": True,
                                               "message": {"role": "user", "content": data["prompt"]}}))
    previous = next((a for _, a in reversed(beside.agent_records) if a.get("agentId") == agent), None)
    if not isinstance(out.get("uuid"), str):
        out["uuid"] = f"{agent}#{seq}"
    if "parentUuid" not in out or out.get("parentUuid") is None:
        out["parentUuid"] = previous.get("uuid") if previous is not None else None
    out["progress"] = True
    beside.agent_records.append((seq, out))
