"""What each stage did: one small type a stage, the `detail` of its step.

A step's `detail` is written by the runner's stages and layers, by an importer
(importers/derive.py) or by Your loop's reading, each building its stage's type
whole; its fields are named by the keys the format writes
(docs/transcript-format.md), and the code reads them as attributes:
`step.detail.tool_use_id`, never `step.detail["tool_use_id"]`
(tests/test_detail_reads.py fails on a `.get(` or `[` read in loop/ or pages/).

A detail is frozen: its fields are what the stage recorded, and nothing writes
to it after it is made. A layer that adds to what a stage recorded makes a new
one, `dataclasses.replace(detail, why=...)`. Three promises keep a transcript
as it was written:
- the keys a detail was given, and their order, are kept (`written`): a field
  never given is not written out, so a file saved again is the same file; a
  key a `replace` gives is written after the others, as a dict's update would;
- a key this version does not know is kept in `extra` and written back in its
  place (a later version's facts survive a save here);
- a detail still reads as the JSON object it was (`detail["why"]`, equal to
  the dict of the same keys and values), for a test or a tool that compares it
  with the file; a key of another stage reads as absent, as it did.

`check` refuses a value of the wrong type for a key the readers rely on (a
transcript's loader calls it once, where it names the step); a field the
readers take as it comes (a tool's input, an id a real log got wrong, a
number a page shows through `number()`) is kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import ClassVar

NUMBER = (int, float)


class _Absent:
    """The default of every field: a key the detail was not given (a None given is a JSON null, written)."""

    def __repr__(self) -> str:
        return "absent"


ABSENT = _Absent()
_NO_EXTRA: Mapping = MappingProxyType({})


def _is(*kinds: type, none: bool = False):
    """A field checked at load: its value is one of `kinds` (a bool is no number), or None when `none`."""
    return field(default=ABSENT, metadata={"kinds": kinds, "none": none})


def _kept():
    """A field taken as it comes (the readers do not rely on its type)."""
    return field(default=ABSENT)


class DetailError(ValueError):
    """A detail's `key` holds a value of the wrong type: `found`, where one of `expected` belongs."""

    def __init__(self, key: str, found: object, expected: tuple[str, ...]) -> None:
        self.key, self.found, self.expected = key, found, expected
        super().__init__(f"{key}: expected {' or '.join(expected)}, found {type(found).__name__}")


_KIND_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _ok(value: object, kinds: tuple, none: bool) -> bool:
    if value is None:
        return none
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class Detail(Mapping):
    """What a stage did. The base of each stage's type; itself the detail of a stage it does not know."""

    STAGE: ClassVar[str] = ""
    # The keys given, in the order given (fields and extra keys alike). None: built by hand, the fields given.
    written: tuple | None = field(default=None, repr=False)
    extra: Mapping = field(default_factory=dict)  # keys this version does not know, as they came (read-only)
    # Facts any stage's step may carry (written after the stage's own fields):
    origin: object = _kept()  # an import's: where in the file the step's record is ({file, line} or {at})
    mistake: str | None = _kept()  # a broken loop's (layer_mistake.py): the classic mistake that made this step

    def __post_init__(self) -> None:
        # Built by hand (`written` None): the fields given, a None given being a null, then any extra. Read from a
        # file, or replaced: the keys as they were, then those given a value since.
        given, added = self.written, []
        for k in field_names(type(self)):
            value = getattr(self, k)
            if value is ABSENT:
                object.__setattr__(self, k, None)
            elif given is None or (value is not None and k not in given):
                added.append(k)
        written = (given or ()) + tuple(added)
        if self.extra:
            written += tuple(k for k in self.extra if k not in written)
            object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))  # its own, and read-only
        else:
            object.__setattr__(self, "extra", _NO_EXTRA)
        object.__setattr__(self, "written", written)

    def given(self, key: str) -> bool:
        """Whether the stage recorded `key` (a null included): a field not given reads as None too."""
        return key in self.written

    # -- as the format writes it --
    def to_dict(self) -> dict:
        """The JSON object of this detail: the keys it was given, in their order, nothing added."""
        return {k: self[k] for k in self.written}

    def __reduce__(self):  # a copy (or a pickle) is the same detail made again from its JSON object
        return of, (self.STAGE, self.to_dict())

    # -- the JSON object it was (for a test or a tool that compares it with the file; the code reads attributes) --
    def __getitem__(self, key: str) -> object:
        if key not in self.written:
            raise KeyError(key)
        return getattr(self, key) if key in _names(type(self)) else self.extra[key]

    def __iter__(self):
        return iter(self.written)

    def __len__(self) -> int:
        return len(self.written)

    __eq__ = Mapping.__eq__  # equal to the dict of the same keys and values, as before
    __hash__ = None  # type: ignore[assignment]  # its values are JSON's lists and objects


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class UserRequestDetail(Detail):
    """Stage 1: the request put into messages."""

    STAGE: ClassVar[str] = "user_request"
    task: str | None = _is(str)  # the request's text
    started_by: object = _kept()  # a sub-agent's: the id of the parent's tool_use that started it
    note: str | None = _is(str)  # an import's: why a user message past the first is a request of its own


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class CallModelDetail(Detail):
    """Stage 2: the call to the model, and what came back."""

    STAGE: ClassVar[str] = "call_model"
    request: dict | None = _is(dict)  # the body sent, less `messages` (rebuilt from the thread's history)
    response: dict | None = _is(dict)  # the Message the API returned
    duration_ms: float | None = _kept()  # a number; an imported log's own (a page reads it through number())
    retries: int | None = _is(int)  # the SDK's own retries
    attempt: int | None = _kept()  # the complete loop's: which attempt this call was (from 1)
    waited_s: float | None = _kept()  # the complete loop's: the backoff waited before it
    skipped: bool | None = _is(bool)  # the complete loop's: the wait was cut short
    early_start: list | None = _is(list)  # the complete loop's: tool_use ids started while the answer streamed
    recorded: bool | None = _is(bool)  # an import's: a response was recorded beside the history
    stop_reason_inferred: bool | None = _is(bool)  # an import's: the stop_reason was filled in from the content
    cycle: object = _kept()  # a course trace's cycle number
    line: int | None = _is(int, none=True)  # a learner's loop: the line of their code that sent it
    file: str | None = _is(str, none=True)  # a learner's project: their file of `line`, when not the one run
    learner: dict | None = _is(dict)  # a learner's loop: their own {turn_count, transition_reason} at the call
    messages_sent: list | None = _is(list)  # an import's: the messages as the agent sent them (Claude Code 2.1)
    request_record: object = _kept()  # an import's: the id of the agent's own record of that request
    attachments: list | None = _is(list)  # an import's: what Claude Code attached to this request, as it rendered it


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class AppendAssistantDetail(Detail):
    """Stage 3: the response appended (the history says it all)."""

    STAGE: ClassVar[str] = "append_assistant"
    appended: bool | None = _kept()  # a learner's loop: false when their code did not keep the response


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class DecideDetail(Detail):
    """The check of stop_reason: go on, or end."""

    STAGE: ClassVar[str] = "decide"
    continues: bool | None = _is(bool)
    why: str | None = _is(str)  # in English; narrate.py says it again in any language
    recover: bool | None = _is(bool)  # the complete loop's: cut at max_tokens, it asks the model to continue


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class RunToolDetail(Detail):
    """Stage 4: one tool_use run, and its tool_result."""

    STAGE: ClassVar[str] = "run_tool"
    tool_use_id: object = _kept()  # as the tool_use block had it (a broken log's may be no string)
    name: object = _kept()
    input: object = _kept()
    output: object = _kept()  # the tool's output (a string when a Loopscope tool ran)
    is_error: bool | None = _is(bool)
    duration_ms: float | None = _is(*NUMBER)
    tool_result: dict | None = _is(dict)  # the block written back at stage 5
    given_by_user: bool | None = _is(bool)  # answered by the person (the approval gate, a fork), not run
    thread: str | None = _is(str)  # the sub-agent's thread whose answer this is
    parallel: dict | None = _is(dict)  # the complete loop's: {waited_ms, with} when it ran beside others
    early: dict | None = _is(dict)  # the complete loop's: {started_before_end_ms, saved_ms} when started early
    recorded: bool | None = _is(bool)  # an import's: false when no tool_result answered the tool_use
    tool_use_result: object = _kept()  # a Claude Code log's own account of the run (`toolUseResult`)
    tool_execution: object = _kept()  # a course trace's {name, input, output}
    line: int | None = _is(int, none=True)  # a learner's loop: the line of their code that ran it
    file: str | None = _is(str, none=True)  # a learner's project: their file of `line`, when not the one run
    ran_by: str | None = _kept()  # a learner's loop: what ran it (the tool box, or their program by itself)
    reported: dict | None = _kept()  # a learner's loop: {command, line, file} their program said it ran
    codex_exec: dict | None = _kept()  # a Codex rollout's own account of the command ({exit_code, duration, command})


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class WriteBackDetail(Detail):
    """Stage 5: the results written back as one user message."""

    STAGE: ClassVar[str] = "write_back"
    results: int | None = _is(int)  # how many tool_result blocks
    parallel: dict | None = _is(dict)  # the complete loop's: {tools, wall_ms, sum_ms, ran_ms, early_saved_ms}
    printed: int | None = _kept()  # a broken loop's (no write-back): the tool_results it printed instead
    also_ran: list | None = _kept()  # a learner's loop: tools their program ran that no tool_use asked for
    rewritten: bool | None = _kept()  # a learner's loop: written back unseen (the history was rewritten)


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class StopDetail(Detail):
    """The loop stopped at max turns."""

    STAGE: ClassVar[str] = "stop"
    why: str | None = _is(str)


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class SummarizeDetail(Detail):
    """Compaction, first half: a model call that summarises the history."""

    STAGE: ClassVar[str] = "summarize"
    kind: str | None = _is(str)  # auto, manual or resume
    why: str | None = _is(str)
    request: dict | None = _is(dict)  # its own request, the summary prompt in its messages
    response: dict | None = _is(dict)
    duration_ms: float | None = _kept()
    retries: int | None = _is(int)
    summary: str | None = _is(str)
    attempt: int | None = _kept()
    waited_s: float | None = _kept()
    skipped: bool | None = _is(bool)


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class CompactDetail(Detail):
    """Compaction, second half: the history rewritten; what it held before is kept, so it can be rebuilt."""

    STAGE: ClassVar[str] = "compact"
    kind: str | None = _is(str)  # one of transcript.COMPACT_KINDS
    replaced: list | None = _is(list)  # [{index, message}]: the messages rewritten in place (micro)
    history_before: list | None = _is(list)  # the whole history it replaced (a summary)
    summary: str | None = _is(str)
    why: str | None = _is(str)
    messages_before: int | None = _is(int)
    messages_after: int | None = _is(int)
    tokens_before: int | None = _is(int)  # estimates
    tokens_after: int | None = _is(int)
    trigger: object = _kept()  # a Claude Code log's compact_boundary facts, as it wrote them
    pre_tokens: object = _kept()
    source: str | None = _is(str)  # where an import found the compaction


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class RetryDetail(Detail):
    """The complete loop's: a call failed; wait, then call again (or give up)."""

    STAGE: ClassVar[str] = "retry"
    error: dict | None = _is(dict)  # {status, type, message}
    attempt: int | None = _kept()  # the call that failed, from 1
    attempts: int | None = _kept()  # how many the loop makes at most
    gave_up: bool | None = _is(bool)
    backoff_s: float | None = _kept()
    jitter_s: float | None = _kept()
    retry_after_s: float | None = _kept()  # what the server asked for, when it said
    wait_s: float | None = _kept()  # the seconds the loop waits
    scale: float | None = _kept()  # when tests scale the waits
    stage: str | None = _is(str)  # the stage whose call failed (call_model or summarize)
    request: dict | None = _is(dict, none=True)  # what it sent, if it was sent
    why: str | None = _is(str)
    kind: str | None = _is(str)  # a failed summarize's kind


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class RefusedDetail(Detail):
    """The complete loop's: the API refused the prompt as too long."""

    STAGE: ClassVar[str] = "refused"
    error: dict | None = _is(dict)
    tokens: int | None = _is(int)  # what the API counted
    maximum: int | None = _is(int)
    estimate: int | None = _is(int)  # the loop's own estimate of messages
    budget: int | None = _is(int, none=True)  # the budget the next compaction aims under
    stage: str | None = _is(str)
    request: dict | None = _is(dict, none=True)
    why: str | None = _is(str)
    kind: str | None = _is(str)
    line: int | None = _is(int, none=True)  # a learner's loop: the line of their code that sent it
    file: str | None = _is(str, none=True)  # a learner's project: their file of `line`, when not the one run
    learner: dict | None = _is(dict)  # a learner's loop: their own {turn_count, transition_reason} at the call


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class RecoverDetail(Detail):
    """The complete loop's: cut at max_tokens, ask the model to continue."""

    STAGE: ClassVar[str] = "recover"
    k: int | None = _is(int)  # the k-th recovery in a row
    limit: int | None = _is(int)
    not_run: list | None = _is(list)  # ids of the tool_use blocks the cut answer held, answered as not run


@dataclass(frozen=True, eq=False, slots=True, kw_only=True)
class HarnessDetail(Detail):
    """An import's: a message the agent's harness put into the history, which no model call produced."""

    STAGE: ClassVar[str] = "harness"
    role: str | None = _is(str)  # the message's role, user or assistant
    why: str | None = _is(str)  # in English: who added it, as the log tells (narrate.py says it again)
    in_messages: bool | None = _is(bool)  # false: words the agent showed its user and put in no message
    said: str | None = _is(str)  # those words


DETAILS: dict[str, type[Detail]] = {cls.STAGE: cls for cls in (
    UserRequestDetail, CallModelDetail, AppendAssistantDetail, DecideDetail, RunToolDetail, WriteBackDetail,
    StopDetail, SummarizeDetail, CompactDetail, RetryDetail, RefusedDetail, RecoverDetail, HarnessDetail)}

_NAMES: dict[type, frozenset] = {}
_ORDER: dict[type, tuple] = {}
_CHECKED: dict[type, dict] = {}
_NONES: dict[type, dict] = {}


def _names(cls: type) -> frozenset:
    """The keys a detail type has a field for."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(field_names(cls))
    return names


def _nones(cls: type) -> dict:
    """{field: None} for every field of a detail type."""
    nones = _NONES.get(cls)
    if nones is None:
        nones = _NONES[cls] = dict.fromkeys(field_names(cls))
    return nones


def _checked(cls: type) -> dict:
    """{key: (kinds, None allowed)} for the fields checked at load."""
    out = _CHECKED.get(cls)
    if out is None:
        out = _CHECKED[cls] = {f.name: (f.metadata["kinds"], f.metadata["none"]) for f in fields(cls)
                               if "kinds" in f.metadata}
    return out


def of(stage: str, raw: Mapping | None) -> Detail:
    """The detail of a `stage` step from its JSON object (a file's, or one a reader gathered), unchecked.

    Every key is kept, in its order: a known one in its field, any other in `extra`."""
    cls = DETAILS.get(stage, Detail)
    if isinstance(raw, Detail):  # made already: as it is, unless made as another stage's (then as this one's)
        return raw if type(raw) is cls else of(stage, raw.to_dict())
    names = _names(cls)
    raw = raw or {}
    known = {k: v for k, v in raw.items() if k in names}
    extra = {k: v for k, v in raw.items() if k not in names}
    # every key given, in its order, None or not; a field not given None already (`written` says it was not)
    return cls(written=tuple(raw), extra=extra, **{**_nones(cls), **known})


def check(detail: Detail) -> None:
    """A `DetailError` for the first key whose value is not of its field's type."""
    for key, (kinds, none) in _checked(type(detail)).items():
        if key in detail.written:
            value = getattr(detail, key)
            if not _ok(value, kinds, none):
                raise DetailError(key, value, tuple(_KIND_NAMES.get(k, k.__name__) for k in kinds)
                                  + (("null",) if none else ()))


def field_names(cls: type[Detail]) -> tuple[str, ...]:
    """The keys a detail type has a field for, in its order (the documentation's, and its test's): the stage's
    own, then those any stage may carry (`origin`, `mistake`)."""
    names = _ORDER.get(cls)
    if names is None:
        common = ("origin", "mistake")
        own = tuple(f.name for f in fields(cls) if f.name not in ("written", "extra", *common))
        names = _ORDER[cls] = own + common
    return names
