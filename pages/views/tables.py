"""The Pairs table and the LoopState tables, built once per trace length and kept in session_state."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loop.trace import Trace
from loop.views import id_style, mark, pairs_table, state_table, steps_table

from .i18n import t

AROUND = 7  # LoopState rows drawn each side of the cursor in a long run (all of a run up to 15 steps)
ROW = 35  # pixels a dataframe row takes: tall enough to show every row drawn, so ▶ is always in view
RECENT = 40  # paired rows drawn in a long run; rows that break a rule are always drawn (up to PROBLEMS)
PROBLEMS = 200
STYLED = 500


def _cached(key: str, trace: Trace, signature: tuple, build) -> pd.DataFrame:
    """`build()` once per trace and `signature` (the trace itself is kept: an id() can be reused)."""
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not trace or kept[1] != signature:
        kept = (trace, signature, build())
        st.session_state[key] = kept
    return kept[2]


def draw_pairs(trace: Trace, cursor: int, key: str) -> None:
    pending = len(trace.results_at(cursor)) if 0 <= cursor < len(trace) else 0
    n = trace.steps[cursor].n_messages if 0 <= cursor < len(trace) else 0
    everything = bool(st.session_state.get(f"{key}-all-pairs"))
    table = _cached(f"{key}-pairs-table", trace, (n, pending, everything),
                    lambda: pairs_table(trace, cursor, recent=None if everything else RECENT, problems=PROBLEMS))
    total = table.attrs.get("total", len(table))
    st.markdown(t("#### Pairs · tool_use ↔ tool_result"))
    st.caption(t("Every tool_use needs a tool_result with the same id in the very next (user) message. "
                 "The id's colour is the same here and in the history."))
    if not total:
        st.caption(t("No tool_use yet."))
        return
    if len(table) < total or everything:
        left, right = st.columns([3, 1], vertical_alignment="center")
        left.caption(t("{hidden} older paired rows of {total} are not drawn; every waiting or orphan row is.",
                       hidden=f"{total - len(table):,}", total=f"{total:,}") if len(table) < total
                     else t("All {total} rows.", total=f"{total:,}"))
        right.toggle(t("Show all pairs"), key=f"{key}-all-pairs")
    # Colouring cells costs time a row: a very long table keeps only its colour column.
    styled = table.style.map(id_style, subset=["id"]) if len(table) <= STYLED else table
    st.dataframe(styled, hide_index=True, key=f"{key}-pairs", column_config={
        "turn": st.column_config.NumberColumn("turn", width=50),
        "id": st.column_config.TextColumn("id", width="medium"),
        "colour": st.column_config.TextColumn("colour", width=70),
        "is_error": st.column_config.CheckboxColumn("is_error", width="small"),
    })


def draw_loop_state(trace: Trace, cursor: int, key: str) -> None:
    st.markdown(t("#### LoopState · after each step"))
    left, right = st.columns([4, 1])
    with right:
        st.caption(t("Now"))
        st.dataframe(state_table(trace, cursor), hide_index=True, key=f"{key}-state-now")
    with left:
        if not len(trace):
            st.caption(t("No steps yet."))
            return
        table = _cached(f"{key}-steps-table", trace, (len(trace),), lambda: steps_table(trace))
        rows, start = mark(table, cursor, around=AROUND)
        if start > 0 or len(rows) < len(table):
            st.caption(t("Steps {a}–{b} of {n}, around the current one (▶).", a=start + 1, b=start + len(rows), n=f"{len(table):,}"))
        st.dataframe(rows, hide_index=True, key=f"{key}-steps", height=ROW * (len(rows) + 1) + 3, column_config={
            "now": st.column_config.TextColumn("", width=30),
        })
