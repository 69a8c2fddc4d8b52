"""The complete loop's explicit state beside the chapter's LoopState: budget, turns, retries, recoveries, compactions,
the transition history, and the tools' wall time beside their sum. Drawn for a run of that profile only."""

from __future__ import annotations

import streamlit as st

from loop.views.narrate_complete import number
from loop.views.step import StepView

from .i18n import t
from .tables import cell, html_table


def rows(v: StepView) -> list[tuple[str, str]]:
    """(field, value) in the page's language."""
    s = v.complete_state
    budget = f"{s['budget']:,}" if isinstance(s["budget"], int) else "—"
    out = [
        (t("budget"), t("~{tokens} of {budget} tokens (estimated)", tokens=f"{s['tokens']:,}", budget=budget)),
        (t("turns"), t("{turn} of {max}", turn=s["turn"], max=s["max_turns"] or "—")),
        (t("retries"), t("{n}, the next call is attempt {k}", n=s["retries"], k=s["attempt"]) if s["attempt"] > 1
         else str(s["retries"])),
        (t("recoveries"), t("{n} ({k} in a row)", n=s["recoveries"], k=s["recoveries_in_a_row"])),
        (t("compactions"), str(s["compactions"])),
        (t("transitions"), s["transitions"]),
    ]
    if s["tools"]:
        tools = s["tools"]
        line = t("{n} at once: wall time {wall} s, sum {sum} s", n=tools.get("tools"),
                 wall=f"{number(tools.get('wall_ms')) / 1000:.1f}", sum=f"{number(tools.get('sum_ms')) / 1000:.1f}")
        if number(tools.get("early_saved_ms"), None) is not None:
            line += " · " + t("early start saved {s} s", s=f"{number(tools['early_saved_ms']) / 1000:.1f}")
        out.append((t("tools"), line))
    return out


def draw_complete_state(v: StepView) -> None:
    if v.complete_state is None:  # a run of the complete loop's profile only
        return
    st.caption(t("The complete loop holds more state, explicitly (the chapter's table: turn, budget, transition and "
                 "recovery):"))
    found = rows(v)
    st.html(html_table([f for f, _ in found], [[cell(v) for _, v in found]], key="complete-state"))
