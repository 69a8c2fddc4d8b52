"""The Pairs table and the LoopState tables, drawn as Markdown tables.

Plain tables, not st.dataframe: a grid costs the server a pandas-to-Arrow
conversion (and a Styler for the id colours) and the browser a canvas, on every
click, for a few dozen rows. A Markdown table is text the browser lays out
once, readable on a projector and findable with Ctrl+F, and its ids are the
very badges the history uses, so their colours match by construction.
"""

from __future__ import annotations

import re

import streamlit as st

from loop.catalogs import N_
from loop.trace import STAGE_TITLES, Trace
from loop.views import (COLLECTED, THREAD_COLUMN, pair_columns, pairs_rows, pairs_signature, pairs_table, state_rows,
                        step_columns, step_row, steps_window, thread_name)

from .blocks import id_badge
from .i18n import lang, t

AROUND = 7  # LoopState rows drawn each side of the cursor in a long run (all of a run up to 15 steps)
RECENT = 12  # paired rows drawn in a long run, the newest; "Show all pairs" draws every row, in a grid
PROBLEMS = 20  # waiting or orphan rows drawn beside them, the first ones
NOW = "▶"

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|:$~])")


# The words of the tables in the page's language; the chapter's names (id, is_error, turn_count,
# transition_reason, stop_reason) and the stages' names stay as they are, as code.
WORDS = {
    "turn": N_("turn"), "colour": N_("colour"), "tool": N_("tool"), "input": N_("input"), "result": N_("result"),
    "status": N_("status"), "now": N_("now"), "step": N_("step"), "stage": N_("stage"), "messages": N_("messages"),
    "input tokens": N_("input tokens"), "output tokens": N_("output tokens"), "messages (count)": N_("messages (count)"),
    "paired": N_("paired"), "waiting": N_("waiting"), "orphan": N_("orphan"),
    "blue": N_("blue"), "green": N_("green"), "orange": N_("orange"), "violet": N_("violet"), "yellow": N_("yellow"),
    "gray": N_("gray"), "thread": N_("thread"),
}


def word(value: object) -> str:
    """A column's name or a colour or status in the page's language (anything else as it is)."""
    return t(WORDS[value]) if isinstance(value, str) and value in WORDS else str(value)


def stage_cell(stage: str) -> str:
    """A stage's name as code, with its title beside it in a language other than English."""
    if lang() == "en" or stage not in STAGE_TITLES:
        return cell(stage)
    return f"`{stage}` " + cell(t(STAGE_TITLES[stage]))


def result_cell(result: object) -> str:
    """A result, its "collected, not yet written back" mark in the page's language."""
    text = str(result or "")
    if text.startswith(COLLECTED):
        text = t(COLLECTED) + text[len(COLLECTED):]
    return cell(text)


def cell(value: object) -> str:
    """A table cell showing `value` as it is: Markdown, directives and LaTeX escaped, one line."""
    if value is None or value != value:  # None or NaN
        return ""
    text = " ".join(str(value).split())
    return _SPECIAL.sub(r"\\\1", text)


def badge_cell(tool_use_id: object) -> str:
    """An id as the history's badge, safe inside a table row."""
    return " ".join(id_badge(tool_use_id).split()).replace("|", "\\|")


def markdown_table(columns: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table of cells already made safe with `cell` (or badges)."""
    lines = ["| " + " | ".join(cell(c) or " " for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r or " " for r in row) + " |" for row in rows]
    return "\n".join(lines)


def _cached(key: str, trace: Trace, signature: tuple, build, keep: int = 4):
    """`build()` once per trace and `signature`, the last `keep` kept (Back and Step alternate between two).

    The trace itself is kept with them: an id() can be reused.
    """
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not trace:
        kept = (trace, {})
        st.session_state[key] = kept
    built = kept[1]
    if signature not in built:
        if len(built) >= keep:
            del built[next(iter(built))]  # the oldest
        built[signature] = build()
    return built[signature]


def pairs_markdown(trace: Trace, cursor: int) -> tuple[str, int, int]:
    """The Pairs table as Markdown, with the number of rows drawn and in all (a long one: the newest rows)."""
    found, total = pairs_rows(trace, cursor, recent=RECENT, problems=PROBLEMS)
    rows = [[
        *([cell(row[THREAD_COLUMN])] if THREAD_COLUMN in row else []),
        cell(row["turn"]), badge_cell(row["id"]), cell(word(row["colour"])), cell(row["tool"]), cell(row["input"]),
        result_cell(row["result"]), ":red-badge[true]" if row["is_error"] else "false",
        cell(word(row["status"])) if row["status"] == "paired" else f"**{cell(word(row['status']))}**",
    ] for row in found]
    return markdown_table([word(c) for c in pair_columns(trace)], rows), len(found), total


def draw_pairs(trace: Trace, cursor: int, key: str) -> None:
    pending = len(trace.results_at(cursor)) if 0 <= cursor < len(trace) else 0
    n = trace.steps[cursor].n_messages if 0 <= cursor < len(trace) else 0
    if trace.has_threads or trace.has_compaction:  # the table shows every thread's history as it is at the cursor
        n = (n, pairs_signature(trace, cursor))
    everything = bool(st.session_state.get(f"{key}-all-pairs"))
    text, shown, total = _cached(f"{key}-pairs-table", trace, (n, pending, lang()),
                                 lambda: pairs_markdown(trace, cursor))
    st.markdown(t("#### Pairs · tool_use ↔ tool_result"))
    st.caption(t("Every tool_use needs a tool_result with the same id in the very next (user) message. "
                 "The id's colour is the same here and in the history."))
    if not total:
        st.caption(t("No tool_use yet."))
        return
    if shown < total:
        left, right = st.columns([3, 1], vertical_alignment="center")
        left.caption(t("All {total} rows.", total=f"{total:,}") if everything else
                     t("{shown} of {total} rows: the newest, and those that break a rule.", shown=shown,
                       total=f"{total:,}"))
        right.toggle(t("Show all pairs"), key=f"{key}-all-pairs")
    if everything and shown < total:  # thousands of rows: a grid that draws only what is in view
        table = _cached(f"{key}-all-pairs-table", trace, (n, pending), lambda: pairs_table(trace, cursor))
        st.dataframe(table, hide_index=True, key=f"{key}-pairs-all",
                     column_config={c: st.column_config.Column(word(c)) for c in pair_columns(trace)})
        return
    st.markdown(text)


def steps_markdown(trace: Trace, cursor: int) -> tuple[str, int, int]:
    """The LoopState rows around `cursor` as Markdown (▶ marks the cursor), the first row's index and the row count."""
    start, end = steps_window(trace, cursor, around=AROUND)
    rows, columns = [], step_columns(trace)
    for i in range(start, end):
        values = [stage_cell(v) if c == "stage" else cell(v) for c, v in zip(columns, step_row(trace, i))]
        if i == cursor:
            values = [NOW] + [f"**{v}**" if v else v for v in values[1:]]
        rows.append(values)
    return markdown_table([word(c) for c in columns], rows), start, end - start


def draw_loop_state(trace: Trace, cursor: int, key: str) -> None:
    st.markdown(t("#### LoopState · after each step"))
    now = state_rows(trace, cursor)  # the chapter's three fields, as one row: the state the next stage starts from
    if trace.has_threads and 0 <= cursor < len(trace):  # each thread has its own LoopState: the cursor's
        st.caption(t("Now, in thread {thread}", thread=f"`{thread_name(trace.thread_of(cursor))}`"))
    else:
        st.caption(t("Now"))
    st.markdown(markdown_table([word(f) for f, _ in now], [[f"**{cell(v)}**" for _, v in now]]))
    if not len(trace):
        st.caption(t("No steps yet."))
        return
    text, start, shown = steps_markdown(trace, cursor)
    if start > 0 or shown < len(trace):
        st.caption(t("Steps {a}–{b} of {n}, around the current one (▶).", a=start + 1, b=start + shown,
                     n=f"{len(trace):,}"))
    st.markdown(text)
