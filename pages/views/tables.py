"""The Pairs table and the LoopState tables, drawn as HTML tables.

Plain tables, not st.dataframe: a grid costs the server a pandas-to-Arrow
conversion and the browser a canvas, on every click, for a few dozen rows. An
HTML table is text the browser lays out once, readable on a projector and
findable with Ctrl+F, and its ids are the very badges the history draws, so
their colours match by construction. Field names stay the chapter's (in code
style); in Japanese and Chinese their meaning is written under them.
"""

from __future__ import annotations

from html import escape

import streamlit as st

from loop.text.catalogs import N_
from loop.views.step import PAIRS_PROBLEMS, PAIRS_RECENT, STEPS_AROUND, StepView
from loop.engine.trace import Trace
from loop.views.parts import COLLECTED, THREAD_COLUMN, pairs_table

from .blocks import Ready, badge, error_badge
from .current import drawn
from .i18n import lang, stage_title, t

AROUND = STEPS_AROUND  # LoopState rows drawn each side of the cursor in a long run (all of a run up to 15 steps)
RECENT = PAIRS_RECENT  # paired rows drawn in a long run, the newest; "Show all pairs" draws every row, in a grid
PROBLEMS = PAIRS_PROBLEMS  # waiting or orphan rows drawn beside them, the first ones
NOW = "▶"

# The words of the tables in the page's language; the chapter's names (id, is_error, turn_count,
# transition_reason, stop_reason) and the stages' names stay as they are, as code.
WORDS = {
    "turn": N_("turn"), "colour": N_("colour"), "tool": N_("tool"), "input": N_("input"), "result": N_("result"),
    "status": N_("status"), "now": N_("now"), "step": N_("step"), "stage": N_("stage"), "messages": N_("messages"),
    "input tokens (this call)": N_("input tokens (this call)"),
    "output tokens (this call)": N_("output tokens (this call)"), "messages (count)": N_("messages (count)"),
    "paired": N_("paired"), "waiting": N_("waiting"), "orphan": N_("orphan"),
    "blue": N_("blue"), "green": N_("green"), "orange": N_("orange"), "violet": N_("violet"), "yellow": N_("yellow"),
    "gray": N_("gray"), "thread": N_("thread"),
}


def word(value: object) -> str:
    """A column's name or a colour or status in the page's language (anything else as it is)."""
    return t(WORDS[value]) if isinstance(value, str) and value in WORDS else str(value)


def cell(value: object) -> str:
    """A table cell showing `value` as it is, on one line, as text."""
    if value is None or value != value:  # None or NaN
        return ""
    return escape(" ".join(str(value).split()))


def named(name: str) -> str:
    """A column's name, a colour or a status in the page's language; one of the chapter's names as code."""
    if name in WORDS:
        return escape(word(name))
    return f"<code>{escape(name)}</code>"


def result_cell(result: object) -> str:
    """A result, its "collected, not yet written back" mark in the page's language."""
    text = str(result or "")
    if text.startswith(COLLECTED):
        text = t(COLLECTED) + text[len(COLLECTED):]
    return cell(text)


# Headers over a column of short numbers or words, which may wrap: on one line they widen the table past its column.
TOKENS = {"input tokens (this call)", "output tokens (this call)"}


def html_table(columns: list[str], rows: list[list[str]], now: int | None = None, key: str = "") -> str:
    """An HTML table of cells already made safe (`cell`, `named`, badges); row `now` is marked."""
    # a long name of the chapter's may break after an underscore (transition_ reason), where its column is narrow
    head = "".join(f'<th class="ls-wraps ls-tokens">{named(c)}</th>' if c in TOKENS else
                   f'<th class="ls-wraps">{named(c).replace("_", "_<wbr>")}</th>' if "_" in c else f"<th>{named(c)}</th>"
                   for c in columns)
    marked = ' class="ls-now"'
    body = "".join(f"<tr{marked if i == now else ''}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                   for i, row in enumerate(rows))
    return f'<div class="ls-wrap"><table class="ls-table" data-table="{key}"><thead><tr>{head}</tr></thead>' \
           f"<tbody>{body}</tbody></table></div>"


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


SHORT_NAME = 20  # characters of a thread's name a table cell shows; the whole name is its tooltip


def thread_cell(name: object, depth: int = 0) -> str:
    """A thread's name, indented by how deep it runs: a sub-agent's rows sit under the tool_use that started it.

    A long name is cut to keep the column narrow, the whole of it in a tooltip (the heading says it whole)."""
    text = " ".join(str(name).split())
    # cut in the middle: ids of one log share their start ("task toolu_sc_…"), and differ at their end
    head, tail = text[:SHORT_NAME // 2 - 1], text[-(SHORT_NAME // 2):]
    shown = cell(text) if len(text) <= SHORT_NAME else \
        f'<span title="{escape(text)}">{cell(head)}…{cell(tail)}</span>'
    if not depth:
        return shown
    return (f'<span class="ls-sub" style="padding-left:{0.9 * (depth - 1):.1f}em">'
            f'<span aria-hidden="true">↳ </span>{shown}</span>')


def pairs_html(v: StepView) -> tuple[str, int, int]:
    """The Pairs table as HTML, with the number of rows drawn and in all (a long one: the newest rows)."""
    found, total = v.pairs, v.pairs_total
    rows = [[
        *([thread_cell(row[THREAD_COLUMN], row.get("depth", 0))] if THREAD_COLUMN in row else []),
        cell(row["turn"]), badge(row["id"], row["colour"]), named(row["colour"]), cell(row["tool"]),
        f'<span class="ls-data">{cell(row["input"])}</span>', f'<span class="ls-data">{result_cell(row["result"])}</span>',
        error_badge("true") if row["is_error"] else "<code>false</code>",
        named(row["status"]) if row["status"] == "paired" else f"<b>{named(row['status'])}</b>",
    ] for row in found]
    return html_table(list(v.pair_columns), rows, key="pairs"), len(found), total


def caption_html(text: str) -> str:
    return f'<p class="ls-caption">{escape(text)}</p>'


def heading(title: str, caption: str = "") -> str:
    """A table's heading and caption, drawn in the same element as the table."""
    return (f'<h4 class="ls-h4">{escape(title)}</h4>' + (f'<p class="ls-caption">{escape(caption)}</p>'
                                                          if caption else ""))


def draw_tables(v: StepView, key: str, trace: Trace | None = None) -> None:
    """A rule and the Pairs table, then the LoopState.

    One element: each element a click sends costs the server a message of its own, and the Pairs table (a few
    dozen rows at most) costs the browser little to draw again. A long run's Pairs table comes with controls of its
    own, and the LoopState is then an element apart.
    """
    pairs = draw_pairs(v, key, draw=False, trace=trace)
    state = drawn(v, ("loop-state",), lambda: loop_state_html(v))  # as a click before drew it, if it did
    if pairs is None:  # a long run: the Pairs table came with its own controls
        st.html(Ready(state))
        return
    # the space two elements would have between them (the page's gap), kept between the two tables
    st.html(Ready(f'<hr class="ls-rule">{pairs}<div class="ls-apart">{state}</div>'))


def draw_pairs(v: StepView, key: str, draw: bool = True, trace: Trace | None = None) -> str | None:
    """The Pairs table; with `draw=False` its HTML is returned instead, unless it needs controls of its own.

    The whole table of a long run ("Show all pairs") is an export of `trace`, drawn only when asked for."""
    everything = bool(st.session_state.get(f"{key}-all-pairs"))
    # a few dozen rows at most: the rows themselves are kept (loop/views/step.py), their HTML as a click before drew it
    text, shown, total = drawn(v, ("pairs",), lambda: pairs_html(v)[0]), len(v.pairs), v.pairs_total
    head = heading(t("Pairs · tool_use ↔ tool_result"),
                   t("Every tool_use needs a tool_result with the same id in the very next (user) message. "
                     "The id's colour is the same here and in the history."))
    if len({str(row["id"]) for row in v.pairs}) > len({row["colour"] for row in v.pairs}):  # the palette ran out
        head += caption_html(t("More ids than colours: some colours repeat here; the id itself tells them apart."))
    if not total:
        body = head + caption_html(t("No tool_use yet."))
        return body if not draw else st.html(body)
    if shown < total:
        st.html('<hr class="ls-rule">' + head)
        left, right = st.columns([3, 1], vertical_alignment="center")
        left.caption(t("All {total} rows.", total=f"{total:,}") if everything else
                     t("{shown} of {total} rows: the newest, and those that break a rule.", shown=shown,
                       total=f"{total:,}"))
        right.toggle(t("Show all pairs"), key=f"{key}-all-pairs")
    if everything and shown < total and trace is not None:  # thousands of rows: a grid that draws only what is in view
        cursor = v.index
        table = _cached(f"{key}-all-pairs-table", trace, v.pairs_key, lambda: pairs_table(trace, cursor))
        st.dataframe(table, hide_index=True, key=f"{key}-pairs-all",
                     column_config={c: st.column_config.Column(word(c)) for c in v.pair_columns})
        return None
    if shown < total:
        st.html(text)
        return None
    return head + text if not draw else st.html(head + text)


def steps_html(v: StepView) -> tuple[str, int, int]:
    """The LoopState rows around the step (▶ marks it), the first row's index and the row count.

    `turn` is the turn a step is part of; `turn_count` is the variable after it (`1 → 2` at a write-back).
    """
    start, cursor = v.steps_start, v.index
    rows = []
    for i, row in enumerate(v.steps_rows, start):
        values = list(row)
        thread = [thread_cell(values.pop(2))] if v.has_threads else []  # a run with sub-agents: the step's thread
        shown = [NOW if i == cursor else "", cell(values[1]), *thread, cell(values[2]) if values[2] else "—",
                 f"<code>{escape(values[3])}</code>" + (f'<span class="ls-cn">{escape(stage_title(values[3]))}</span>'
                                                        if lang() != "en" else ""),
                 cell(values[4])] + [cell(value) for value in values[5:]]
        rows.append(shown)
    return html_table(list(v.step_columns), rows, now=cursor - start, key="steps"), start, len(rows)


def loop_state_html(v: StepView) -> str:
    """The LoopState now (the chapter's three fields: the state the next stage starts from), then step by step:
    the heading, both tables and their captions. In a run with sub-agents, each thread has its own LoopState:
    "now" is the cursor's."""
    now = v.state_rows
    where = t("Now, in thread {thread}", thread=v.thread.name) if v.has_threads and v.index >= 0 else t("Now")
    out = [heading(t("LoopState · after each step"), where),
           html_table([f for f, _ in now], [[f"<b>{cell(v)}</b>" for _, v in now]], key="now")]
    if not v.total:
        out.append(caption_html(t("No steps yet.")))
    else:
        text, start, shown = steps_html(v)
        if start > 0 or shown < v.total:
            out.append(caption_html(t("Steps {a}–{b} of {n}, around the current one (▶).", a=start + 1,
                                      b=start + shown, n=f"{v.total:,}")))
        out.append(text)
        if v.token_totals is not None:  # the sums apart from the calls' own figures, and named as sums
            out.append(caption_html(t("All calls so far, summed: {input} input tokens, {output} output tokens. Each "
                                      "call sends the whole history again, so these sums count a message once for "
                                      "every call that sent it.", input=f"{v.token_totals[0]:,}",
                                      output=f"{v.token_totals[1]:,}")))
    return "".join(out)


def state_row_html(v: StepView, key: str) -> str:
    """Presenter mode's LoopState: one row (turn_count, transition_reason, stop_reason, messages), large."""
    fields = v.presenter_state  # the chapter's own names, as code in every language
    items = "".join(f'<span class="ls-field"><code>{escape(f)}</code> <b class="ls-value">{cell(v)}</b></span>'
                    for f, v in fields)
    return (f'<div class="ls-state-row" id="ls-state-{key}" data-table="state-row"><span class="ls-state-name">'
            f'LoopState</span>{items}</div>')


def draw_state_row(v: StepView, key: str) -> None:
    """The one-row LoopState of presenter mode."""
    st.html(state_row_html(v, key))
