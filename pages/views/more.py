"""More to see at a step: how the context grows turn by turn, and exports (Markdown, CSV)."""

from __future__ import annotations

import re

import streamlit as st

from loop.files.export import to_markdown
from loop.engine.trace import Trace
from loop.views.parts import growth_table, pairs_table, steps_table

from .blocks import in_code
from .i18n import lang, t


def file_stem(name: str) -> str:
    """A file name's stem from a task or file name: lower-case words joined by hyphens, at most 40 characters."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower())[:40].strip("-") or "run"


def draw_growth(trace: Trace, cursor: int, key: str) -> None:
    """Two line charts, one point a model call: the messages sent, and the tokens in and out.

    Drawn only when asked for: charts are the dearest part of a step's page to
    draw, and most clicks are about the messages, not the growth.
    """
    if not st.toggle(t("Show context growth"), key=f"{key}-growth"):
        return
    table = growth_table(trace, cursor)
    st.markdown(t("#### Context growth · per turn"))
    if table.empty:
        st.caption(t("No model call yet."))
        return
    st.caption(t("Every turn sends the whole history again: the messages and the input tokens grow as "
                 "tool_results are written back."))
    table = table.rename(columns={"messages sent": t("messages sent"), "input tokens": t("input tokens (this call)"),
                                  "output tokens": t("output tokens (this call)")})
    left, right = st.columns(2)
    with left:
        st.line_chart(table[[t("messages sent")]], height=220, x_label=t("turn"), y_label="messages")
    with right:
        st.line_chart(table[[t("input tokens (this call)"), t("output tokens (this call)")]], height=220,
                      x_label=t("turn"), y_label="tokens")


def draw_exports(trace: Trace, cursor: int, key: str, name: str) -> None:
    """Markdown of the history up to this step; the LoopState and Pairs tables as CSV. Made when pressed.

    The buttons are drawn only while their expander is open: each download
    button registers its file with the server on every click of Step.
    """
    expander = st.expander(t("Export this step · Markdown, CSV"), key=f"{key}-exports", on_change="rerun",
                           icon=":material/ios_share:")
    with expander:
        if expander.open:
            _draw_export_buttons(trace, cursor, key, name)


def imported_from(trace: Trace) -> str | None:
    """The format of the real log `trace` was imported from (a Claude Code session, a recorded request, a course
    trace), None for a run made here or one of the samples. A transcript saved from an import keeps saying it."""
    imported = trace.meta.get("imported") if isinstance(trace.meta, dict) else None
    fmt = imported.get("format") if isinstance(imported, dict) else None
    return fmt if isinstance(fmt, str) and fmt != "loopscope" else None


def secrets_warning(trace: Trace) -> str:
    """What to know before exporting or sharing an imported real log (Markdown), "" for a run made here."""
    fmt = imported_from(trace)
    if fmt is None:
        return ""
    return t("**This trace was imported from a real log** (`{format}`): it may hold secrets: keys, tokens or passwords "
             "in commands, tool inputs and outputs, file contents, private paths. The exports write the log's "
             "messages as they are: **nothing in them is redacted**. Read it before you share it.", format=in_code(fmt))


def _draw_export_buttons(trace: Trace, cursor: int, key: str, name: str) -> None:
    warning = secrets_warning(trace)
    if warning:
        st.warning(warning, icon=":material/key:")
    slug = file_stem(name)
    empty = not 0 <= cursor < len(trace)
    a, b, c = st.columns(3)
    a.download_button(t("Markdown"), data=lambda: to_markdown(trace, cursor, lang()), file_name=f"{slug}-step-{cursor + 1}.md",
                      mime="text/markdown", key=f"{key}-export-md", on_click="ignore", disabled=empty,
                      icon=":material/description:", width="stretch",
                      help=t("The history up to this step, readable in a course page."))
    b.download_button(t("LoopState CSV"), data=lambda: steps_table(trace).drop(columns="now").to_csv(index=False),
                      file_name=f"{slug}-loopstate.csv", mime="text/csv", key=f"{key}-export-steps",
                      on_click="ignore", disabled=empty, icon=":material/table:", width="stretch")
    c.download_button(t("Pairs CSV"), data=lambda: pairs_table(trace, cursor).to_csv(index=False),
                      file_name=f"{slug}-pairs-step-{cursor + 1}.csv", mime="text/csv", key=f"{key}-export-pairs",
                      on_click="ignore", disabled=empty, icon=":material/table:", width="stretch")
