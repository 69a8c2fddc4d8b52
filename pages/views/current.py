"""The record a page draws for step k (loop/views/step.py), built once a rerun, and the HTML drawn from it.

The controls, the views and the tables of one rerun read the same record. A
rerun builds its records again (a step's recorded facts are read as they are
now); what is dear to build, the Pairs rows of a long history, loop/views/step.py
keeps by what they depend on. What is dear to draw, the views of a step (its
diagram and its history), is kept by the record it was drawn from: a cursor move
draws a step the click before drew already (the steps beside the cursor go with
every page: ahead.py), and a record equal to that one draws the same HTML.

The steps beside the cursor are sent ahead with every page: their records are kept from one rerun to the next,
while the trace, its steps and the step itself are the same objects (a new step, a trace taken from a longer one,
make them anew). A cursor move so builds one record beside the cursor, not two, and the one it leaves is the
record it drew the click before. The step under the cursor, the one the server draws whole, is read as it is now;
a record equal to the one kept is that one, so that its views and tables, drawn from it, are found at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import streamlit as st

from loop.views.step import StepView, view
from loop.engine.trace import Trace

from .i18n import lang

KEY = "step-views"
HTML = "step-views-html"
BESIDE = "step-views-beside"
KEEP_BESIDE = 4  # the steps each side of the cursor, and the one it left
KEEP_HTML = 16  # the views and tables of the cursor and of the steps each side of it, and those of the clicks before
KEEP_BYTES = 2**20  # more of them, while the HTML kept is smaller than this: Back and Step over a whole short run
KEEP_MOST = 64  # and never more than this many: each holds its record (messages, rows) too


def fresh() -> None:
    """Start a rerun's records (call once, before the step is drawn)."""
    st.session_state.pop(KEY, None)


def view_at(trace: Trace, k: int) -> StepView:
    """`view(trace, k, lang())`, built once this rerun for each state of the trace."""
    kept = st.session_state.get(KEY)
    if kept is None or kept[0] is not trace:  # the trace itself is kept: an id() can be reused
        kept = (trace, {})
        st.session_state[KEY] = kept
    key = (len(trace), k, lang())  # a new step changes what the others show (Step k of n, the way into it)
    if key not in kept[1]:
        kept[1][key] = _built(trace, k, key)
    return kept[1][key]


def _built(trace: Trace, k: int, key: tuple) -> StepView:
    """A new record of step k, but for a step beside the cursor whose record the rerun before built; the record is
    then kept for the next rerun."""
    last = st.session_state.get(BESIDE)
    if last is None or last[0] is not trace:
        last = (trace, {})
        st.session_state[BESIDE] = last
    steps, step = trace.recorded(k)
    found = last[1].pop(key, None)
    kept = found is not None and found[0] is steps and found[1] is step
    if kept and k != trace.cursor:
        v = found[2]
    else:
        v = view(trace, k, key[2])
        if kept and v == found[2]:  # the same facts: the record the HTML was drawn from, found by identity (`drawn`)
            v = found[2]
    last[1][key] = (steps, step, v)  # the newest last
    while len(last[1]) > KEEP_BESIDE:
        del last[1][next(iter(last[1]))]
    return v


def drawn(v: StepView, what: tuple[Hashable, ...], draw: Callable[[], str]) -> str:
    """`draw()`: the HTML of record `v`, drawn again only when `v` or `what` (all else it depends on) differs from
    the last time it was drawn.

    Records are compared whole (a step's fact changed since is a record that differs); most of what they hold is
    the very same objects from one rerun to the next (the messages, the Pairs rows), so comparing costs little.
    """
    kept = st.session_state.get(HTML)
    if kept is None:
        kept = st.session_state[HTML] = {}
    key = (v.index, v.total, v.lang, *what)
    found = kept.pop(key, None)
    if found is None or not (found[0] is v or found[0] == v):
        found = (v, draw())
        size = len(found[1]) + sum(len(html) for _, html in kept.values())
        while len(kept) >= KEEP_MOST or len(kept) >= KEEP_HTML and size > KEEP_BYTES:
            size -= len(kept.pop(next(iter(kept)))[1])  # the longest unused
    kept[key] = found  # the newest last
    return found[1]
