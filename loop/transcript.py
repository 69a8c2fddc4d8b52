"""Loopscope's transcript format (documented in docs/transcript-format.md).

One JSON object holds a whole trace. At top level `messages` is the final
history in Messages API form, so any tool that reads Anthropic histories can
use the file; `steps` holds one record a stage. The history is written once:
a step keeps only `n_messages`, the length of the history at that moment.
Every other format is imported into this one (see importers, when present).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import rules
from .trace import STAGES, Step, Trace

FORMAT = "loopscope-transcript"
VERSION = 1
STEP_FIELDS = ("stage", "turn_count", "transition_reason", "stop_reason", "n_messages",
               "input_tokens", "output_tokens", "ended", "time", "detail")
KNOWN_STAGES = set(STAGES) | {"stop"}


# Deeper JSON than this is refused when read. Python's json parses up to about 1,000 levels,
# less whatever the stack already holds; a value read near that bound then fails to render
# (json.dumps, the Markdown export) on the deeper stack of a page. Real files nest < 30.
MAX_DEPTH = 200


class TranscriptError(ValueError):
    """A transcript that cannot be loaded; the message says what is wrong and where."""


class NumberTooLong(ValueError):
    """JSON holding a whole number longer than Python reads (4,300 digits), as a hostile file may."""


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
        raise NumberTooLong("it holds a whole number too long to read (over 4,300 digits)") from None


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


def to_dict(trace: Trace) -> dict:
    """The transcript of `trace`, ready for `json.dump`."""
    return {
        "format": FORMAT,
        "version": VERSION,
        **{k: v for k, v in trace.meta.items() if k not in ("format", "version")},
        "messages": trace.messages,
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


def from_dict(data: object, *, strict: bool = True) -> Trace:
    """Rebuild a trace from a transcript object, checking it as it goes.

    With `strict`, a history that breaks the tool-use pairing rules is refused
    (a Loopscope run never writes one); importers pass `strict=False` to keep a
    real log's broken pairs as a lesson.
    """
    _need(isinstance(data, dict), "top level", "a transcript is a JSON object")
    _need(data.get("format") == FORMAT, "format",
          f"expected {FORMAT!r}, found {data.get('format')!r} (is this a Loopscope transcript?)")
    _need(data.get("version") == VERSION, "version",
          f"this Loopscope reads version {VERSION}, the file is version {data.get('version')!r}")
    messages = data.get("messages")
    _need(isinstance(messages, list), "messages", "missing, or not a list")
    for i, message in enumerate(messages):
        _need(isinstance(message, dict), f"messages[{i}]", "not an object")
        _need(message.get("role") in ("user", "assistant"), f"messages[{i}].role",
              f"must be 'user' or 'assistant', found {message.get('role')!r}")
        _need(isinstance(message.get("content"), (str, list)), f"messages[{i}].content", "missing, or not a string or list")
    raw_steps = data.get("steps")
    _need(isinstance(raw_steps, list), "steps", "missing, or not a list")
    steps: list[Step] = []
    previous = 0
    for i, raw in enumerate(raw_steps):
        where = f"steps[{i}]"
        _need(isinstance(raw, dict), where, "not an object")
        missing = [k for k in ("stage", "turn_count", "n_messages") if k not in raw]
        _need(not missing, where, f"missing {', '.join(missing)}")
        _need(isinstance(raw["stage"], str) and raw["stage"] in KNOWN_STAGES, f"{where}.stage",
              f"unknown stage {_shown(raw['stage'])}")
        n = raw["n_messages"]
        _need(isinstance(n, int) and previous <= n <= len(messages), f"{where}.n_messages",
              f"{_shown(n)} does not fit a history of {len(messages)} messages (after {previous})")
        _need(_count_ok(raw["turn_count"]), f"{where}.turn_count", f"not {COUNT}: {_shown(raw['turn_count'])}")
        detail = raw.get("detail") or {}
        _need(isinstance(detail, dict), f"{where}.detail", "not an object")
        if raw["stage"] == "call_model":
            _need(isinstance(detail.get("response"), dict) and isinstance(detail.get("request"), dict),
                  f"{where}.detail", "a call_model step needs its request and response")
        if raw["stage"] == "run_tool":
            _need(isinstance(detail.get("tool_result"), dict), f"{where}.detail", "a run_tool step needs its tool_result")
        for key, ok, what in (("input_tokens", _count_ok, COUNT), ("output_tokens", _count_ok, COUNT),
                              ("time", _time_ok, "a number of seconds")):
            value = raw.get(key)
            _need(value is None or ok(value), f"{where}.{key}", f"not {what}: {_shown(value)}")
        previous = n
        steps.append(Step(
            index=i, stage=raw["stage"], turn_count=raw["turn_count"],
            transition_reason=raw.get("transition_reason"), stop_reason=raw.get("stop_reason"), n_messages=n,
            input_tokens=int(raw.get("input_tokens") or 0), output_tokens=int(raw.get("output_tokens") or 0),
            ended=raw.get("ended"), time=float(raw.get("time") or 0), detail=detail,
        ))
    if strict:
        broken = rules.check(messages, as_request=False)
        _need(not broken, "messages", "the tool_use/tool_result ids do not pair: "
              + "; ".join(str(v) for v in broken[:3]) + (f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""))
    raw_branches = data.get("branches") or []
    _need(isinstance(raw_branches, list), "branches", "not a list")
    branches = []
    for i, raw in enumerate(raw_branches):
        try:
            branches.append(from_dict(raw, strict=strict))
        except TranscriptError as exc:
            raise TranscriptError(f"branches[{i}].{exc}") from None
    meta = {k: v for k, v in data.items() if k not in ("messages", "steps", "format", "version", "branches")}
    trace = Trace(meta=meta, messages=messages, steps=steps, branches=branches)
    trace.first()
    return trace


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
