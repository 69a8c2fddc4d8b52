"""Find in a long trace: the steps that match a query (an error, a tool by name, a text), and the next one.

A session of thousands of records is stepped through for its few moments that matter: a command that failed,
a call the API refused, each run of one tool, a word. `matches(trace, query)` is the list of steps a query
finds, computed once per (trace length, query) and kept beside the trace, so a jump from match to match costs
a bisection, not a walk over the trace. No Streamlit here.
"""

from __future__ import annotations

import json
import weakref
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from ..engine.trace import Step, Trace
from ..text.catalogs import N_

ERRORS, TOOL, TEXT = "errors", "tool", "text"
KINDS = {  # what a page offers to find, in its words
    ERRORS: N_("Errors"),
    TOOL: N_("Tool"),
    TEXT: N_("Text"),
}
_CACHED = 16  # queries kept a trace: the few a person tries in turn


@dataclass(frozen=True)
class Query:
    """What to find: `kind` is ERRORS (is_error tool_results, refused calls, API errors), TOOL (`text` is the
    tool's name) or TEXT (`text` anywhere in what a step recorded, case ignored)."""

    kind: str = ERRORS
    text: str = ""

    @property
    def empty(self) -> bool:
        """A query that finds nothing by its nature: a tool or a text not given."""
        return self.kind != ERRORS and not self.text.strip()


def is_error(step: Step) -> bool:
    """A step that went wrong: a tool_result marked is_error (a failed command, a denied call, a result never
    recorded), a call the API refused, or a call that failed on the way and was retried."""
    if step.stage in ("refused", "retry"):
        return True
    return step.stage == "run_tool" and bool(step.detail.is_error)


def _haystack(step: Step) -> str:
    """What a text query reads in a step: what the stage recorded, less the request a call sent (its system
    prompt and tools would match at every call) and a run's tool_result block (its output, said again), lower-cased."""
    recorded = {k: v for k, v in step.detail.to_dict().items() if k not in ("request", "origin", "tool_result")}
    return json.dumps(recorded, ensure_ascii=False, default=str).lower()


class _Found:
    """A trace's texts to search and its queries' answers, kept while the trace lives."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.answers: dict[tuple[int, Query], list[int]] = {}


_FOUND: "weakref.WeakKeyDictionary[Trace, _Found]" = weakref.WeakKeyDictionary()


def matches(trace: Trace, query: Query) -> list[int]:
    """The indexes of the steps of `trace` that `query` finds, in order. Cached per (trace length, query): a
    live run or a followed log that grows is searched again, a cursor move is not."""
    if query.empty:
        return []
    found = _FOUND.get(trace)
    if found is None:
        found = _FOUND[trace] = _Found()
    key = (len(trace), query)
    answer = found.answers.get(key)
    if answer is None:
        answer = _search(trace, query, found)
        if len(found.answers) >= _CACHED:
            found.answers.pop(next(iter(found.answers)))
        found.answers[key] = answer
    return answer


def _search(trace: Trace, query: Query, found: _Found) -> list[int]:
    steps = trace.steps
    if query.kind == ERRORS:
        return [i for i, step in enumerate(steps) if is_error(step)]
    if query.kind == TOOL:
        name = query.text.strip().lower()
        return [i for i, step in enumerate(steps)
                if step.stage == "run_tool" and str(step.detail.name or "").lower() == name]
    for step in steps[len(found.texts):]:  # each step's text made once, as the trace grows
        found.texts.append(_haystack(step))
    needle = query.text.strip().lower()
    return [i for i, text in enumerate(found.texts[:len(steps)]) if needle in text]


def tool_names(trace: Trace) -> list[str]:
    """The names of the tools the trace ran, most used first (then by name)."""
    counts: dict[str, int] = {}
    for step in trace.steps:
        if step.stage == "run_tool" and step.detail.name:
            name = str(step.detail.name)
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts, key=lambda name: (-counts[name], name))


def next_match(found: list[int], cursor: int) -> int | None:
    """The first match after `cursor`, or None."""
    k = bisect_right(found, cursor)
    return found[k] if k < len(found) else None


def previous_match(found: list[int], cursor: int) -> int | None:
    """The last match before `cursor`, or None."""
    k = bisect_left(found, cursor)
    return found[k - 1] if k > 0 else None


def place(found: list[int], cursor: int) -> int | None:
    """Which match (1-based) the cursor is on, or None when it is on none."""
    k = bisect_left(found, cursor)
    return k + 1 if k < len(found) and found[k] == cursor else None
