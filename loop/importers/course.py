"""The course's recorded traces (shareAI-lab/learn-claude-code, web/src/data/traces/*.json).

    {version, prompt, model, total_cycles, total_input_tokens, total_output_tokens,
     cycles: [{cycle, elapsed_ms, request: {model, system, messages, tools, max_tokens},
               response: {id, model, stop_reason, content, usage},
               tool_executions: [{name, input, output}]}]}

Each cycle is one call of the model. The history is what the requests sent
(each request's `messages` is the whole history up to that call), then the
last response, then the results of its tools if it asked for some.

A trace of the course's s04 holds a sub-agent's cycles between its parent's:
a request that starts a history of its own with the prompt of the parent's
pending `task` tool_use opens the sub-agent's thread, and the parent's next
request, which goes on from its own history, closes it. A request of the same
loop that does not go on from the history before it (s06: shorter, or with
earlier messages changed) is a compaction.

A trace of the course's agent teams (s09 on) holds teammates' cycles among
the lead's: each teammate is a loop of its own system prompt, beside the
lead's rather than inside it, and reuses the lead's cycle numbers. A teammate
is told apart by its history (a request goes on from the one its last cycle
sent), not by its cycle number: one thread a teammate, linked to the
`spawn_teammate` tool_use whose prompt its first request starts with. The
recorder writes no tool_executions for a teammate: its next request holds its
results. The
response is kept as recorded beside the history: where the recorder did not
understand a block it wrote `{"type": "unknown", "raw": "..."}`, which is shown
raw, while the next request carries the block as it was really sent.
"""

from __future__ import annotations

from ..engine.blocks import tool_result
from ..text.catalogs import N_, N_n
from ..engine.compact import RESENT_WHY
from ..engine.rules import tool_results, tool_uses
from ..tools import ToolOutput
from ..engine.trace import MAIN
from .common import OF_THREAD, SETTINGS, Parsed, ParsedThread, Segment, clean_content, id_key, quoted
from .notes import Note, Notes, in_thread


HARNESS_WHY = N_("the harness put this message between two recorded calls; no recorded call produced it")


def looks_like(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("cycles"), list)


class _Thread:
    """A thread being read: its stretches of history, and what its last request sent."""

    def __init__(self, parsed: ParsedThread, system: object):
        self.parsed = parsed
        self.system = system
        self.sent: list | None = None  # the last request's messages (None before its first cycle)
        self.pending: dict = {}  # task tool_use id (common.id_key) -> (that id, its prompt), from its last response
        self.spawned: dict = {}  # spawn_teammate tool_use id (id_key) -> (that id, its input), until a teammate starts

    @property
    def segment(self) -> Segment:
        return self.parsed.segments[-1]


def _continues(thread: _Thread, sent: list) -> bool:
    """Does a request's history go on from what this thread sent last, plus that call's response?"""
    before = thread.sent
    if before is None:
        return False
    return len(sent) > len(before) and sent[: len(before)] == before and sent[len(before)].get("role") == "assistant"


def _first_text(messages: list) -> str | None:
    first = messages[0] if messages else None
    if not isinstance(first, dict) or first.get("role") != "user":
        return None
    content = first.get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"] \
        if isinstance(content, list) else []
    return "\n".join(t for t in texts if isinstance(t, str)) if texts else None


def read(trace: dict, notes: Notes) -> Parsed:
    """A course trace: one thread, or (s04) a sub-agent's cycles between its parent's, or (s06) a history
    compacted on the way. Each cycle's request tells which: it goes on from a thread's history, starts a
    sub-agent with the prompt of a pending `task` tool_use, or is a rewritten (compacted) history."""
    parsed = Parsed()
    cycles = [c for c in trace["cycles"] if isinstance(c, dict)]
    if len(cycles) < len(trace["cycles"]):
        notes.warn(N_n("cycles: {n} item is not an object; passed over", "cycles: {n} items are not objects; passed over"),
                   n=len(trace["cycles"]) - len(cycles))
    first_request = next((c["request"] for c in cycles if isinstance(c.get("request"), dict)), {})
    settings = {k: first_request[k] for k in SETTINGS if k in first_request}
    main = _Thread(ParsedThread(MAIN, [Segment([])]), first_request.get("system"))
    threads = [main]
    stack = [main]  # the loops open now: the main one, and a sub-agent while its cycles come
    for k, cycle in enumerate(cycles):
        name = f"cycle {cycle.get('cycle', k + 1)}"
        request = cycle.get("request") if isinstance(cycle.get("request"), dict) else {}
        raw = request.get("messages")
        sent = None
        if isinstance(raw, list):
            sent = []
            for j, m in enumerate(raw):
                content = clean_content(m.get("content"), f"{name}.request.messages[{j}]", notes) if isinstance(m, dict) else None
                if content is None or m.get("role") not in ("user", "assistant"):
                    notes.warn(N_("{where}: not a user or assistant message with content; passed over"),
                               where=f"{name}.request.messages[{j}]")
                    continue
                sent.append({"role": m["role"], "content": content})
        thread = stack[-1]
        if sent is not None:
            thread = _place(stack, threads, sent, request, name, notes)
        segment = thread.segment
        said = _said(name, thread, main)  # cycle numbers repeat across teammates: a warning names the thread too
        if sent is not None:
            # What the call really sent is the history up to it.
            segment.messages[:] = sent
            segment.origins[:] = [f"{name}.request.messages[{j}]" for j in range(len(sent))]
            thread.sent = sent
        elif k == 0:
            segment.messages[:] = [{"role": "user", "content": str(trace.get("prompt", ""))}]
            segment.origins[:] = ["prompt"]
            thread.sent = list(segment.messages)
            notes.warn(N_("{cycle}: the request's messages were not recorded; the history starts from the prompt"),
                       cycle=name)
        else:
            notes.warn(N_("{cycle}: the request's messages were not recorded; the history is built from the "
                          "responses and tool_executions before it"), cycle=name)
            thread.sent = list(segment.messages)
        history = segment.messages
        response = cycle.get("response")
        if not isinstance(response, dict):
            notes.warn(N_("{cycle}: no response was recorded; the trace ends before it"), cycle=said)
            break
        content = clean_content(response.get("content"), f"{name}.response", notes)
        if content is None:
            notes.warn(N_("{cycle}: the response has no content; the trace ends before it"), cycle=said)
            break
        index = len(history)
        recorded = dict(response)
        recorded["content"] = content
        recorded["request"] = {key: request[key] for key in SETTINGS if key in request}
        if cycle.get("elapsed_ms") is not None:
            recorded["duration_ms"] = cycle["elapsed_ms"]
        recorded["detail"] = {"cycle": cycle.get("cycle", k + 1)}
        recorded["detail"]["origin"] = {"at": f"{name}.response"}  # the call's own cycle, whichever request resent it
        segment.responses[index] = recorded
        history.append({"role": "assistant", "content": content})
        segment.origins.append(f"{name}.response")
        uses = tool_uses(history[-1])
        thread.pending = {id_key(use.get("id")): (use.get("id"), use["input"]["prompt"]) for use in uses
                          if use.get("name") == "task" and isinstance(use.get("input"), dict)
                          and isinstance(use["input"].get("prompt"), str)}
        thread.spawned.update(_spawns(uses))
        recorded_runs = cycle.get("tool_executions")
        executions = [e for e in recorded_runs if isinstance(e, dict)] if isinstance(recorded_runs, list) else []
        if len(executions) != len(uses) and not (thread.pending and len(executions) == len(uses) - len(thread.pending)):
            notes.warn(N_("{cycle}: {uses} tool_use block(s) but {runs} tool_execution(s) recorded"), cycle=said,
                       uses=len(uses), runs=len(executions))
        results = []
        ran = iter(executions)
        for use in uses:
            execution = None if id_key(use.get("id")) in thread.pending and len(executions) < len(uses) \
                else next(ran, None)
            if execution is None:
                continue  # a sub-agent's answer: its parent's next request carries it
            if execution.get("name") != use.get("name"):
                notes.warn(N_("{cycle}: tool_execution {ran} recorded for tool_use {asked} ({id})"), cycle=said,
                           ran=quoted(execution.get("name")), asked=quoted(use.get("name")), id=str(use.get("id")))
            parsed.tool_details[id_key(use.get("id"))] = {"tool_execution": execution}
            results.append(tool_result(use.get("id"), ToolOutput(execution.get("output", ""))))
        if results:
            # Stage 5 as the recorder ran it; the next request, if any, replaces this with what it sent.
            history.append({"role": "user", "content": results})
            segment.origins.append(f"{name}.tool_executions")
    # Where the recorder's response differs from what the next request sent, say so once a cycle.
    for thread in threads:
        for segment in thread.parsed.segments:
            for index, recorded in segment.responses.items():
                if index < len(segment.messages) - 1 and recorded["content"] != segment.messages[index]["content"]:
                    unknown = sum(1 for b in recorded["content"] if isinstance(b, dict) and b.get("type") == "unknown")
                    said = {"cycle": _said(f"cycle {recorded['detail']['cycle']}", thread, main),
                            "where": f"messages.{index}"}
                    if unknown:
                        notes.warn(N_n("{cycle}: the response as recorded ({n} block recorded as type 'unknown') "
                                       "differs from the assistant message the next request sent; call_model shows "
                                       "the response, the history ({where}) what was sent",
                                       "{cycle}: the response as recorded ({n} blocks recorded as type 'unknown') "
                                       "differs from the assistant message the next request sent; call_model shows "
                                       "the response, the history ({where}) what was sent"), n=unknown, **said)
                    else:
                        notes.warn(N_("{cycle}: the response as recorded differs from the assistant message the next "
                                      "request sent; call_model shows the response, the history ({where}) what was "
                                      "sent"), **said)
    for thread in threads:
        for segment in thread.parsed.segments:
            _mark_harness(segment)
    _check_totals(trace, cycles, notes)
    # a field of the wrong type is left out, not turned into text the page would show as the task
    prompt = trace.get("prompt") if isinstance(trace.get("prompt"), str) else ""
    parsed.meta = {**settings, "task": prompt,
                   "course_trace": {k: v for k, v in trace.items() if k != "cycles"}}
    if isinstance(trace.get("model"), str) and trace["model"] and "model" not in parsed.meta:
        parsed.meta["model"] = trace["model"]
    only = main.parsed.segments[0]
    parsed.messages = main.parsed.messages
    if len(threads) == 1 and len(main.parsed.segments) == 1 and not only.harness:
        parsed.responses, parsed.origins = only.responses, only.origins
    else:
        parsed.threads = [t.parsed for t in threads]
    return parsed


def _place(stack: list, threads: list, sent: list, request: dict, name: str, notes: Notes) -> _Thread:
    """The thread a cycle's request belongs to: one it goes on from, a sub-agent it starts, or a compaction."""
    for depth in range(len(stack) - 1, -1, -1):
        if _continues(stack[depth], sent):
            del stack[depth + 1:]  # back in a parent: its sub-agents have answered
            return stack[depth]
    for thread in threads:  # a teammate's next cycle: its loop runs beside the lead's, not inside it
        if thread not in stack and _continues(thread, sent):
            return thread
    top = stack[-1]
    if top.sent is None:  # the main thread's first cycle
        return top
    prompt = _first_text(sent)
    teammate = _teammate(threads, sent, request, prompt, name, notes)
    if teammate is not None:
        return teammate
    for depth in range(len(stack) - 1, -1, -1):
        started = next((key for key, (_, asked) in stack[depth].pending.items() if asked == prompt), None)
        if started is not None:
            parent = stack[depth]
            del stack[depth + 1:]
            use_id = parent.pending.pop(started)[0]
            child = _Thread(ParsedThread(f"task-{started}", [Segment([])], parent=parent.parsed.id,
                                         parent_tool_use_id=use_id, system=request.get("system"),
                                         tools=request.get("tools"), label=" ".join(str(prompt).split())[:60]),
                            request.get("system"))
            threads.append(child)
            stack.append(child)
            return child
    if request.get("system") != top.system:
        # A loop of its own that nothing in the trace started: beside the open ones (a teammate whose spawning
        # the trace does not show), never inside another such loop.
        child = _Thread(ParsedThread(_unique(threads, f"cycle-{name.split()[-1]}"), [Segment([])],
                                     parent=top.parsed.id,
                                     system=request.get("system"), tools=request.get("tools"),
                                     label=_label(prompt)), request.get("system"))
        notes.add(in_thread(child.parsed.id, Note(
            N_("{cycle}: its request starts a history of its own with another system prompt, but no task tool_use "
               "asked for it; read as a sub-agent's thread that nothing links to its parent"), cycle=name)))
        threads.append(child)
        return child
    # The same loop, but its history was rewritten (shorter, or earlier messages changed): a compaction.
    top.parsed.segments.append(Segment([], start=len(sent), compaction={
        "kind": "imported", "why": RESENT_WHY.format(name=name, sent=len(sent), held=len(top.segment.messages))}))
    return top


def _mark_harness(segment: Segment) -> None:
    """Mark the messages the harness put between two recorded cycles: a trace records one call of the loop a
    cycle and starts from one prompt, so a message past the first that is neither a recorded response nor the
    write-back of the tool_results just before it was added by the harness (s08's background results and the
    assistant's "Noted ..." after them, say), not produced by a model call."""
    messages = segment.messages
    for i in range(max(segment.start, 1), len(messages)):
        if i in segment.responses:
            continue
        previous = messages[i - 1]
        if i - 1 in segment.responses and messages[i].get("role") == "user" and tool_uses(previous) \
                and tool_results(messages[i]):
            continue  # stage 5: the results of the tool_use blocks just before
        segment.harness[i] = HARNESS_WHY


def _unique(threads: list, wanted: str) -> str:
    """`wanted`, or `wanted-2`, `-3`, ... when a thread has it: warnings name threads by their id."""
    taken = {t.parsed.id for t in threads}
    n, out = 1, wanted
    while out in taken:
        n += 1
        out = f"{wanted}-{n}"
    return out


def _said(name: str, thread: _Thread, main: _Thread) -> str | Note:
    """A cycle as a warning names it: "cycle 2", or "cycle 2 of teammate-bob" in a thread not the main one."""
    return name if thread is main else Note(OF_THREAD, where=name, thread=thread.parsed.id)


SPAWNS = ("spawn_teammate",)  # the course's agent teams (s09-s11): the lead starts a teammate's loop with it


def _spawns(uses: list) -> dict:
    return {id_key(use.get("id")): (use.get("id"), use["input"]) for use in uses
            if use.get("name") in SPAWNS and isinstance(use.get("input"), dict)}


def _label(prompt: str | None) -> str:
    return " ".join(str(prompt).split())[:60] if prompt else ""


def _teammate(threads: list, sent: list, request: dict, prompt: str | None, name: str, notes: Notes) -> _Thread | None:
    """A teammate's first cycle, or its history rewritten: a thread of its own beside the lead's.

    Its first request is linked to the spawn_teammate tool_use whose prompt it starts with (or whose name its
    system prompt gives); a request that goes on from no thread, with the system prompt of a teammate already
    read, is that teammate's history rewritten (a compaction), not a new teammate."""
    system = request.get("system")
    for parent in threads:
        for key, (use_id, asked) in parent.spawned.items():
            named = asked.get("name")
            if (prompt is not None and asked.get("prompt") == prompt) or (
                    isinstance(named, str) and named and isinstance(system, str) and f"'{named}'" in system):
                del parent.spawned[key]
                said = named if isinstance(named, str) and named else str(use_id)
                role = asked.get("role")
                child = _Thread(ParsedThread(_unique(threads, f"teammate-{'-'.join(said.split())}"), [Segment([])],
                                             parent=parent.parsed.id, parent_tool_use_id=use_id, system=system,
                                             tools=request.get("tools"),
                                             label=f"{said} ({role})" if isinstance(role, str) and role else said,
                                             facts={"started_by": {"tool": SPAWNS[0]}}), system)
                threads.append(child)
                return child
    if system is None:
        return None
    for thread in threads[1:]:
        spawned = (thread.parsed.facts.get("started_by") or {}).get("tool") in SPAWNS
        if spawned and thread.system == system and thread.sent is not None:
            thread.parsed.segments.append(Segment([], start=len(sent), compaction={
                "kind": "imported",
                "why": RESENT_WHY.format(name=name, sent=len(sent), held=len(thread.segment.messages))}))
            return thread
    return None


def _check_totals(trace: dict, cycles: list, notes: Notes) -> None:
    if isinstance(trace.get("total_cycles"), int) and trace["total_cycles"] != len(cycles):
        notes.warn(N_n("total_cycles says {said}, the file holds {n} cycle",
                       "total_cycles says {said}, the file holds {n} cycles"), said=trace["total_cycles"], n=len(cycles))
    usages = [c["response"]["usage"] for c in cycles
              if isinstance(c.get("response"), dict) and isinstance(c["response"].get("usage"), dict)]
    for side in ("input", "output"):
        total = trace.get(f"total_{side}_tokens")
        found = sum(u.get(f"{side}_tokens") for u in usages if type(u.get(f"{side}_tokens")) is int)
        if type(total) is int and total != found:
            notes.warn(N_("{field} says {said}, the cycles' usage adds up to {found}"), field=f"total_{side}_tokens",
                       said=total, found=found)
