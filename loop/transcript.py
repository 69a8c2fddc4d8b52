"""Loopscope's transcript format (documented in docs/transcript-format.md).

One JSON object holds a whole trace. At top level `messages` is the main
thread's final history in Messages API form, so any tool that reads Anthropic
histories can use the file; `threads` holds every thread (the main loop and
each sub-agent's) with its final history; `steps` holds one record a stage,
naming its thread. Each history is written once: a step keeps only
`n_messages`, the length of its thread's history at that moment, and a
`compact` step keeps what it replaced, so every earlier version can be rebuilt.
Version 1 files (one thread, no compaction) still load. Every other format is
imported into this one (see importers).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import rules
from .catalogs import N_
from .history import History
from .trace import COMPLETE_STAGES, MAIN, MORE_STAGES, STAGES, Step, Thread, Trace

FORMAT = "loopscope-transcript"
VERSION = 2
READS = (1, 2)  # version 1 (one thread, a history that only grew) still loads
STEP_FIELDS = ("stage", "turn_count", "transition_reason", "stop_reason", "n_messages",
               "input_tokens", "output_tokens", "ended", "time", "detail", "thread")
THREAD_FIELDS = ("id", "parent", "parent_tool_use_id", "system", "tools", "label", "messages")
KNOWN_STAGES = set(STAGES) | {"stop"} | set(MORE_STAGES) | set(COMPLETE_STAGES)
COMPACT_KINDS = ("micro", "auto", "manual", "imported", "resume")


# Deeper JSON than this is refused when read. Python's json parses up to about 1,000 levels,
# less whatever the stack already holds; a value read near that bound then fails to render
# (json.dumps, the Markdown export) on the deeper stack of a page. Real files nest < 30.
MAX_DEPTH = 200


class TranscriptError(ValueError):
    """A transcript that cannot be loaded; the message says what is wrong and where."""


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
COUNT = "a whole number of at most 15 digits"


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
    """One step as the format writes it."""
    return {k: getattr(step, k) for k in STEP_FIELDS}


def thread_dict(thread: Thread) -> dict:
    """One thread as the format writes it: its settings and its final history (the main thread's is the
    top-level `messages`, written once)."""
    out = {k: getattr(thread, k) for k in THREAD_FIELDS if not (k == "messages" and thread.id == MAIN)}
    if thread.facts:
        out["facts"] = thread.facts
    return out


def to_dict(trace: Trace) -> dict:
    """The transcript of `trace`, ready for `json.dump`."""
    return {
        "format": FORMAT,
        "version": VERSION,
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


def _shown(value: object) -> str:
    """A value for an error message: a hostile number is cut, not printed whole."""
    if isinstance(value, int) and value.bit_length() > 200:  # a hostile number: say its size, not its digits
        try:
            return f"a number of {len(str(abs(value))):,} digits"
        except ValueError:  # over 4,300 digits: str() refuses
            return f"a number of about {int(value.bit_length() * 0.30103):,} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _need(condition: bool, where: str, what: str) -> None:
    if not condition:
        raise TranscriptError(f"{where}: {what}")


def _messages(value: object, where: str) -> list:
    _need(isinstance(value, list), where, "missing, or not a list")
    for i, message in enumerate(value):
        _need(isinstance(message, dict), f"{where}[{i}]", "not an object")
        _need(message.get("role") in ("user", "assistant"), f"{where}[{i}].role",
              f"must be 'user' or 'assistant', found {message.get('role')!r}")
        _need(isinstance(message.get("content"), (str, list)), f"{where}[{i}].content",
              "missing, or not a string or list")
    return value


def _threads(data: dict, messages: list) -> dict[str, Thread]:
    """The threads of a transcript: those it lists (version 2), or the main one alone."""
    raw = data.get("threads")
    if raw is None:
        return {MAIN: Thread(MAIN, system=data.get("system"), tools=data.get("tools"), messages=messages)}
    _need(isinstance(raw, list), "threads", "not a list")
    threads: dict[str, Thread] = {}
    for i, item in enumerate(raw):
        where = f"threads[{i}]"
        _need(isinstance(item, dict), where, "not an object")
        tid = item.get("id")
        _need(isinstance(tid, str) and tid, f"{where}.id", "missing, or not a string")
        _need(tid not in threads, f"{where}.id", f"{tid!r} is used by an earlier thread")
        # system and tools are kept as they came (an imported log's may be blocks, or odd); these are read:
        for key, kinds in (("parent", str), ("label", str), ("facts", dict)):
            _need(item.get(key) is None or isinstance(item[key], kinds), f"{where}.{key}",
                  f"not a {kinds.__name__}: {item.get(key)!r}")
        own = _messages(item["messages"], f"{where}.messages") if "messages" in item else None
        if tid == MAIN:
            _need(item.get("parent") is None, f"{where}.parent", "the main thread has no parent")
            _need(own is None or own == messages, f"{where}.messages",
                  "differs from the top-level messages (both are the main thread's final history)")
            own = messages
        else:
            _need(own is not None, f"{where}.messages", "missing, or not a list")
        threads[tid] = Thread(tid, parent=item.get("parent"), parent_tool_use_id=item.get("parent_tool_use_id"),
                              system=item.get("system"), tools=item.get("tools"), label=item.get("label") or "",
                              messages=own, facts=item.get("facts") or {})
    _need(MAIN in threads, "threads", "no thread with id 'main' (the main loop)")
    for i, thread in enumerate(threads.values()):
        _need(thread.parent is None or thread.parent in threads, f"threads[{i}].parent",
              f"names no thread of this transcript: {thread.parent!r}")
        _need(thread.id == MAIN or thread.parent is not None, f"threads[{i}].parent",
              "a sub-agent's thread names its parent thread")
    main = threads.pop(MAIN)
    return {MAIN: main, **threads}  # the main thread first


def _step(raw: object, i: int, threads: dict) -> Step:
    where = f"steps[{i}]"
    _need(isinstance(raw, dict), where, "not an object")
    missing = [k for k in ("stage", "turn_count", "n_messages") if k not in raw]
    _need(not missing, where, f"missing {', '.join(missing)}")
    _need(isinstance(raw["stage"], str) and raw["stage"] in KNOWN_STAGES, f"{where}.stage",
          f"unknown stage {_shown(raw['stage'])}")
    thread = raw.get("thread", MAIN)
    _need(isinstance(thread, str) and thread in threads, f"{where}.thread",
          f"names no thread of this transcript: {_shown(thread)}")
    _need(isinstance(raw["n_messages"], int) and not isinstance(raw["n_messages"], bool) and raw["n_messages"] >= 0,
          f"{where}.n_messages", f"not a count of messages: {_shown(raw['n_messages'])}")
    _need(_count_ok(raw["turn_count"]), f"{where}.turn_count", f"not {COUNT}: {_shown(raw['turn_count'])}")
    detail = raw.get("detail") or {}
    _need(isinstance(detail, dict), f"{where}.detail", "not an object")
    stage = raw["stage"]
    if stage in ("call_model", "summarize"):
        _need(isinstance(detail.get("response"), dict) and isinstance(detail.get("request"), dict),
              f"{where}.detail", f"a {stage} step needs its request and response")
    if stage == "run_tool":
        _need(isinstance(detail.get("tool_result"), dict), f"{where}.detail", "a run_tool step needs its tool_result")
    if stage == "compact":
        _need(detail.get("kind") in COMPACT_KINDS, f"{where}.detail.kind",
              f"one of {', '.join(COMPACT_KINDS)}, found {_shown(detail.get('kind'))}")
        if "history_before" in detail:
            _messages(detail["history_before"], f"{where}.detail.history_before")
        else:
            replaced = detail.get("replaced")
            _need(isinstance(replaced, list), f"{where}.detail",
                  "a compact step needs what it replaced: `replaced` or `history_before`")
            for k, item in enumerate(replaced):
                _need(isinstance(item, dict) and isinstance(item.get("index"), int)
                      and not isinstance(item.get("index"), bool), f"{where}.detail.replaced[{k}]",
                      "needs an `index` and the `message` it held")
                _messages([item.get("message")], f"{where}.detail.replaced[{k}].message")
    for key, ok, what in (("input_tokens", _count_ok, COUNT), ("output_tokens", _count_ok, COUNT),
                          ("time", _time_ok, "a number of seconds")):
        value = raw.get(key)
        _need(value is None or ok(value), f"{where}.{key}", f"not {what}: {_shown(value)}")
    return Step(
        index=i, stage=stage, turn_count=raw["turn_count"],
        transition_reason=raw.get("transition_reason"), stop_reason=raw.get("stop_reason"),
        n_messages=raw["n_messages"], input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0), ended=raw.get("ended"), time=float(raw.get("time") or 0),
        detail=detail, thread=thread,
    )


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
                  f"{_shown(n)} does not fit a history of {len(final)} messages (after {previous})")
            previous = n
        return History(final)
    last = steps[own[-1]].n_messages
    _need(last <= len(final), f"steps[{own[-1]}].n_messages",
          f"{_shown(last)} does not fit the thread's final history of {len(final)} messages")
    held = list(final[:last])  # the history after the step being undone
    timelines: dict[int, list] = {}
    for k in range(len(own) - 1, -1, -1):
        i = own[k]
        step = steps[i]
        before = steps[own[k - 1]].n_messages if k else 0
        where = f"steps[{i}].n_messages"
        _need(len(held) == step.n_messages, where,
              f"{_shown(step.n_messages)} does not fit: the thread's history then holds {len(held)} messages")
        if step.stage != "compact":
            _need(before <= step.n_messages, where, f"{step.n_messages} is fewer than the {before} of the thread's "
                  "step before it; only a compact step may shorten a history")
            for slot in range(before, step.n_messages):
                timelines.setdefault(slot, []).append((i, held[slot]))
            del held[before:]
        elif "history_before" in step.detail:
            for slot in range(step.n_messages):
                timelines.setdefault(slot, []).append((i, held[slot]))
            held = list(step.detail["history_before"])
            _need(len(held) == before, f"steps[{i}].detail.history_before",
                  f"holds {len(held)} messages; the thread's step before it has {before}")
        else:
            _need(before == step.n_messages, where, "a compact step that replaces messages in place keeps their "
                  f"number; the thread's step before it has {before}")
            for item in reversed(step.detail["replaced"]):
                slot = item["index"]
                _need(0 <= slot < len(held), f"steps[{i}].detail.replaced", f"index {slot} is outside the history")
                timelines.setdefault(slot, []).append((i, held[slot]))
                held[slot] = item["message"]
    slots = [timelines.get(slot) for slot in range(max(timelines, default=-1) + 1)]
    _need(all(slots), f"threads: {thread.id!r}", "a message of its history was never added by a step")
    return History.from_timelines([t[::-1] for t in slots], len(final))


def from_dict(data: object, *, strict: bool = True) -> Trace:
    """Rebuild a trace from a transcript object, checking it as it goes.

    With `strict`, a history that breaks the tool-use pairing rules is refused
    (a Loopscope run never writes one); importers pass `strict=False` to keep a
    real log's broken pairs as a lesson.
    """
    _need(isinstance(data, dict), "top level", "a transcript is a JSON object")
    _need(data.get("format") == FORMAT, "format",
          f"expected {FORMAT!r}, found {data.get('format')!r} (is this a Loopscope transcript?)")
    _need(data.get("version") in READS, "version",
          f"this Loopscope reads versions {READS[0]} to {READS[-1]}, the file is version {data.get('version')!r}")
    messages = _messages(data.get("messages"), "messages")
    threads = _threads(data, messages) if data["version"] >= 2 else _threads({}, messages)
    raw_steps = data.get("steps")
    _need(isinstance(raw_steps, list), "steps", "missing, or not a list")
    steps = [_step(raw, i, threads) for i, raw in enumerate(raw_steps)]
    own: dict[str, list[int]] = {}
    for step in steps:
        own.setdefault(step.thread, []).append(step.index)
    for tid, thread in threads.items():
        thread.history = _history(thread, steps, own.get(tid, []))
    if strict:
        for tid, thread in threads.items():
            broken = rules.check(thread.messages, as_request=False)
            where = "messages" if tid == MAIN else f"threads: {tid!r} messages"
            _need(not broken, where, "the tool_use/tool_result ids do not pair: "
                  + "; ".join(str(v) for v in broken[:3]) + (f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""))
    raw_branches = data.get("branches") or []
    _need(isinstance(raw_branches, list), "branches", "not a list")
    branches = []
    for i, raw in enumerate(raw_branches):
        try:
            branches.append(from_dict(raw, strict=strict))
        except TranscriptError as exc:
            raise TranscriptError(f"branches[{i}].{exc}") from None
    meta = {k: v for k, v in data.items() if k not in ("messages", "steps", "format", "version", "branches", "threads")}
    if not isinstance(meta.get("task", ""), str):  # left out, not turned into text the page would show as the task
        del meta["task"]
    trace = Trace(meta=meta, steps=steps, branches=branches, threads=threads)
    trace.first()
    return trace


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
                sent = (step.detail.get("request") or {}).get("messages")
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
    """Step `step` as one line of a run's journal (loop/runs.py): the step, then what it did to its thread's
    history: the messages it added, the ones it rewrote, and the thread itself on a sub-agent's first step."""
    previous = trace.previous_in_thread(step.index)
    line: dict = {"step": step_dict(step)}  # first: the journal tells its lines apart by how they start
    if previous is None and step.thread != MAIN:
        line["thread"] = {k: v for k, v in thread_dict(trace.threads[step.thread]).items() if k != "messages"}
    before = trace.steps[previous].n_messages if previous is not None else 0
    if step.stage != "compact":
        line["messages"] = trace.window_at(step.index, before, step.n_messages)
    elif "history_before" in step.detail:  # the whole history replaced: the new one
        line["messages"] = trace.messages_at(step.index)
        line["replaces"] = True
    else:
        slots = sorted({item["index"] for item in step.detail.get("replaced", [])})
        line["messages"] = []
        line["rewritten"] = [[slot, trace.window_at(step.index, slot, slot + 1)[0]] for slot in slots]
    return line


class Journal:
    """Rebuilds a transcript from journal lines (`journal_line`), one line at a time."""

    def __init__(self) -> None:
        self.histories: dict[str, list] = {MAIN: []}
        self.threads: dict[str, dict] = {}
        self.steps: list[dict] = []

    def add(self, record: dict, where: str) -> None:
        """One step's line; TranscriptError when it is not one."""
        step, added = record.get("step"), record.get("messages")
        _need(isinstance(step, dict) and isinstance(added, list), where, "not a step of the run")
        tid = step.get("thread", MAIN)
        if isinstance(record.get("thread"), dict) and tid not in self.histories:
            self.threads[tid] = record["thread"]
            self.histories[tid] = []
        _need(isinstance(tid, str) and tid in self.histories, where, f"a step of a thread not started: {tid!r}")
        held = self.histories[tid]
        if record.get("replaces"):
            held[:] = []
        for item in record.get("rewritten") or []:
            _need(isinstance(item, list) and len(item) == 2 and isinstance(item[0], int)
                  and 0 <= item[0] < len(held), where, "a rewritten message outside the history")
            held[item[0]] = item[1]
        held.extend(added)
        self.steps.append(dict(step, n_messages=len(held)))

    def transcript(self, meta: dict) -> dict:
        """The transcript the lines so far make (see `from_dict`)."""
        threads = [{"id": MAIN, "system": meta.get("system"), "tools": meta.get("tools")}]
        threads += [dict(info, id=tid, messages=self.histories[tid]) for tid, info in self.threads.items()]
        return {**meta, "format": FORMAT, "version": VERSION, "messages": self.histories[MAIN], "threads": threads,
                "steps": self.steps}


def loads(text: str | bytes, *, strict: bool = True) -> Trace:
    """Parse and check a transcript; any problem is a `TranscriptError` naming what and where."""
    try:
        data = parse_json(text)
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except NumberTooLong as exc:
        raise TranscriptError(f"not a transcript: {exc}") from None
    except RecursionError:
        raise TranscriptError("not a transcript: its JSON is nested too deeply to read") from None
    if too_deep(data):
        raise TranscriptError(f"not a transcript: its JSON is nested too deeply to read (over {MAX_DEPTH} levels)")
    return from_dict(data, strict=strict)


def load(path: str | Path) -> Trace:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read it ({exc.strerror})") from None
    return loads(raw)
