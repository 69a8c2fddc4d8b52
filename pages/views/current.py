"""The record a page draws for step k (loop/step_view.py), built once a rerun.

Kept by (trace, its length, k, language), the last few: the controls, the views
and the tables of one rerun read the same record, and the step beside the
cursor drawn ahead of the server (ahead.py) is the next click's own.
"""

from __future__ import annotations

import streamlit as st

from loop.step_view import StepView, view
from loop.trace import Trace

from .i18n import lang

KEY = "step-views"
KEEP = 6  # the cursor and the steps each side of it, for a live run's and a replay's page


def view_at(trace: Trace, k: int) -> StepView:
    """`view(trace, k, lang())`, built once for each state of the trace."""
    kept = st.session_state.get(KEY)
    if kept is None or kept[0] is not trace:  # the trace itself is kept: an id() can be reused
        kept = (trace, {})
        st.session_state[KEY] = kept
    built = kept[1]
    key = (len(trace), k, lang())  # a new step changes what the others show (Step k of n, the way into it)
    if key not in built:
        if len(built) >= KEEP:
            del built[next(iter(built))]  # the oldest
        built[key] = view(trace, k, lang())
    return built[key]
