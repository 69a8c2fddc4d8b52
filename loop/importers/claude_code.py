"""Claude Code session logs: JSON Lines under ~/.claude/projects/<encoded-cwd>/<session>.jsonl.

The format is unofficial and changes between versions; this reads what the
versions seen so far write, and passes over (and counts) the rest:

- A record is one line. `user` and `assistant` records hold an Anthropic
  `message`; `summary`, `system`, `file-history-snapshot`, `queue-operation`,
  `progress`, ... are not messages.
- `uuid` / `parentUuid` chain the records; the chain gives the order, not the
  line order. An edited or retried message forks the chain: the branch that
  was written last is the conversation, the others are passed over. A chain
  broken by compaction goes on through `logicalParentUuid`.
- Claude Code writes one line per content block, so one response is several
  `assistant` records repeating one `message.id`; their tool results come as
  separate `user` records, whose parentUuid may hang off any of them. They are
  joined back into one assistant message and one user message of results.
- `isSidechain: true` marks a sub-agent's thread; `agentId` names it when
  present. The main conversation is imported unless a thread is chosen.
- A tool result's `user` record carries the tool's own account of the run in
  `toolUseResult`; it is kept in the run_tool step's detail.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime

from ..narrate import short
from ..rules import tool_results
from .common import Parsed, clean_content, id_key
from .derive import message_text
from .notes import Notes

MAIN = "main"
MESSAGE_TYPES = ("user", "assistant")
RECORD_KEYS = ("uuid", "parentUuid", "sessionId", "isSidechain")


class UnknownThread(LookupError):
    pass


def looks_like(record: object) -> bool:
    """One parsed line that is a Claude Code record."""
    return isinstance(record, dict) and isinstance(record.get("type"), str) and (
        any(k in record for k in RECORD_KEYS) or (record.get("type") in MESSAGE_TYPES and "message" in record)
        or record.get("type") == "summary")


@dataclass(slots=True, eq=False)
class _Node:
    line: int
    uuid: str
    parent: str | None
    record: dict | None  # a user/assistant record with a readable message; None for one that only links the chain
    ts: str
    kids: list = field(default_factory=list)
    up: "_Node | None" = None  # the parent within its tree
    spine: bool = False  # on the path from the tree's root to its newest message


@dataclass
class ThreadInfo:
    id: str
    label: str
    n_records: int  # its user and assistant records
    first_line: int
    forest: list  # its chains, see _forest


def read(records: list[tuple[int, object]], notes: Notes, thread: str | None = None) -> tuple[Parsed, list, str]:
    """The chosen thread (the main conversation by default) of a log's parsed lines.

    Returns the history, the threads of the log as (id, label, n_records) and
    the id of the thread imported. An unknown `thread` raises UnknownThread.
    """
    pools: dict[str, list[_Node]] = {}
    everywhere: set[str] = set()  # every uuid in the file, to tell a link to another thread from a missing record
    for line, record in records:
        if not isinstance(record, dict):
            notes.count("passed over lines that are JSON but not a record (an object)", f"line {line}")
            continue
        kind = record.get("type")
        good = None
        if kind in MESSAGE_TYPES:
            message = record.get("message")
            if not isinstance(message, dict):
                notes.count(f"passed over {kind} records whose message is not an object", f"line {line}")
            elif not isinstance(message.get("content"), (str, list)):
                notes.count(f"passed over {kind} records whose message has no content", f"line {line}")
            else:
                good = record
        elif kind is None:
            notes.count("passed over records without a type", f"line {line}")
        else:
            notes.count(f"passed over records that are not messages ({kind})", f"line {line}")
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        if uuid is None and good is None:
            continue
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        node = _Node(line, uuid or f"#line{line}", parent if isinstance(parent, str) else None, good,
                     str(record.get("timestamp") or ""))
        if uuid:
            everywhere.add(uuid)
        if record.get("isSidechain"):
            agent = record.get("agentId")
            key = f"agent-{agent}" if isinstance(agent, str) and agent else "sidechain"
        else:
            key = MAIN
        pools.setdefault(key, []).append(node)

    threads: list[ThreadInfo] = []
    for key, nodes in pools.items():
        forest = _forest(_dedupe(nodes, notes), everywhere, notes)
        if key == "sidechain":  # no agentId: each chain is a sub-agent of its own
            for root, members in forest:
                threads.append(_thread(f"sidechain-{root.uuid}", [(root, members)]))
        else:
            threads.append(_thread(key, forest))
    threads = [t for t in threads if t.n_records]
    threads.sort(key=lambda t: (t.id != MAIN, t.first_line))
    listing = [(t.id, t.label, t.n_records) for t in threads]
    if thread is None:
        chosen = threads[0] if threads else None
        if chosen is not None and chosen.id != MAIN:
            notes.warn(f"the log holds no main conversation (isSidechain false); imported the sub-agent thread {chosen.id}")
    else:
        chosen = next((t for t in threads if t.id == thread), None)
        if chosen is None:
            raise UnknownThread(f"no thread {thread!r} in this log; its threads: "
                                + (", ".join(t.id for t in threads) or "none"))
    if chosen is None:
        return Parsed(), listing, MAIN
    ordered = _order(chosen.forest, notes)
    return _messages(ordered, notes), listing, chosen.id


def _dedupe(nodes: list[_Node], notes: Notes) -> list[_Node]:
    """One node a uuid. A readable message replaces a record that only linked the chain; a record written
    twice is kept once; a different record under a uuid already used gets an id of its own."""
    by_id: dict[str, int] = {}
    out: list[_Node] = []
    for node in nodes:
        at = by_id.get(node.uuid)
        if at is None:
            by_id[node.uuid] = len(out)
            out.append(node)
        elif out[at].record is None and node.record is not None:
            out[at] = node
        elif node.record is not None and node.record == out[at].record:
            notes.count("records written twice (same uuid, same content); kept once",
                        f"line {node.line} (as line {out[at].line})")
        elif node.record is not None:
            notes.count("records repeat the uuid of an earlier line; each is kept as a record of its own",
                        f"line {node.line} (uuid of line {out[at].line})")
            node.uuid = f"{node.uuid}#line{node.line}"
            out.append(node)
    out.sort(key=lambda n: n.line)
    return out


def _forest(nodes: list[_Node], everywhere: set[str], notes: Notes) -> list[tuple[_Node, list[_Node]]]:
    """The chains of one thread as trees: (root, members in line order), roots in line order."""
    by_id = {n.uuid: n for n in nodes}
    roots = []
    for node in nodes:
        parent = by_id.get(node.parent) if node.parent else None
        if parent is not None and parent is not node:
            parent.kids.append(node)
        else:
            if node.parent and node.parent not in everywhere:
                notes.count("records name a parentUuid that is not in the file; each starts a chain",
                            f"line {node.line}")
            roots.append(node)
    forest = []
    seen: set[int] = set()

    def grow(root: _Node) -> list[_Node]:
        members, stack = [], [root]
        seen.add(id(root))
        root.up = None
        while stack:
            node = stack.pop()
            members.append(node)
            for kid in node.kids:
                if id(kid) not in seen:
                    seen.add(id(kid))
                    kid.up = node
                    stack.append(kid)
        members.sort(key=lambda n: n.line)
        return members

    for root in roots:
        forest.append((root, grow(root)))
    if len(seen) < len(nodes):  # parentUuid loops: cut each where it starts
        for node in nodes:
            if id(node) not in seen:
                notes.count("records whose parentUuid chain loops back; cut there", f"line {node.line}")
                forest.append((node, grow(node)))
    return forest


def _thread(key: str, forest: list) -> ThreadInfo:
    nodes = sorted((n for _, members in forest for n in members), key=lambda n: n.line)
    messages = [n for n in nodes if n.record is not None]
    first_user = next((n.record for n in messages if n.record.get("type") == "user"), None)
    said = short(message_text(first_user["message"]), 60) if first_user else "(no user message)"
    if key == MAIN:
        label = f"main conversation: {said}"
    else:
        label = f"sub-agent {key.split('-', 1)[1][:12]}: {said}"
    return ThreadInfo(key, label, len(messages), nodes[0].line if nodes else 0, forest)


def _order(forest: list, notes: Notes) -> list[_Node]:
    """The records of the conversation in chain order, tree after tree.

    In each tree the conversation is the path to its newest message record;
    records off that path are kept when they are the same response written
    line by line (same message.id) or results of its tool_use blocks, and
    passed over (an abandoned branch) otherwise. A record always comes after
    its parent; records on different branches come in the order they were
    written (timestamp, then line).
    """
    out: list[_Node] = []
    trees = 0
    linked = False
    abandoned = 0
    for root, members in forest:
        messages = [n for n in members if n.record is not None]
        if not messages:
            continue
        trees += 1
        linked = linked or len(members) > 1
        node = max(messages, key=lambda n: (n.ts, n.line))
        while node is not None:
            node.spine = True
            node = node.up
        response_ids: set = set()
        use_ids: set = set()
        ready = [(root.ts, root.line, root)]  # (ts, line) is unique: a node is one line
        while ready:
            node = heapq.heappop(ready)[2]
            record = node.record
            if record is not None:
                message = record["message"]
                if not node.spine and not _belongs(record, message, response_ids, use_ids):
                    abandoned += _count_messages(node)
                    continue
                out.append(node)
                if record["type"] == "assistant":
                    if message.get("id"):
                        response_ids.add(id_key(message["id"]))
                    content = message["content"]
                    for block in content if isinstance(content, list) else ():
                        if isinstance(block, dict) and block.get("type") == "tool_use":
                            use_ids.add(id_key(block.get("id")))
            kids = node.kids
            if len(kids) == 1 and not ready:  # the common case: a chain goes on, nothing else is waiting
                if kids[0].up is node:
                    ready.append((kids[0].ts, kids[0].line, kids[0]))
                continue
            for kid in kids:
                if kid.up is node:
                    heapq.heappush(ready, (kid.ts, kid.line, kid))
    if abandoned:
        notes.warn(f"passed over {abandoned} message record(s) on abandoned branches of the chain (a message edited "
                   "or a response retried); the branch written last is imported")
    if trees > 1:
        if linked:
            notes.warn(f"the conversation is {trees} separate chains (after compaction, a resumed session or missing "
                       "records); they are joined in the order of their first lines")
        else:
            notes.warn("no record's parentUuid links it to another record: the records are taken in line order")
    return out


def _belongs(record: dict, message: dict, response_ids: set, use_ids: set) -> bool:
    """Off the path but part of it: another line of a response on it, or a result of one of its tool_use blocks."""
    if record.get("type") == "assistant":
        return message.get("id") is not None and id_key(message.get("id")) in response_ids
    content = message.get("content")
    return (isinstance(content, list) and bool(content)
            and all(isinstance(b, dict) and b.get("type") == "tool_result" and id_key(b.get("tool_use_id")) in use_ids
                    for b in content))


def _count_messages(node: _Node) -> int:
    count, stack = 0, [node]
    while stack:
        n = stack.pop()
        count += n.record is not None
        stack.extend(k for k in n.kids if k.up is n)
    return count


def _only_results(content: object) -> bool:
    """Content made of tool_result blocks only: one line of a turn's results."""
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _epoch(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() if ts else 0.0
    except ValueError:
        return 0.0


def _messages(ordered: list[_Node], notes: Notes) -> Parsed:
    """Records in order -> messages: one response's lines joined, one turn's results joined."""
    parsed = Parsed()
    messages = parsed.messages
    group: tuple | None = None  # (message.id, index) of the last assistant message
    results_open = False  # the last message is a user message of tool_results only, which more results join
    for node in ordered:
        record = node.record
        message = record["message"]
        role = message.get("role") if message.get("role") in MESSAGE_TYPES else record["type"]
        content = clean_content(message["content"], f"line {node.line}", notes)
        if role == "assistant":
            mid = message.get("id")
            if (group is not None and mid is not None and mid == group[0]
                    and (group[1] == len(messages) - 1 or (group[1] == len(messages) - 2 and results_open))):
                # Another line of the same response, maybe after results of its earlier tool_use lines.
                _join(messages[group[1]], content)
                recorded = parsed.responses[group[1]]
                for key in ("stop_reason", "usage"):
                    if message.get(key) is not None:
                        recorded[key] = message[key]
                continue
            group = (mid, len(messages))
            model = message.get("model")
            parsed.responses[len(messages)] = {"id": mid, "model": model, "stop_reason": message.get("stop_reason"),
                                               "usage": message.get("usage"),
                                               "request": {"model": model} if model else {}}
            results_open = False
        else:
            if "toolUseResult" in record:
                for block in tool_results({"content": content}):
                    parsed.tool_details[id_key(block.get("tool_use_id"))] = {"tool_use_result": record["toolUseResult"]}
            if results_open and isinstance(content, list) and content and isinstance(content[0], dict) \
                    and content[0].get("type") == "tool_result":
                # More results of the same turn (any text after them stays after them, as the API wants).
                messages[-1]["content"].extend(content)
                results_open = _only_results(content)
                continue
            results_open = _only_results(content)
        parsed.times[len(messages)] = _epoch(node.ts)
        messages.append({"role": role, "content": list(content) if isinstance(content, list) else content})
        parsed.origins.append(f"line {node.line}")
    first = ordered[0].record if ordered else {}
    first_user = next((m for m in messages if m["role"] == "user"), None)
    model = next((r.get("model") for r in parsed.responses.values() if r.get("model")), None)
    parsed.meta = {k: v for k, v in {
        "model": model, "task": message_text(first_user) if first_user else "",
        "session_id": first.get("sessionId"), "cwd": first.get("cwd"), "git_branch": first.get("gitBranch"),
        "claude_code_version": first.get("version"),
    }.items() if v is not None}
    return parsed


def _join(target: dict, content: object) -> None:
    """Add one more line of a response to its message."""
    if isinstance(target["content"], str):
        target["content"] = [{"type": "text", "text": target["content"]}]
    target["content"].extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
