"""One self-contained record of what the pages draw at step i: `view(trace, i, lang) -> StepView`.

As in Python Tutor, a page draws step i from this record alone, "without
consulting any of its neighbours": whatever needs the steps around i (the
turn_count before it, the sub-agent it leads into, the thread it goes back up
to, the last model call, the pairs of every thread, the LoopState rows around
it) is read here, once, and the record holds the result as plain data. The
words in it are in the record's language; Markdown a page draws is already
quoted. No Streamlit here.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from . import parts as views
from ..text.catalogs import translations
from .diagram import svg_args
from ..files.export import plain
from .narrate import why_in
from ..engine.profiles import COMPLETE
from ..engine.trace import Thread, Trace
from ..engine.trace import stage_title as title_of

PAIRS_RECENT = 12  # paired rows kept in a long run, the newest (a page offers the whole table apart)
PAIRS_PROBLEMS = 20  # waiting or orphan rows kept beside them, the first ones
STEPS_AROUND = 7  # LoopState rows kept each side of the step in a long run (all of a run up to 15 steps)


@dataclass(frozen=True)
class ThreadView:
    """A thread as a page names it, and where its steps are."""

    id: str
    name: str  # `main`, or `task toolu_…`
    label: str  # a few words on what it was asked
    is_main: bool
    first: int | None  # its first step
    steps: int  # how many steps it has


@dataclass(frozen=True)
class Crumb:
    """One part of the breadcrumb: a thread, and the step that goes there (None: none yet)."""

    thread: ThreadView
    to: int | None


@dataclass(frozen=True)
class StepView:
    """Everything a page draws of step `index` (-1: before the first step), in language `lang`."""

    index: int
    total: int  # the steps of the trace
    lang: str
    stage: str | None
    stage_title: str  # in `lang`
    status: str  # `Step k of n · turn t · stage`
    status_held: str  # the step before the last: the same, counting without the last (held back by a question)
    said: str  # what the step did, in one line
    ending: str | None  # why the loop ended, a sentence (Markdown, a stop_reason quoted), at the end and after
    turn_count_change: tuple[int, int] | None  # (before, after) at a write-back
    errors_read: tuple[tuple[int, int, str], ...]  # (message, block, id) of is_error results the model reads now
    # -- the history of the step's thread --
    messages: list  # as its model will see it after the step (not to be changed)
    new_blocks: tuple[int, int]  # (first message, count) the step appended
    pending_response: dict | None  # received, not yet in messages (a summary at a summarize step)
    results: tuple[dict, ...]  # tool_results collected, not yet written back
    compaction: dict | None  # at a compact step: see views.compaction_at; "said_why" in `lang`
    # -- threads --
    thread: ThreadView
    breadcrumb: tuple[Crumb, ...]  # from the main thread down to this step's
    sub_agent: ThreadView | None  # the sub-agent the step leads into, or took the answer of
    threads: tuple[ThreadView, ...]  # every thread of the run
    takes_answer: bool  # a run_tool step that took a sub-agent's answer
    opens_thread: bool  # the first step of a sub-agent
    parallel: bool  # a run_tool step of tools run at once (the complete loop)
    # -- the run --
    profile: str | None
    has_threads: bool
    has_compaction: bool
    diagram: dict  # loop.views.diagram.svg's arguments, but the language and the size
    # -- the tables --
    state_rows: tuple[tuple[str, str], ...]  # the chapter's LoopState after the step
    presenter_state: tuple[tuple[str, str], ...]
    complete_state: dict | None  # the complete loop's explicit state (views.complete_state), for that profile
    pair_columns: tuple[str, ...]
    pairs: tuple[dict, ...]  # the newest and the problem rows of the Pairs table (views.pairs_rows)
    pairs_total: int
    pairs_key: tuple  # two steps with the same key have the same pairs
    step_columns: tuple[str, ...]
    steps_start: int  # the first LoopState row kept
    steps_rows: tuple[tuple, ...]  # views.step_row, around the step, `turn_count` as a cell (`1 → 2`)
    token_totals: tuple[int, int] | None  # (input, output) summed over the thread's calls up to the step
    # -- what the step recorded, and the model call behind it --
    recorded: dict  # the step's detail but its request, as the JSON it is written as (the Raw JSON view shows it)
    mistake: str | None  # a broken loop's step: the classic mistake that made it what it is (engine/layer_mistake.py)
    origin: object  # an imported step's place in the file it was read from (its detail's `origin`), else None
    tool_output: object  # at a run_tool step, what the tool gave (a fork of it starts from that), else None
    tool_is_error: bool  # at a run_tool step, whether that was an error
    failed_request: dict | None  # at a retry or refused step: what the failed call sent
    last_call: int | None  # the last call_model or summarize step of the thread at or before this one
    call_request: dict | None
    call_response: dict | None
    # at a step that sent a request (call_model, retry, refused): its system, tools' names and max_tokens, and
    # the messages the thread's previous call did not send
    sent: views.SentRequest | None = None


def _thread(trace: Trace, thread: Thread) -> ThreadView:
    own = trace.steps_of(thread.id)
    return ThreadView(thread.id, views.thread_name(thread), thread.label or "", thread.is_main,
                      own[0] if own else None, len(own))


# Caches kept beside a trace, never in it: they go with it.
_sizers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # the token estimates, each message's once
_pairs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Pairs rows by what they depend on, the last few
KEEP_PAIRS = 4  # Back and Step alternate between two


def _estimate(trace: Trace):
    sizer = _sizers.get(trace)
    if sizer is None:
        from ..engine.compact import Compaction

        sizer = _sizers[trace] = Compaction()
    return sizer.estimate


def _pairs_at(trace: Trace, i: int) -> tuple[tuple, list[dict], int]:
    """The Pairs rows at step i, built once for each state of the histories (most clicks leave them as they were)."""
    key: tuple = (trace.steps[i].n_messages if 0 <= i < len(trace) else 0, len(trace.results_at(i)))
    if trace.has_threads or trace.has_compaction:  # every thread's history as it is at the step
        key = (*key, views.pairs_signature(trace, i))
    kept = _pairs.setdefault(trace, {})
    if key not in kept:
        if len(kept) >= KEEP_PAIRS:
            del kept[next(iter(kept))]  # the oldest
        kept[key] = views.pairs_rows(trace, i, recent=PAIRS_RECENT, problems=PAIRS_PROBLEMS)
    rows, total = kept[key]
    return key, rows, total


def view(trace: Trace, i: int, lang: str = "en") -> StepView:
    """The record a page draws for step `i` of `trace` (any i outside the steps: before the first step)."""
    say = translations(lang).gettext
    here = 0 <= i < len(trace)
    step = trace.steps[i] if here else None
    detail = step.detail if step is not None else None
    run_tool = step is not None and step.stage == "run_tool"
    thread = trace.thread_of(i)
    into = views.sub_agent_at(trace, i)
    compaction = views.compaction_at(trace, i)
    if compaction is not None:
        compaction["said_why"] = why_in(step, lang)
    pairs_key, pairs, pairs_total = _pairs_at(trace, i)
    start, end = views.steps_window(trace, i, around=STEPS_AROUND)
    rows = []
    for k in range(start, end):
        row = views.step_row(trace, k)
        row[4 + trace.has_threads] = views.turn_count_cell(trace, k)  # `1 → 2` at a write-back
        rows.append(tuple(row))
    call = views.last_call_at(trace, i)
    failed = step is not None and step.stage in ("retry", "refused")
    return StepView(
        index=i, total=len(trace), lang=lang,
        stage=step.stage if step is not None else None,
        stage_title=say(title_of(step)) if step is not None else "",
        status=views.status_line(trace, i, say),
        status_held=views.status_line(trace, i, say, shown=len(trace) - 1) if i == len(trace) - 2 else "",
        said=views.what_happened(trace, i, lang),
        ending=views.ending(trace, i, say, quote=plain),
        turn_count_change=views.turn_count_change(trace, i),
        errors_read=tuple(views.errors_read_at(trace, i)),
        messages=trace.messages_at(i),
        new_blocks=trace.new_blocks_at(i) if here else (0, 0),
        pending_response=views.pending_response(trace, i),
        results=tuple(trace.results_at(i)),
        compaction=compaction,
        thread=_thread(trace, thread),
        breadcrumb=tuple(Crumb(_thread(trace, t), to) for t, to in views.breadcrumb(trace, i)),
        sub_agent=_thread(trace, into) if into is not None else None,
        threads=tuple(_thread(trace, t) for t in trace.threads.values()),
        takes_answer=run_tool and bool(detail.thread),
        opens_thread=here and not thread.is_main and trace.opened_at(thread.id) == i,
        parallel=run_tool and isinstance(detail.parallel, dict),
        profile=trace.meta.get("profile"),
        has_threads=trace.has_threads,
        has_compaction=trace.has_compaction,
        diagram=svg_args(trace, i),
        state_rows=tuple(views.state_rows(trace, i)),
        presenter_state=tuple(views.presenter_state(trace, i)),
        complete_state=(views.complete_state(trace, i, _estimate(trace))
                        if trace.meta.get("profile") == COMPLETE else None),
        pair_columns=tuple(views.pair_columns(trace)),
        pairs=tuple(pairs), pairs_total=pairs_total, pairs_key=pairs_key,
        step_columns=tuple(views.step_columns(trace)),
        steps_start=start, steps_rows=tuple(rows), token_totals=views.token_totals(trace, i),
        recorded={k: v for k, v in detail.to_dict().items() if k != "request"} if detail is not None else {},
        mistake=detail.mistake if detail is not None else None,
        origin=detail.origin if detail is not None else None,
        tool_output=detail.output if run_tool else None,
        tool_is_error=run_tool and bool(detail.is_error),
        failed_request=trace.request_at(i) if failed else None,
        last_call=call,
        call_request=views.request_as_sent(trace, call) if call is not None else None,
        call_response=trace.response_at(call) if call is not None else None,
        sent=views.sent_request(trace, i),
    )
