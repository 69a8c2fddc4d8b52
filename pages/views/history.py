"""The message history as the model will see it on its next call, a bounded window of it.

Only the newest WINDOW to WINDOW + SNAP - 1 messages are drawn, so a click at
5,000 messages costs what it does at ten; "Show earlier" pages back. What a
stage holds outside `messages` (a response not yet appended, tool_results not
yet written back) is drawn after the history, apart from it: that gap is the
lesson.
"""

from __future__ import annotations

import streamlit as st

from loop.trace import Trace
from loop.views import pending_response, window

from .blocks import draw_content, in_code, plain
from .i18n import t

WINDOW = 12  # messages drawn at least; up to WINDOW + SNAP - 1 (see loop.views.window)
SNAP = 4
HEIGHT = 640  # pixels; the panel scrolls


def new_mark() -> str:
    return ":primary[:material/arrow_forward: **" + t("added by this step") + "**]"


def _offset(key: str, cursor: int) -> int:
    kept = st.session_state.get(key)
    return kept[1] if kept and kept[0] == cursor else 0  # a new step shows the newest messages


def _page(key: str, cursor: int, by: int) -> None:
    st.session_state[key] = (cursor, max(0, _offset(key, cursor) + by))


def _label(i: int, message: dict) -> str:
    role = message.get("role", "?")
    content = message.get("content")
    kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else ["text"]
    if role == "user" and kinds and all(k == "tool_result" for k in kinds):
        return f"`messages[{i}]` · **user** · " + t("{n} tool_result(s), written back by the loop", n=len(kinds))
    return f"`messages[{i}]` · **{plain(role)}**"


def draw_message(i: int, message: object, new: bool) -> None:
    role = message.get("role") if isinstance(message, dict) else None
    with st.chat_message(role if role in ("user", "assistant") else "user"):
        if not isinstance(message, dict):
            draw_content(message)
            return
        draw_content(message.get("content"), head=_label(i, message) + ("  " + new_mark() if new else ""))


def draw_history(trace: Trace, cursor: int, key: str, height: int = HEIGHT) -> None:
    """The window of messages at `cursor`, newest last, then what is waiting to go in."""
    messages = trace.messages_at(cursor)
    total = len(messages)
    first_new, n_new = trace.new_blocks_at(cursor) if 0 <= cursor < len(trace) else (0, 0)
    offset_key = f"{key}-history-offset"
    start, end = window(total, WINDOW, _offset(offset_key, cursor), snap=SNAP)

    st.markdown(f"#### messages · {total}")
    st.caption(t("The history exactly as the model will see it on its next call."))
    if total > WINDOW:
        a, b, c = st.columns([1.5, 1.3, 3], vertical_alignment="center")
        a.button(t("Show earlier"), key=f"{key}-earlier", disabled=start == 0, on_click=_page,
                 args=(offset_key, cursor, 1), width="stretch")
        b.button(t("Show later"), key=f"{key}-later", disabled=end == total, on_click=_page,
                 args=(offset_key, cursor, -1), width="stretch")
        c.caption(t("Showing messages[{start}] to messages[{end}] of {total}; {earlier} earlier not drawn.",
                    start=start, end=end - 1, total=f"{total:,}", earlier=f"{start:,}"))
    if total == 0:
        st.info(t("messages is empty. Press **Step**: stage 1 puts the user's request into it."))
        return
    with st.container(height=height, border=False):  # scrolls to the newest message
        for i in range(start, end):
            draw_message(i, messages[i], first_new <= i < first_new + n_new)
        if end == total:
            _draw_pending(trace, cursor)


def _draw_pending(trace: Trace, cursor: int) -> None:
    """What a stage holds outside messages: a response not yet appended, results not yet written back."""
    response = pending_response(trace, cursor)
    if response is not None:
        with st.container(border=True):
            st.markdown(t("**Received, not yet appended** · stop_reason `{stop}`", stop=in_code(response.get("stop_reason")))
                        + "  " + new_mark())
            st.caption(t("Stage 3 appends this response to messages. Leave it out and the next turn loses its context."))
            draw_content(response.get("content"))
    results = trace.results_at(cursor) if 0 <= cursor < len(trace) else []
    if results:
        with st.container(border=True):
            st.markdown(t("**{n} tool_result(s) collected, not yet written back**", n=len(results)))
            st.caption(t("Stage 5 writes them back as ONE user message; until then the model cannot see them."))
            if len(results) > 1:
                draw_content(results[:-1])
            draw_content(results[-1:], head=new_mark())  # the one this step collected
