"""The record a page draws for step k (loop/views/step.py), built once a rerun.

The controls, the views and the tables of one rerun read the same record. A
rerun builds its records again (a step's recorded facts are read as they are
now); what is dear to build, the Pairs rows of a long history, loop/views/step.py
keeps by what they depend on.
"""

from __future__ import annotations

import streamlit as st

from loop.views.step import StepView, view
from loop.engine.trace import Trace

from .i18n import lang

KEY = "step-views"


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
        kept[1][key] = view(trace, k, lang())
    return kept[1][key]
