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
- Every record with a `uuid` is a link of the chain, whatever its type
  (`system` records sit between messages); a record without `isSidechain`
  belongs to its parent's thread.
- A `compact_boundary` record (a `system` record, `parentUuid` null,
  `logicalParentUuid` the last one before) marks a compaction: the history
  the model sees after it begins with the summary (`isCompactSummary`), not
  with the old messages. Each side is a stretch of its own, joined by a
  `compact` step.
- `isSidechain: true` marks a sub-agent's thread; `agentId` names it when
  present. Newer versions write each sub-agent to
  `<session>/subagents/agent-<agentId>.jsonl` (read together with the session,
  see `importers.import_files`). A sub-agent's thread is linked to the
  `Task`/`Agent` tool_use that started it: the one whose result's
  `toolUseResult.agentId` names it, or else the one whose `prompt` is its
  first message. Every thread is imported, each sub-agent inside its parent's
  run_tool step; `thread=` imports one thread alone.
- A tool result's `user` record carries the tool's own account of the run in
  `toolUseResult`; it is kept in the run_tool step's detail.
- Claude Code writes some messages itself (claude_code_harness.py): `user`
  records marked `isMeta` (a caveat, a skill's text) and its notices (a
  `<task-notification>`, an interruption, a local command's output) are
  harness steps, never the person's request; what it wrote for its user
  (`<synthetic>` words, an API error: `isApiErrorMessage`) enters no request,
  so it is in no message: an API error is a failed call (`retry`), the rest a
  harness step that adds nothing. None is a model call, the session's model,
  its task or its label.
- A compaction's own call (`subagents/agent-acompact-<id>.jsonl`) is no
  sub-agent: it is that compaction's `summarize` step.
- What the log records beside its messages (claude_code_beside.py): each
  request as sent (2.1's `api-request` records), what Claude Code attached to
  it, the session's cost, prompts typed while the model worked, a sub-agent
  kept only in `agent_progress` records, stream-json's `init` and `result`.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime

from typing import Callable

from ..text.catalogs import N_, N_n
from ..engine.compact import COMPACTED_WHY
from ..text.lines import short
from ..engine.rules import message_text, tool_results, tool_uses
from . import claude_code_beside
from .claude_code_harness import API_ERROR_WHY, META_WHY, SHOWN_WHY, SYNTHETIC, extra, harness_s, queue_in, shown
from .common import Parsed, ParsedThread, Segment, clean_content, id_key, origin_of
from .notes import Note, Notes, in_thread, on_line

MAIN = "main"
MESSAGE_TYPES = ("user", "assistant")
STARTS_AGENTS = ("Task", "Agent", "task")  # the tools whose tool_use starts a sub-agent
RECORD_KEYS = ("uuid", "parentUuid", "sessionId", "isSidechain")


class UnknownThread(LookupError):
    """A thread the log does not have; its one argument, `note`, says so in any language."""

    @property
    def note(self) -> Note:
        return self.args[0]

    def __str__(self) -> str:
        return self.note.render()


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
    boundary: dict | None = None  # a compact_boundary record's facts (trigger, preTokens), else None
    extra: tuple | None = None  # ("attachment", facts) or ("failure", facts): a record of the chain that is no message
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


def read(records: list[tuple[int, object]], notes: Notes, thread: str | None = None,
         place: Callable[[int], Note] = on_line) -> tuple[Parsed, list, str]:
    """Every thread of a log's parsed lines, the main conversation first (or only `thread`).

    Returns the history (one thread: `Parsed.messages`; several, or a history
    compacted on the way: `Parsed.threads`), the threads of the log as
    (id, label, n_records) and the id of the thread imported (the main one when
    all are). An unknown `thread` raises UnknownThread. `place(n)` names record
    n in warnings, as a Note ("line 12", or "agent-ab.jsonl, line 3" for several files).
    """
    # Each record at a position of its own (two records glued on one line share a line), named by its line.
    lines = [line for line, _ in records]
    at_line = place
    place = lambda seq: at_line(lines[seq])  # noqa: E731
    records = [(seq, record) for seq, (_, record) in enumerate(records)]
    beside = claude_code_beside.read(records, notes, place)
    own_agents = {r["agentId"] for _, r in records if isinstance(r, dict) and r.get("isSidechain")
                  and isinstance(r.get("agentId"), str) and r.get("type") in MESSAGE_TYPES}
    for seq, record in beside.agent_records:  # a sub-agent kept only in progress records: read from them
        if record.get("agentId") not in own_agents:
            lines.append(lines[seq])
            records.append((len(lines) - 1, record))
    pools: dict[str, list[_Node]] = {}
    everywhere: set[str] = set()  # every uuid in the file, to tell a link to another thread from a missing record
    flagged: dict[str, str] = {}  # uuid -> the pool of a record that says which thread it is in
    unflagged: list[tuple[_Node, dict]] = []
    for line, record in records:
        if not isinstance(record, dict):
            notes.count(N_("passed over lines that are JSON but not a record (an object)"), place(line))
            continue
        kind = record.get("type")
        good = None
        if kind in MESSAGE_TYPES:
            message = record.get("message")
            if not isinstance(message, dict):
                notes.count(N_("passed over {kind} records whose message is not an object"), place(line), kind=kind)
            elif not isinstance(message.get("content"), (str, list)):
                notes.count(N_("passed over {kind} records whose message has no content"), place(line), kind=kind)
            else:
                good = record
        elif kind is None:
            notes.count(N_("passed over records without a type"), place(line))
        elif not (kind == "system" and record.get("subtype") in ("compact_boundary", "api_error", "init")
                  or kind in claude_code_beside.KEPT_KINDS or kind == "attachment"
                  or (kind == "result" and "session_id" in record)
                  or (kind == "progress" and isinstance(record.get("data"), dict)
                      and record["data"].get("type") == "agent_progress")):
            notes.count(N_("passed over records that are not messages ({kind})"), place(line), kind=kind)
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        if uuid is None and good is None:
            continue
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        boundary = None
        if kind == "system" and record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata") if isinstance(record.get("compactMetadata"), dict) else {}
            boundary = {"trigger": meta.get("trigger"), "pre_tokens": meta.get("preTokens"), "line": place(line)}
        node = _Node(line, uuid or f"#line{line}", parent if isinstance(parent, str) else None, good,
                     str(record.get("timestamp") or ""), boundary, extra(record, kind, line, place))
        if uuid:
            everywhere.add(uuid)
        if "isSidechain" not in record and good is None:
            unflagged.append((node, record))  # a link of whichever thread its parent is in
            continue
        key = _pool(record)
        if uuid:
            flagged.setdefault(uuid, key)
        pools.setdefault(key, []).append(node)
    links = {node.uuid: node.parent for node, _ in unflagged}
    for node, record in unflagged:
        key, seen, parent = MAIN, set(), node.parent
        while parent and parent not in seen:  # up the chain to a record that says
            seen.add(parent)
            if parent in flagged:
                key = flagged[parent]
                break
            parent = links.get(parent)
        if node.uuid in everywhere:
            flagged.setdefault(node.uuid, key)
        pools.setdefault(key, []).append(node)

    _join_unnamed_links(pools)
    threads: list[ThreadInfo] = []
    for key, nodes in pools.items():
        nodes.sort(key=lambda n: n.line)
        forest = _forest(_dedupe(nodes, notes, place), everywhere, notes, place)
        if key == "sidechain":  # no agentId: each chain is a sub-agent of its own
            for root, members in forest:
                threads.append(_thread(f"sidechain-{root.uuid}", [(root, members)]))
        else:
            threads.append(_thread(key, forest))
    threads = [t for t in threads if t.n_records]
    threads.sort(key=lambda t: (t.id != MAIN, t.first_line))
    # The compaction's own call (subagents/agent-acompact-*.jsonl): no sub-agent, the summarize step of a compaction
    summaries = [_summary_of(info, notes, place) for info in threads if info.id.startswith(COMPACTION_AGENT)]
    threads = [info for info in threads if not info.id.startswith(COMPACTION_AGENT)]
    listing = [(t.id, t.label, t.n_records) for t in threads]
    reading = _Reading(notes, place, beside, summaries)
    if thread is not None:
        chosen = next((t for t in threads if t.id == thread), None)
        if chosen is None:
            raise UnknownThread(Note(N_("no thread {thread} in this log; its threads: {threads}"), thread=repr(thread),
                                     threads=", ".join(t.id for t in threads) or "—"))
        return _single(chosen, reading), listing, chosen.id
    if not threads:
        return Parsed(), listing, MAIN
    if threads[0].id != MAIN:
        notes.warn(N_("the log holds no main conversation (isSidechain false); imported the sub-agent thread "
                      "{thread}"), thread=threads[0].id)
        if len(threads) == 1:
            return _single(threads[0], reading), listing, threads[0].id
    if len(threads) == 1:
        return _single(threads[0], reading), listing, MAIN
    parsed = Parsed()
    tool_details: dict = {}
    read_threads = []
    for info in threads:
        first = info is threads[0]
        segments, meta = _segments(_order(info.forest, notes, None if first else info.id, place), tool_details,
                                   reading, main=first)
        read_threads.append(ParsedThread(MAIN if first else info.id, segments, label=info.label,
                                         facts={"records": info.n_records}))
        if first:
            parsed.meta = meta
    _link(read_threads, tool_details, notes, {**beside.started_by, **_agents_named(records)})
    parsed.threads = read_threads
    parsed.messages = read_threads[0].messages
    parsed.tool_details = tool_details
    return parsed, listing, MAIN


COMPACTION_AGENT = "agent-acompact"  # Claude Code's own call that writes a compaction's summary


@dataclass
class _Reading:
    """What every thread's reading shares: where to say things, and what the log holds beside its messages."""

    notes: Notes
    place: Callable[[int], Note]
    beside: claude_code_beside.Beside
    summaries: list  # of dict: the compaction calls' requests and answers (`_summary_of`), not yet placed


def _join_unnamed_links(pools: dict[str, list[_Node]]) -> None:
    """A sidechain record without agentId chained to records that have one (a sub-agent's first record is often
    written before its agentId is) is of their thread: one sub-agent stays one thread."""
    unnamed = pools.get("sidechain")
    if not unnamed:
        return
    key_of = {n.uuid: key for key, nodes in pools.items() if key.startswith("agent-") for n in nodes}
    if not key_of:
        return
    by_uuid = {n.uuid: n for n in unnamed}
    moved = True
    while moved:  # down the chain from a named record, and up it from a named record's parent
        moved = False
        for key, nodes in list(pools.items()):
            if not key.startswith("agent-"):
                continue
            for node in nodes:
                parent = by_uuid.get(node.parent) if node.parent else None
                if parent is not None and parent.uuid not in key_of:
                    key_of[parent.uuid] = key
                    moved = True
        for node in unnamed:
            if node.uuid not in key_of and node.parent in key_of:
                key_of[node.uuid] = key_of[node.parent]
                moved = True
        for node in [n for n in unnamed if n.uuid in key_of]:
            pools[key_of[node.uuid]].append(node)
        unnamed[:] = [n for n in unnamed if n.uuid not in key_of]
        by_uuid = {n.uuid: n for n in unnamed}
    if not unnamed:
        del pools["sidechain"]


def _agents_named(records: list[tuple[int, object]]) -> dict:
    """tool_use id -> the agentId its result record names at the record's top level (a Task's result, written in
    the parent's thread): the sub-agent that Task started."""
    named = {}
    for _, record in records:
        if not isinstance(record, dict) or record.get("type") != "user":
            continue
        agent = record.get("agentId")
        message = record.get("message")
        if not (isinstance(agent, str) and agent and isinstance(message, dict)):
            continue
        if record.get("isSidechain") and _pool(record) == f"agent-{agent}":
            continue  # a sub-agent's own record: the agentId names its own thread
        results = tool_results({"content": message.get("content")}) if isinstance(message.get("content"), list) else []
        if len(results) == 1:
            named.setdefault(id_key(results[0].get("tool_use_id")), agent)
    return named


def _pool(record: dict) -> str:
    if record.get("isSidechain"):
        agent = record.get("agentId")
        return f"agent-{agent}" if isinstance(agent, str) and agent else "sidechain"
    return MAIN


def _single(info: ThreadInfo, reading: _Reading) -> Parsed:
    """One thread alone, as the main one: one history, or its stretches when it was compacted."""
    tool_details: dict = {}
    segments, meta = _segments(_order(info.forest, reading.notes, place=reading.place), tool_details, reading,
                               main=info.id == MAIN)
    if len(segments) == 1 and not (segments[0].harness or segments[0].events or segments[0].notes):
        only = segments[0]
        return Parsed(messages=only.messages, meta=meta, responses=only.responses, tool_details=tool_details,
                      times=only.times, origins=only.origins)
    return Parsed(messages=segments[-1].messages, meta=meta, tool_details=tool_details,
                  origins=segments[0].origins if len(segments) == 1 else [],
                  threads=[ParsedThread(MAIN, segments, label=info.label)])


def _first_user_text(thread: ParsedThread) -> str | None:
    for message in thread.segments[0].messages if thread.segments else []:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            return "\n".join(t for t in texts if isinstance(t, str)) if texts else None
    return None


def _link(threads: list[ParsedThread], tool_details: dict, notes: Notes, named: dict | None = None) -> None:
    """Each sub-agent's thread to the Task/Agent tool_use that started it: by the agentId its result names (in
    `toolUseResult`, or `named`: on the result record itself), else by its prompt. What cannot be linked is said
    (derive puts those threads after the main one)."""
    uses = []  # (thread, tool_use) of every tool_use that starts a sub-agent, in order
    for thread in threads:
        for segment in thread.segments:
            for message in segment.messages:
                if message.get("role") == "assistant":
                    uses += [(thread, use) for use in tool_uses(message) if use.get("name") in STARTS_AGENTS]
    by_agent = {}
    for thread, use in uses:
        account = (tool_details.get(id_key(use.get("id"))) or {}).get("tool_use_result")
        agent = account.get("agentId") if isinstance(account, dict) else None
        if not (isinstance(agent, str) and agent):
            agent = (named or {}).get(id_key(use.get("id")))
        if isinstance(agent, str) and agent:
            by_agent.setdefault(agent, (thread, use))
    taken: set = set()
    for child in threads[1:]:
        found = by_agent.get(child.id[len("agent-"):]) if child.id.startswith("agent-") else None
        if found is None or id_key(found[1].get("id")) in taken:
            prompt = _first_user_text(child)
            found = next(((t, u) for t, u in uses if t is not child and id_key(u.get("id")) not in taken
                          and isinstance(u.get("input"), dict) and u["input"].get("prompt") == prompt
                          and prompt is not None), None)
        if found is None:
            child.parent = MAIN  # shown after the main thread's steps (derive says so)
            continue
        parent, use = found
        taken.add(id_key(use.get("id")))
        child.parent, child.parent_tool_use_id = parent.id, use.get("id")
        tool_input = use.get("input") if isinstance(use.get("input"), dict) else {}
        said = tool_input.get("description") or child.label
        child.label = short(str(said), 60) if said else child.label
        child.facts["started_by"] = {"tool": use.get("name"), "subagent_type": tool_input.get("subagent_type")}


def _dedupe(nodes: list[_Node], notes: Notes, place: Callable[[int], Note] = on_line) -> list[_Node]:
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
            notes.count(N_("records written twice (same uuid, same content); kept once"),
                        Note(N_("{place} (as {earlier})"), place=place(node.line), earlier=place(out[at].line)))
        elif node.record is not None:
            notes.count(N_("records repeat the uuid of an earlier line; each is kept as a record of its own"),
                        Note(N_("{place} (uuid of {earlier})"), place=place(node.line), earlier=place(out[at].line)))
            node.uuid = f"{node.uuid}#line{node.line}"
            out.append(node)
    out.sort(key=lambda n: n.line)
    return out


def _forest(nodes: list[_Node], everywhere: set[str], notes: Notes,
            place: Callable[[int], Note] = on_line) -> list[tuple[_Node, list[_Node]]]:
    """The chains of one thread as trees: (root, members in line order), roots in line order."""
    by_id = {n.uuid: n for n in nodes}
    roots = []
    for node in nodes:
        parent = by_id.get(node.parent) if node.parent else None
        if parent is not None and parent is not node:
            parent.kids.append(node)
        else:
            if node.parent and node.parent not in everywhere:
                notes.count(N_("records name a parentUuid that is not in the file; each starts a chain"),
                            place(node.line))
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
                notes.count(N_("records whose parentUuid chain loops back; cut there"), place(node.line))
                forest.append((node, grow(node)))
    return forest


def _thread(key: str, forest: list) -> ThreadInfo:
    nodes = sorted((n for _, members in forest for n in members), key=lambda n: n.line)
    messages = [n for n in nodes if n.record is not None]
    first_user = next((n.record for n in messages if n.record.get("type") == "user" and not harness_s(n.record)
                       and not _only_results(n.record["message"].get("content"))), None)
    said = short(message_text(first_user["message"]), 60) if first_user else "(no user message)"
    if key == MAIN:
        label = f"main conversation: {said}"
    else:
        label = f"sub-agent {key.split('-', 1)[1][:12]}: {said}"
    return ThreadInfo(key, label, len(messages), nodes[0].line if nodes else 0, forest)


def _order(forest: list, notes: Notes, thread: str | None = None,
           place: Callable[[int], Note] = on_line) -> list[_Node]:
    """The records of the conversation in chain order, tree after tree, and the compact boundaries on its path.

    In each tree the conversation is the path to its newest leaf (`_newest_leaf`);
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
    abandoned_at: list[int] = []  # the lines of the records passed over, for the warning to name
    for root, members in forest:
        messages = [n for n in members if n.record is not None]
        if not messages:
            continue
        trees += 1
        linked = linked or len(members) > 1
        node = _newest_leaf(members) or max(messages, key=lambda n: (n.ts, n.line))
        while node is not None:
            node.spine = True
            node = node.up
        response_ids: set = set()
        use_ids: set = set()
        ready = [(root.ts, root.line, root)]  # (ts, line) is unique: a node is one line
        while ready:
            node = heapq.heappop(ready)[2]
            record = node.record
            if (node.boundary is not None or node.extra is not None) and node.spine:
                out.append(node)  # a compaction (the history starts again after it), an attachment, a failed call
            if record is not None:
                message = record["message"]
                if not node.spine and not _belongs(record, message, response_ids, use_ids):
                    abandoned += _count_messages(node)
                    abandoned_at += _message_lines(node)
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
    said = []
    if abandoned:
        said.append(Note(N_n("passed over {n} message record on an abandoned branch of the chain (a message "
                             "edited or a response retried); the branch written last is imported",
                             "passed over {n} message records on abandoned branches of the chain (a message edited "
                             "or a response retried); the branch written last is imported"), n=abandoned))
        lines = sorted(abandoned_at)
        places = [place(n) for n in lines[:SHOWN_LINES]] + (["…"] if len(lines) > SHOWN_LINES else [])
        said[-1] = Note(N_("{said} (passed over: {places})"), said=said[-1], places=places)
    if trees > 1:
        if linked:
            said.append(Note(N_("the conversation is {n} separate chains (after compaction, a resumed session or "
                                "missing records); they are joined in the order of their first lines"), n=trees))
        else:
            said.append(Note(N_("no record's parentUuid links it to another record: the records are taken in line "
                                "order")))
    for note in said:  # about a sub-agent's thread: said so
        notes.add(in_thread(thread, note) if thread is not None else note)
    return out


def _newest_leaf(members: list[_Node]) -> _Node | None:
    """The end of the conversation in one tree: among its leaves (records no other record names as parent) with a
    message on their path, the one written last (timestamp), then the deepest. A record that comes last in the file
    but is another's parent (lines not in chain order), or a `system` record after the final answer, leaves the
    answer on the conversation's path."""
    best, best_key = None, None
    depth: dict[int, int] = {}
    said: dict[int, bool] = {}  # a message record on the path from the root to the node

    def walk(node: _Node) -> tuple[int, bool]:
        path = []
        while node is not None and id(node) not in depth:
            path.append(node)
            node = node.up
        d, has = (depth[id(node)], said[id(node)]) if node is not None else (-1, False)
        for n in reversed(path):
            d, has = d + 1, has or n.record is not None
            depth[id(n)], said[id(n)] = d, has
        return d, has

    for node in members:
        if any(kid.up is node for kid in node.kids):
            continue
        d, has = walk(node)
        if has and (best_key is None or (node.ts, d, node.line) > best_key):
            best, best_key = node, (node.ts, d, node.line)
    return best


def _belongs(record: dict, message: dict, response_ids: set, use_ids: set) -> bool:
    """Off the path but part of it: another line of a response on it, or a result of one of its tool_use blocks."""
    if record.get("type") == "assistant":
        return message.get("id") is not None and id_key(message.get("id")) in response_ids
    content = message.get("content")
    return (isinstance(content, list) and bool(content)
            and all(isinstance(b, dict) and b.get("type") == "tool_result" and id_key(b.get("tool_use_id")) in use_ids
                    for b in content))


SHOWN_LINES = 5  # lines a warning names of the records it passed over


def _message_lines(node: _Node) -> list[int]:
    """The lines of the message records from `node` down its branch."""
    lines, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.record is not None:
            lines.append(n.line)
        stack.extend(k for k in n.kids if k.up is n)
    return lines


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


def _segments(ordered: list[_Node], tool_details: dict, reading: _Reading,
              main: bool = True) -> tuple[list[Segment], dict]:
    """Records in order -> stretches of history (a compact boundary starts a new one) and the thread's facts.

    In each stretch one response's lines are joined into one message, and one
    turn's results into one user message. What Claude Code wrote for its user
    (a `<synthetic>` message, an API error) goes in no message: it is an event
    before the next one. The main thread also takes the prompts typed while the
    model worked (queue-operation) where they went in, the compactions' own calls,
    and the requests Claude Code recorded.
    """
    notes, place = reading.notes, reading.place
    segments = [Segment([])]
    group: tuple | None = None  # (message.id, index) of the last assistant message
    results_open = False  # the last message is a user message of tool_results only, which more results join
    responses = segments[0].responses
    attached: list = []  # attachments since the last call: what Claude Code added to the next request
    refs: list = []  # (segment, index, requestRef) of each response
    queued = list(reading.beside.queued) if main else []
    for node in ordered:
        if node.boundary is not None:
            if segments[-1].messages:  # the history so far is replaced: the next stretch starts from nothing
                trigger = node.boundary.get("trigger")
                kind = trigger if trigger in ("auto", "manual") else "imported"
                facts = {k: v for k, v in (("trigger", trigger), ("pre_tokens", node.boundary.get("pre_tokens")))
                         if v is not None}
                segments.append(Segment([], compaction={
                    "kind": kind, **facts, "source": f"compact_boundary ({node.boundary['line'].render()})",
                    "why": COMPACTED_WHY}))
                segments[-1].summarize = {"ts": node.ts}  # until a call of its own is found (_place_summaries)
                group, results_open = None, False
                responses = segments[-1].responses
            continue
        segment = segments[-1]
        messages = segment.messages
        if node.extra is not None:
            what, facts = node.extra
            if what == "attachment":
                attached.append(facts)
            else:  # a call that failed, on its way to being retried
                segment.events.setdefault(len(messages), []).append({"stage": "retry", "detail": facts})
            continue
        record = node.record
        message = record["message"]
        role = message.get("role") if message.get("role") in MESSAGE_TYPES else record["type"]
        if role == "assistant" and queued:
            while queued and queued[0].ts <= node.ts:  # typed before this call: it went in with it
                queue_in(segment, queued.pop(0), _epoch(node.ts))
                group, results_open = None, False
        content = clean_content(message["content"], place(node.line), notes)
        harness = harness_s(record)
        if harness in (SHOWN_WHY, API_ERROR_WHY):  # written for the person: no request sent it
            segment.events.setdefault(len(messages), []).append(shown(record, content, harness, place(node.line)))
            group, results_open = None, False
            continue
        if harness is not None:  # the harness's own message: one of its own, no response of a call
            segment.harness[len(messages)] = harness
            group, results_open = None, False
        elif role == "assistant":
            mid = message.get("id")
            if (group is not None and mid is not None and mid == group[0]
                    and (group[1] == len(messages) - 1 or (group[1] == len(messages) - 2 and results_open))):
                # Another line of the same response, maybe after results of its earlier tool_use lines.
                _join(messages[group[1]], content)
                recorded = responses[group[1]]
                for key in ("stop_reason", "usage"):
                    if message.get(key) is not None:
                        recorded[key] = message[key]
                continue
            group = (mid, len(messages))
            model = message.get("model")
            responses[len(messages)] = {"id": mid, "model": model, "stop_reason": message.get("stop_reason"),
                                        "usage": message.get("usage"), "request": {"model": model} if model else {}}
            if attached:
                responses[len(messages)]["detail"] = {"attachments": attached}
                attached = []
            if record.get("requestRef") is not None:
                refs.append((segment, len(messages), record["requestRef"]))
            results_open = False
        else:
            for block in tool_results({"content": content}):  # each run_tool step names its own result's line
                tool_details.setdefault(id_key(block.get("tool_use_id")), {})["origin"] = origin_of([place(node.line)], 0)
            if "toolUseResult" in record:
                for block in tool_results({"content": content}):
                    tool_details[id_key(block.get("tool_use_id"))]["tool_use_result"] = record["toolUseResult"]
            if results_open and isinstance(content, list) and content and isinstance(content[0], dict) \
                    and content[0].get("type") == "tool_result":
                # More results of the same turn (any text after them stays after them, as the API wants).
                messages[-1]["content"].extend(content)
                results_open = _only_results(content)
                continue
            results_open = _only_results(content)
            if not messages and segment.compaction is not None and record.get("isCompactSummary"):
                segment.start = 1  # the summary comes with the compaction: the history after it begins there
                segment.compaction["summary"] = message_text({"content": content})
        segment.times[len(messages)] = _epoch(node.ts)
        messages.append({"role": role, "content": list(content) if isinstance(content, list) else content})
        segment.origins.append(place(node.line))
    for left in queued:  # typed after the last call the log holds: it went in, as far as the log tells, at the end
        queue_in(segments[-1], left, _epoch(left.ts))
    segments = [s for s in segments if s.messages or s is segments[0]]
    _place_summaries(segments, reading.summaries if main else [])
    _unsummarised(segments, notes)
    _requests(segments, refs, reading)
    first = next((n.record for n in ordered if n.record is not None), None) or {}
    every = [m for s in segments for i, m in enumerate(s.messages) if i not in s.harness]
    first_user = next((m for m in every if m["role"] == "user" and not _only_results(m["content"])), None)
    model = next((r.get("model") for s in segments for r in s.responses.values() if r.get("model")), None)
    meta = {k: v for k, v in {
        "model": model, "task": message_text(first_user) if first_user else "",
        "session_id": first.get("sessionId") or first.get("session_id"), "cwd": first.get("cwd"),
        "git_branch": first.get("gitBranch"), "claude_code_version": first.get("version"),
    }.items() if v is not None}
    if main:
        meta.update(reading.beside.facts)
        stream = reading.beside.facts.get("stream_json") or {}
        if first_user is None and stream:  # -p stream-json writes no prompt: said, not left empty
            meta["task"] = STREAM_NO_PROMPT
        for key, value in (("model", stream.get("model")), ("cwd", stream.get("cwd")),
                           ("claude_code_version", stream.get("claude_code_version"))):
            if value and key not in meta:
                meta[key] = value
    return segments, meta


STREAM_NO_PROMPT = "(not recorded: Claude Code's stream-json output does not hold the prompt)"
SUMMARIZED_WHY = N_("the call Claude Code made to summarise the conversation before this compaction (its "
                    "agent-acompact log)")


def _requests(segments: list[Segment], refs: list, reading: _Reading) -> None:
    """Each response's request as Claude Code sent it (its api-request records), kept with its call."""
    if not refs or not reading.beside.requests:
        return
    known = {}
    for segment in segments:
        for message in segment.messages:
            known.setdefault(claude_code_beside.message_hash(message), message)
    for segment, index, ref in refs:
        sent = reading.beside.request_of(ref, known)
        if sent is None:
            continue
        recorded = segment.responses[index]
        recorded["request"] = sent["body"]
        facts = recorded.setdefault("detail", {})  # more facts for the call's detail (derive.py)
        facts["messages_sent"] = sent["messages"]
        facts["request_record"] = ref
        if sent["missing"]:
            reading.notes.count(N_("requests whose messages the log does not hold in full (an api-request names a "
                                   "message by a hash no record has); shown with a mark where one is missing"),
                                segment.origins[index] if index < len(segment.origins) else "—")


def _summary_of(info: ThreadInfo, notes: Notes, place) -> dict:
    """The call a compaction made to write its summary (Claude Code's agent-acompact log): its request and answer."""
    ordered = _order(info.forest, notes, info.id, place)
    segments, _ = _segments(ordered, {}, _Reading(notes, place, claude_code_beside.Beside(), []), main=False)
    messages = segments[-1].messages
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    recorded = segments[-1].responses.get(last) if last is not None else None
    ts = max((n.ts for n in ordered if n.record is not None), default="")
    if last is None:
        return {"thread": info.id, "ts": ts, "summary": "", "detail": None}
    response = {k: v for k, v in (recorded or {}).items() if k not in ("request", "detail")}
    response.update(content=messages[last].get("content"), role="assistant", type="message")
    request = dict((recorded or {}).get("request") or {})
    request["messages"] = messages[:last]
    summary = message_text(messages[last])
    return {"thread": info.id, "ts": ts, "summary": summary, "detail": {
        "kind": None, "why": SUMMARIZED_WHY, "request": request, "response": response, "summary": summary,
        "source": info.id}}


def _place_summaries(segments: list[Segment], summaries: list) -> None:
    """Each compaction's own call to the compaction it wrote the summary of: the one whose summary holds its words,
    else the first one after it in time without a call of its own."""
    opened = [s for s in segments[1:] if s.compaction is not None]
    times = {id(s): (s.summarize or {}).get("ts", "") for s in opened}
    for s in opened:
        s.summarize = None
    for found in summaries:
        if found["detail"] is None:
            continue
        free = [s for s in opened if s.summarize is None]
        words = found["summary"].strip()[:200]
        target = next((s for s in free if words and words in (s.compaction.get("summary") or "")), None)
        if target is None:
            target = next((s for s in free if times[id(s)] >= found["ts"]), None)
        if target is None:
            continue
        target.summarize = dict(found["detail"], kind=target.compaction.get("kind"))
        if not target.compaction.get("summary"):
            target.compaction["summary"] = found["summary"]


UNSUMMARISED_WHY = N_("Claude Code compacted the conversation; the log holds no summary after it (no `isCompactSummary` "
                      "record): from here the history holds only what the log wrote after the compaction")


def _unsummarised(segments: list[Segment], notes: Notes) -> None:
    """A compaction whose summary the log does not hold: imported, and said so rather than told as one whose model
    sees a summary."""
    for segment in segments[1:]:
        compaction = segment.compaction
        if compaction is None or segment.start or compaction.get("why") != COMPACTED_WHY:
            continue
        compaction["why"] = UNSUMMARISED_WHY
        notes.warn(N_("{source}: a compaction ({kind}) with no summary after it (no `isCompactSummary` record); "
                      "imported as the log has it"), source=compaction.get("source", ""),
                   kind=compaction.get("kind"))


def _join(target: dict, content: object) -> None:
    """Add one more line of a response to its message."""
    if isinstance(target["content"], str):
        target["content"] = [{"type": "text", "text": target["content"]}]
    target["content"].extend([{"type": "text", "text": content}] if isinstance(content, str) else content)


def exported(value: object) -> list | None:
    """A JSON value that is Claude Code records, as [(position, record)]: one record (a log of one line), a web
    export of a log (`{"loglines": [...]}`, each item a record), or a list of records; else None."""
    if looks_like(value):
        return [(1, value)]
    items = value.get("loglines") if isinstance(value, dict) else value
    if isinstance(items, list) and items and any(isinstance(r, dict) and r.get("type") in MESSAGE_TYPES
                                                 and isinstance(r.get("message"), dict) for r in items) \
            and all(looks_like(r) for r in items if isinstance(r, dict) and r.get("type") in MESSAGE_TYPES) \
            and (isinstance(value, dict) or any(isinstance(r, dict) and "uuid" in r for r in items)):
        return [(i + 1, record) for i, record in enumerate(items)]
    return None
