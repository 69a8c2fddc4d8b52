"""Loopscope's transcript format (documented in docs/transcript-format.md).

One JSON object holds a whole trace. At top level `messages` is the main
thread's final history in Messages API form, so any tool that reads Anthropic
histories can use the file; `threads` holds every thread (the main loop and
each sub-agent's) with its final history; `steps` holds one record a stage,
naming its thread. Each history is written once: a step keeps only
`n_messages`, the length of its thread's history at that moment, and a
`compact` step keeps what it replaced, so every earlier version can be rebuilt.
Version 1 files (one thread, no compaction) still load. Version 3 is version 2 whose histories may hold a
harness's `role: "system"` turns (Claude Code's environment block, as a recording saw it sent); a trace without
one is still written as version 2, so readers of version 2 read it. Every other format is imported into this one
(see importers).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..engine import details, rules
from ..text.catalogs import N_, N_n, Note
from ..engine.history import History
from ..engine.trace import COMPLETE_STAGES, HARNESS, MAIN, MORE_STAGES, STAGES, Step, Thread, Trace

FORMAT = "loopscope-transcript"
VERSION = 2
SYSTEM_TURNS = 3  # the version whose histories may hold `role: "system"` turns (written only when one does)
READS = (1, 2, 3)  # version 1 (one thread, a history that only grew) still loads
STEP_FIELDS = ("stage", "turn_count", "transition_reason", "stop_reason", "n_messages",
               "input_tokens", "output_tokens", "ended", "time", "detail", "thread")
THREAD_FIELDS = ("id", "parent", "parent_tool_use_id", "system", "tools", "label", "messages")
KNOWN_STAGES = set(STAGES) | {"stop", HARNESS} | set(MORE_STAGES) | set(COMPLETE_STAGES)
COMPACT_KINDS = ("micro", "auto", "manual", "imported", "resume")


# Deeper JSON than this is refused when read. Python's json parses up to about 1,000 levels,
# less whatever the stack already holds; a value read near that bound then fails to render
# (json.dumps, the Markdown export) on the deeper stack of a page. Real files nest < 30.
MAX_DEPTH = 200


AT = N_("{where}: {said}")  # what is wrong, and where: a JSON path such as steps[3].stage (data, as it is)


class TranscriptError(ValueError):
    """A transcript that cannot be loaded: its `note` says what is wrong and where, in any language.

    `TranscriptError(N_("… {name} …"), name=...)`, or a Note made elsewhere; `str()` of it is the English (the
    command line's and the logs'), a page says `note` in its own language.
    """

    def __init__(self, message: str | Note, /, **values: object) -> None:
        self.note = message if isinstance(message, Note) else Note(message, **values)
        super().__init__(self.note.render())


class NumberTooLong(ValueError):
    """JSON holding a whole number longer than Python reads (4,300 digits), as a hostile file may."""


NUMBER_TOO_LONG = N_("it holds a whole number too long to read (over 4,300 digits)")  # an importer says it again


def parse_json(text: str | bytes) -> object:
    """`json.loads`, where a number too long to read is a `NumberTooLong` that says so.

    Python refuses to read an int of more than 4,300 digits with a bare ValueError
    that names no place in the file; every reader of files goes through here.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        raise NumberTooLong(NUMBER_TOO_LONG) from None


# The numbers of a step: whole counts of at most 15 digits, and a time a float can hold.
MAX_COUNT = 10**15
NOT_COUNT = N_("not a whole number of at most 15 digits: {found}")


def _count_ok(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT


def _time_ok(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too big for a float
        return False


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """True when lists and objects in `value` nest more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def step_dict(step: Step) -> dict:
    """One step as the format writes it (its detail as the object it was given: the same keys, in their order)."""
    return {k: getattr(step, k) if k != "detail" else step.detail.to_dict() for k in STEP_FIELDS}


def thread_dict(thread: Thread) -> dict:
    """One thread as the format writes it: its settings and its final history (the main thread's is the
    top-level `messages`, written once)."""
    out = {k: getattr(thread, k) for k in THREAD_FIELDS if not (k == "messages" and thread.id == MAIN)}
    if thread.facts:
        out["facts"] = thread.facts
    return out


def _holds_system(messages: object) -> bool:
    return isinstance(messages, list) and any(rules.is_system(m) for m in messages)


def version_of(trace: Trace) -> int:
    """The version `trace` is written as: 3 when a history of it holds a system turn (now or before a rewrite),
    else 2."""
    for thread in trace.threads.values():
        if _holds_system(thread.messages):
            return SYSTEM_TURNS
    for step in trace.steps:
        if step.stage == "compact" and (_holds_system(step.detail.history_before) or any(
                rules.is_system(item.get("message")) for item in step.detail.replaced or [] if isinstance(item, dict))):
            return SYSTEM_TURNS
    return VERSION


def to_dict(trace: Trace) -> dict:
    """The transcript of `trace`, ready for `json.dump`."""
    return {
        "format": FORMAT,
        "version": version_of(trace),
        **{k: v for k, v in trace.meta.items() if k not in ("format", "version")},
        "messages": trace.messages,
        "threads": [thread_dict(t) for t in trace.threads.values()],
        "steps": [step_dict(step) for step in trace.steps],
        **({"branches": [to_dict(b) for b in trace.branches]} if trace.branches else {}),
    }


def dumps(trace: Trace) -> str:
    return json.dumps(to_dict(trace), ensure_ascii=False, indent=1)


def save(trace: Trace, path: str | Path) -> None:
    Path(path).write_text(dumps(trace), encoding="utf-8")


def _shown(value: object) -> str | Note:
    """A value for an error message: its repr (data), cut; a hostile number is said by its size, not printed whole."""
    if isinstance(value, int) and value.bit_length() > 200:  # a hostile number: say its size, not its digits
        try:
            return Note(N_n("a number of {n:,} digit", "a number of {n:,} digits"), n=len(str(abs(value))))
        except ValueError:  # over 4,300 digits: str() refuses
            return Note(N_n("a number of about {n:,} digit", "a number of about {n:,} digits"),
                        n=int(value.bit_length() * 0.30103))
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _need(condition: bool, where: str | Note, what: str | tuple[str, str], /, **values: object) -> None:
    """Unless `condition`: a TranscriptError saying `what` (a message marked N_, filled with `values`) at `where`."""
    if not condition:
        raise TranscriptError(AT, where=where, said=Note(what, **values))


NOT_LIST = N_("missing, or not a list")
# A detail's key holding a value of another type; {expected}: JSON's names of types (object, string, ...)
WRONG_TYPE = N_("{expected} expected, found {found}")
NOT_OBJECT = N_("not an object")
NO_THREAD = N_("names no thread of this transcript: {found}")


def _messages(value: object, where: str, system: bool = False) -> list:
    """`value` checked as a history; `system`: a version 3 file, whose histories may hold system turns."""
    _need(isinstance(value, list), where, NOT_LIST)
    roles = ("user", "assistant", rules.SYSTEM) if system else ("user", "assistant")
    for i, message in enumerate(value):
        _need(isinstance(message, dict), f"{where}[{i}]", NOT_OBJECT)
        if system:
            _need(message.get("role") in roles, f"{where}[{i}].role",
                  N_("must be {user}, {assistant} or {system}, found {found}"), user="'user'",
                  assistant="'assistant'", system="'system'", found=_shown(message.get("role")))
        else:
            _need(message.get("role") in roles, f"{where}[{i}].role",
                  N_("must be {user} or {assistant}, found {found}"), user="'user'", assistant="'assistant'",
                  found=_shown(message.get("role")))
        _need(isinstance(message.get("content"), (str, list)), f"{where}[{i}].content",
              N_("missing, or not a string or list"))
    return value


def _threads(data: dict, messages: list, system: bool = False) -> dict[str, Thread]:
    """The threads of a transcript: those it lists (version 2), or the main one alone."""
    raw = data.get("threads")
    if raw is None:
        return {MAIN: Thread(MAIN, system=data.get("system"), tools=data.get("tools"), messages=messages)}
    _need(isinstance(raw, list), "threads", N_("not a list"))
    threads: dict[str, Thread] = {}
    for i, item in enumerate(raw):
        where = f"threads[{i}]"
        _need(isinstance(item, dict), where, NOT_OBJECT)
        tid = item.get("id")
        _need(isinstance(tid, str) and tid, f"{where}.id", N_("missing, or not a string"))
        _need(tid not in threads, f"{where}.id", N_("{found} is used by an earlier thread"), found=_shown(tid))
        # system and tools are kept as they came (an imported log's may be blocks, or odd); these are read:
        for key, kinds, what in (("parent", str, N_("not a str: {found}")), ("label", str, N_("not a str: {found}")),
                                 ("facts", dict, N_("not a dict: {found}"))):
            _need(item.get(key) is None or isinstance(item[key], kinds), f"{where}.{key}", what,
                  found=_shown(item.get(key)))
        own = _messages(item["messages"], f"{where}.messages", system) if "messages" in item else None
        if tid == MAIN:
            _need(item.get("parent") is None, f"{where}.parent", N_("the main thread has no parent"))
            _need(own is None or own == messages, f"{where}.messages",
                  N_("differs from the top-level messages (both are the main thread's final history)"))
            own = messages
        else:
            _need(own is not None, f"{where}.messages", NOT_LIST)
        threads[tid] = Thread(tid, parent=item.get("parent"), parent_tool_use_id=item.get("parent_tool_use_id"),
                              system=item.get("system"), tools=item.get("tools"), label=item.get("label") or "",
                              messages=own, facts=item.get("facts") or {})
    _need(MAIN in threads, "threads", N_("no thread with id {main} (the main loop)"), main=repr(MAIN))
    for i, thread in enumerate(threads.values()):
        _need(thread.parent is None or thread.parent in threads, f"threads[{i}].parent", NO_THREAD,
              found=_shown(thread.parent))
        _need(thread.id == MAIN or thread.parent is not None, f"threads[{i}].parent",
              N_("a sub-agent's thread names its parent thread"))
    main = threads.pop(MAIN)
    return {MAIN: main, **threads}  # the main thread first


def _step(raw: object, i: int, threads: dict, system: bool = False) -> Step:
    where = f"steps[{i}]"
    _need(isinstance(raw, dict), where, NOT_OBJECT)
    missing = [k for k in ("stage", "turn_count", "n_messages") if k not in raw]
    _need(not missing, where, N_("missing {fields}"), fields=missing)
    _need(isinstance(raw["stage"], str) and raw["stage"] in KNOWN_STAGES, f"{where}.stage",
          N_("unknown stage {found}"), found=_shown(raw["stage"]))
    thread = raw.get("thread", MAIN)
    _need(isinstance(thread, str) and thread in threads, f"{where}.thread", NO_THREAD, found=_shown(thread))
    _need(isinstance(raw["n_messages"], int) and not isinstance(raw["n_messages"], bool) and raw["n_messages"] >= 0,
          f"{where}.n_messages", N_("not a count of messages: {found}"), found=_shown(raw["n_messages"]))
    _need(_count_ok(raw["turn_count"]), f"{where}.turn_count", NOT_COUNT, found=_shown(raw["turn_count"]))
    raw_detail = raw.get("detail") or {}
    _need(isinstance(raw_detail, dict), f"{where}.detail", NOT_OBJECT)
    stage = raw["stage"]
    detail = details.of(stage, raw_detail)  # its stage's type; keys it does not know kept as they are
    if stage in ("call_model", "summarize"):
        _need(isinstance(detail.response, dict) and isinstance(detail.request, dict),
              f"{where}.detail", N_("a {stage} step needs its request and response"), stage=stage)
    if stage == "run_tool":
        _need(isinstance(detail.tool_result, dict), f"{where}.detail",
              N_("a {stage} step needs its tool_result"), stage=stage)
    if stage == "compact":
        _need(detail.kind in COMPACT_KINDS, f"{where}.detail.kind", N_("one of {kinds}, found {found}"),
              kinds=list(COMPACT_KINDS), found=_shown(detail.kind))
        if detail.given("history_before"):
            _messages(detail.history_before, f"{where}.detail.history_before", system)
        else:
            replaced = detail.replaced
            _need(isinstance(replaced, list), f"{where}.detail",
                  N_("a compact step needs what it replaced: `replaced` or `history_before`"))
            for k, item in enumerate(replaced):
                _need(isinstance(item, dict) and isinstance(item.get("index"), int)
                      and not isinstance(item.get("index"), bool), f"{where}.detail.replaced[{k}]",
                      N_("needs an `index` and the `message` it held"))
                _messages([item.get("message")], f"{where}.detail.replaced[{k}].message", system)
    try:
        details.check(detail)
    except details.DetailError as exc:
        _need(False, f"{where}.detail.{exc.key}", WRONG_TYPE, expected=" or ".join(exc.expected),
              found=_shown(exc.found))
    for key, ok, what in (("input_tokens", _count_ok, NOT_COUNT), ("output_tokens", _count_ok, NOT_COUNT),
                          ("time", _time_ok, N_("not a number of seconds: {found}"))):
        value = raw.get(key)
        _need(value is None or ok(value), f"{where}.{key}", what, found=_shown(value))
    return Step(
        index=i, stage=stage, turn_count=raw["turn_count"],
        transition_reason=raw.get("transition_reason"), stop_reason=raw.get("stop_reason"),
        n_messages=raw["n_messages"], input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0), ended=raw.get("ended"), time=float(raw.get("time") or 0),
        detail=detail, thread=thread,
    )


THREAD = N_("the thread {thread}")  # named by its id


def _history(thread: Thread, steps: list[Step], own: list[int]) -> History:
    """Every version of a thread's history, rebuilt from its final one by undoing its steps, newest first.

    A step appended messages[n before : n]; a compact step put back what it
    replaced (`replaced`) or the whole history before it (`history_before`).
    """
    final = thread.messages
    if not any(steps[i].stage == "compact" for i in own):  # it only grew: every version is a prefix
        previous = 0
        for i in own:
            n = steps[i].n_messages
            _need(previous <= n <= len(final), f"steps[{i}].n_messages",
                  N_n("{found} does not fit a history of {n} message (after {previous})",
                      "{found} does not fit a history of {n} messages (after {previous})"),
                  found=_shown(n), n=len(final), previous=previous)
            previous = n
        return History(final)
    last = steps[own[-1]].n_messages
    _need(last <= len(final), f"steps[{own[-1]}].n_messages",
          N_n("{found} does not fit the thread's final history of {n} message",
              "{found} does not fit the thread's final history of {n} messages"), found=_shown(last), n=len(final))
    held = list(final[:last])  # the history after the step being undone
    timelines: dict[int, list] = {}
    for k in range(len(own) - 1, -1, -1):
        i = own[k]
        step = steps[i]
        before = steps[own[k - 1]].n_messages if k else 0
        where = f"steps[{i}].n_messages"
        _need(len(held) == step.n_messages, where,
              N_n("{found} does not fit: the thread's history then holds {n} message",
                  "{found} does not fit: the thread's history then holds {n} messages"),
              found=_shown(step.n_messages), n=len(held))
        if step.stage != "compact":
            _need(before <= step.n_messages, where, N_("{found} is fewer than the {before} of the thread's step before "
                  "it; only a compact step may shorten a history"), found=step.n_messages, before=before)
            for slot in range(before, step.n_messages):
                timelines.setdefault(slot, []).append((i, held[slot]))
            del held[before:]
        elif step.detail.history_before is not None:
            for slot in range(step.n_messages):
                timelines.setdefault(slot, []).append((i, held[slot]))
            held = list(step.detail.history_before)
            _need(len(held) == before, f"steps[{i}].detail.history_before",
                  N_n("holds {n} message; the thread's step before it has {before}",
                      "holds {n} messages; the thread's step before it has {before}"), n=len(held), before=before)
        else:
            _need(before == step.n_messages, where, N_("a compact step that replaces messages in place keeps their "
                  "number; the thread's step before it has {before}"), before=before)
            for item in reversed(step.detail.replaced):
                slot = item["index"]
                _need(0 <= slot < len(held), f"steps[{i}].detail.replaced", N_("index {index} is outside the history"),
                      index=slot)
                timelines.setdefault(slot, []).append((i, held[slot]))
                held[slot] = item["message"]
    slots = [timelines.get(slot) for slot in range(max(timelines, default=-1) + 1)]
    _need(all(slots), Note(THREAD, thread=repr(thread.id)), N_("a message of its history was never added by a step"))
    return History.from_timelines([t[::-1] for t in slots], len(final))


def from_dict(data: object, *, strict: bool = True) -> Trace:
    """Rebuild a trace from a transcript object, checking it as it goes.

    With `strict`, a history that breaks the tool-use pairing rules is refused
    (a Loopscope run never writes one); importers pass `strict=False` to keep a
    real log's broken pairs as a lesson.
    """
    _need(isinstance(data, dict), Note(N_("top level")), N_("a transcript is a JSON object"))
    _need(data.get("format") == FORMAT, "format",
          N_("expected {expected}, found {found} (is this a Loopscope transcript?)"), expected=repr(FORMAT),
          found=_shown(data.get("format")))
    _need(data.get("version") in READS, "version",
          N_("this Loopscope reads versions {first} to {last}, the file is version {found}"), first=READS[0],
          last=READS[-1], found=_shown(data.get("version")))
    system = data["version"] >= SYSTEM_TURNS  # its histories may hold system turns
    messages = _messages(data.get("messages"), "messages", system)
    threads = _threads(data, messages, system) if data["version"] >= 2 else _threads({}, messages)
    raw_steps = data.get("steps")
    _need(isinstance(raw_steps, list), "steps", NOT_LIST)
    steps = [_step(raw, i, threads, system) for i, raw in enumerate(raw_steps)]
    own: dict[str, list[int]] = {}
    for step in steps:
        own.setdefault(step.thread, []).append(step.index)
    for tid, thread in threads.items():
        thread.history = _history(thread, steps, own.get(tid, []))
    fork = data.get("forked_from")
    on_purpose = isinstance(fork, dict) and fork.get("edit") == "mistake"  # Break it here (engine/broken.py)
    # A learner's own loop (loop/yours) that the API refused keeps the history it sent, to be seen where it broke.
    on_purpose = on_purpose or (isinstance(data.get("yours"), dict) and bool(steps) and steps[-1].stage == "refused")
    if strict and not on_purpose:  # a branch broken on purpose keeps the history the API refused, to be seen
        for tid, thread in threads.items():
            broken = rules.check(thread.messages, as_request=False)
            where = "messages" if tid == MAIN else Note(N_("the messages of the thread {thread}"), thread=repr(tid))
            shown = "; ".join(str(v) for v in broken[:3])  # the API's own words: data
            if len(broken) > 3:
                _need(False, where, N_("the tool_use/tool_result ids do not pair: {broken} (and {more} more)"),
                      broken=shown, more=len(broken) - 3)
            _need(not broken, where, N_("the tool_use/tool_result ids do not pair: {broken}"), broken=shown)
    raw_branches = data.get("branches") or []
    _need(isinstance(raw_branches, list), "branches", N_("not a list"))
    branches = []
    for i, raw in enumerate(raw_branches):
        try:
            branches.append(from_dict(raw, strict=strict))
        except TranscriptError as exc:
            raise _in_branch(exc, i) from None
    meta = {k: v for k, v in data.items() if k not in ("messages", "steps", "format", "version", "branches", "threads")}
    if not isinstance(meta.get("task", ""), str):  # left out, not turned into text the page would show as the task
        del meta["task"]
    trace = Trace(meta=meta, steps=steps, branches=branches, threads=threads)
    trace.first()
    return trace


def _in_branch(exc: TranscriptError, i: int) -> TranscriptError:
    """What is wrong in branch `i`, where it is: a path in the branch goes on from `branches[i]`."""
    where = exc.note.values.get("where") if exc.note.message == AT else None
    if isinstance(where, str):
        return TranscriptError(exc.note.with_values(where=f"branches[{i}].{where}"))
    return TranscriptError(AT, where=f"branches[{i}]", said=exc.note)


def violations(trace: Trace) -> list[tuple[str, rules.Violation]]:
    """Every API rule broken by a thread's final history or by a history a call sent, as (where, violation).

    `where` is "" for the main thread's final history, "thread X" for another
    thread's, and "steps[i]" for the history sent at call_model (or summarize)
    step i, when that breaks a rule its thread's final history does not show.
    A history sent that the final one continues, or that continues the one sent
    before it, is checked only where it is new, so a long trace costs about one
    pass over its messages.
    """
    found: list[tuple[str, rules.Violation]] = []
    for tid, thread in trace.threads.items():
        final = rules.check(thread.messages, as_request=False)
        found += [("" if tid == MAIN else f"thread {tid}", v) for v in final]
        in_final = {(v.where, v.message) for v in final}
        seen: set[tuple] = set()
        previous = None  # (step index, n_messages) of the thread's last call checked in full
        for i in trace.steps_of(tid):
            step = trace.steps[i]
            if step.stage == "summarize":
                sent = (step.detail.request or {}).get("messages")
                for v in rules.check(sent if isinstance(sent, list) else [], as_request=True):
                    found.append((f"steps[{i}]", v))
                continue
            if step.stage != "call_model":
                continue
            n = step.n_messages
            if thread.history.prefix_of_newest(i, n) and n <= len(thread.messages):
                known, start = in_final, max(0, n - 1)  # a prefix of the final history: only its end is new
            elif previous is not None and n >= previous[1] \
                    and thread.history.rewritten_since(previous[0], i, previous[1]) is None:
                known, start = seen, max(0, previous[1] - 1)  # continues the history sent before
            else:
                seen, known, start = set(), set(), 0  # a history of its own (after a compaction)
            for v in rules.check(thread.history.view(i, n), as_request=True, start=start):
                if (v.where, v.message) not in known and (v.where, v.message) not in seen:
                    seen.add((v.where, v.message))
                    found.append((f"steps[{i}]", v))
            if known is not in_final:
                previous = (i, n)
    return found
def journal_line(trace: Trace, step: Step) -> dict:
    """Step `step` as one line of a run's journal (loop/files/runs.py): the step, then what it did to its thread's
    history: the messages it added, the ones it rewrote, and the thread itself on a sub-agent's first step."""
    previous = trace.previous_in_thread(step.index)
    line: dict = {"step": step_dict(step)}  # first: the journal tells its lines apart by how they start
    if previous is None and step.thread != MAIN:
        line["thread"] = {k: v for k, v in thread_dict(trace.threads[step.thread]).items() if k != "messages"}
    before = trace.steps[previous].n_messages if previous is not None else 0
    if step.stage != "compact":
        line["messages"] = trace.window_at(step.index, before, step.n_messages)
    elif step.detail.history_before is not None:  # the whole history replaced: the new one
        line["messages"] = trace.messages_at(step.index)
        line["replaces"] = True
    else:
        slots = sorted({item["index"] for item in step.detail.replaced or []})
        line["messages"] = []
        line["rewritten"] = [[slot, trace.window_at(step.index, slot, slot + 1)[0]] for slot in slots]
    return line


NOT_STEP = N_("not a step of the run")


class Journal:
    """Rebuilds a transcript from journal lines (`journal_line`), one line at a time."""

    def __init__(self) -> None:
        self.histories: dict[str, list] = {MAIN: []}
        self.threads: dict[str, dict] = {}
        self.steps: list[dict] = []

    def add(self, record: dict, where: str | Note) -> None:
        """One step's line; TranscriptError when it is not one."""
        step, added = record.get("step"), record.get("messages")
        _need(isinstance(step, dict) and isinstance(added, list), where, NOT_STEP)
        tid = step.get("thread", MAIN)
        if isinstance(record.get("thread"), dict) and tid not in self.histories:
            self.threads[tid] = record["thread"]
            self.histories[tid] = []
        _need(isinstance(tid, str) and tid in self.histories, where, N_("a step of a thread not started: {found}"),
              found=_shown(tid))
        held = self.histories[tid]
        if record.get("replaces"):
            held[:] = []
        for item in record.get("rewritten") or []:
            _need(isinstance(item, list) and len(item) == 2 and isinstance(item[0], int)
                  and 0 <= item[0] < len(held), where, N_("a rewritten message outside the history"))
            held[item[0]] = item[1]
        held.extend(added)
        self.steps.append(dict(step, n_messages=len(held)))

    def transcript(self, meta: dict) -> dict:
        """The transcript the lines so far make (see `from_dict`)."""
        threads = [{"id": MAIN, "system": meta.get("system"), "tools": meta.get("tools")}]
        threads += [dict(info, id=tid, messages=self.histories[tid]) for tid, info in self.threads.items()]
        system = any(_holds_system(h) for h in self.histories.values()) or any(
            s.get("stage") == "compact" and isinstance(s.get("detail"), dict)
            and _holds_system(s["detail"].get("history_before")) for s in self.steps)
        return {**meta, "format": FORMAT, "version": SYSTEM_TURNS if system else VERSION,
                "messages": self.histories[MAIN], "threads": threads, "steps": self.steps}


NOT_TRANSCRIPT = N_("not a transcript: {said}")


def loads(text: str | bytes, *, strict: bool = True) -> Trace:
    """Parse and check a transcript; any problem is a `TranscriptError` naming what and where."""
    try:
        data = parse_json(text)
    except UnicodeDecodeError as exc:
        raise TranscriptError(N_("not UTF-8 text (byte {byte})"), byte=exc.start) from None
    except json.JSONDecodeError as exc:  # the parser's own words are data
        raise TranscriptError(N_("not valid JSON: {error} at line {line}, column {column}"), error=exc.msg,
                              line=exc.lineno, column=exc.colno) from None
    except NumberTooLong:
        raise TranscriptError(NOT_TRANSCRIPT, said=Note(NUMBER_TOO_LONG)) from None
    except RecursionError:
        raise TranscriptError(NOT_TRANSCRIPT, said=Note(N_("its JSON is nested too deeply to read"))) from None
    if too_deep(data):
        raise TranscriptError(NOT_TRANSCRIPT, said=Note(N_("its JSON is nested too deeply to read (over {levels} "
                                                           "levels)"), levels=MAX_DEPTH))
    return from_dict(data, strict=strict)


def load(path: str | Path) -> Trace:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TranscriptError(N_("{name}: cannot read it ({error})"), name=str(path), error=exc.strerror) from None
    return loads(raw)
