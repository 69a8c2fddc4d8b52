"""The chapter's closing table, both columns, each row linked to the scenario that shows it in the complete loop."""

from __future__ import annotations

import streamlit as st

from loop.text.catalogs import N_

from .i18n import lang, t
from .tables import cell

# (aspect, the chapter's minimal loop, a high-completion system, the scenarios that show it), as the chapter words it
ROWS = [
    (N_("loop shape"), N_("a plain `while True`"), N_("event-driven, streaming continuation"), ("parallel",)),
    (N_("why the loop goes on"), N_("mostly `tool_result`"), N_("several: retry, resume after compaction, recovery"),
     ("overloaded", "big-context", "long-answer")),
    (N_("tool execution"), N_("after the whole response is read"),
     N_("parallel, started early while the response streams"), ("parallel",)),
    (N_("state"), N_("mostly `messages`"), N_("turn, budget, transition and recovery held explicitly"),
     ("big-context",)),
    (N_("error handling"), N_("almost none"), N_("truncation, transport errors, a retry branch"),
     ("long-answer", "overloaded")),
    (N_("observability"), N_("minimal"), N_("progress events, structured logs, a UI stream"), ("overloaded",)),
]
# Where a row is shown beyond its scenarios: what a scenario's link alone does not show
WHERE = {
    "loop shape": N_("with **Stream the answer** on in the sidebar: each tool starts as soon as its block has "
                     "arrived, while the answer still streams"),
    "observability": N_("the wait counted down and \"attempt k of n\" while it waits; a run's journal, one JSON line "
                        "a step: `python -m loop run --journal run.jsonl`"),
}


def _link(path: str, **query: str) -> str:
    if lang() != "en":
        query["lang"] = lang()
    return path + "?" + "&".join(f"{k}={v}" for k, v in query.items())


def table_markdown() -> str:
    """The table as Markdown: each scenario a link to it beside the minimal loop, and one to step through it."""
    head = [t("aspect"), t("the chapter's minimal loop"), t("a high-completion system"), t("see it")]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    step = t("step")
    for aspect, minimal, complete, scenarios in ROWS:
        links = " · ".join(f"[{name}]({_link('/compare', scenario=name)}) "
                           f"([{step}]({_link('/', scenario=name, profile='complete')}))" for name in scenarios)
        if aspect in WHERE:
            links += " — " + t(WHERE[aspect])
        lines.append(f"| {cell(t(aspect))} | {t(minimal)} | {t(complete)} | {links} |")
    return "\n".join(lines)


def draw_chapter_table() -> None:
    st.markdown("### " + t("The chapter's table: the minimal loop beside a high-completion system"))
    st.markdown(table_markdown())
    st.caption(t("Each scenario opens both loops side by side, call by call; “step” runs it in the complete loop on "
                 "Step through. What stays the same: an agent is a loop that keeps feeding results back to the model; "
                 "what grows around it is state management and more reasons to continue."))
