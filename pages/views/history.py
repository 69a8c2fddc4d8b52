"""The message history as the model will see it on its next call, a bounded window of it.

Only the newest WINDOW to WINDOW + SNAP - 1 messages are drawn, so a click at
5,000 messages costs what it does at ten; "Show earlier" pages back. What a
stage holds outside `messages` (a response not yet appended, tool_results not
yet written back) is drawn after the history, apart from it: that gap is the
lesson.

A run with sub-agents shows the history of the thread the cursor is in, under
a breadcrumb (main › task toolu_…) whose parts go up to the parent; a step
that leads into a sub-agent offers to step in. At a compact step the history
before and after the rewrite are drawn side by side.
"""

from __future__ import annotations

import streamlit as st

from loop.trace import Trace
from loop.views import breadcrumb, compaction_at, pending_response, sub_agent_at, thread_name, window

from .blocks import draw_content, in_code, plain
from .i18n import lang, t

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


def _go(trace: Trace, index: int) -> None:
    trace.goto(index)


def draw_threads(trace: Trace, cursor: int, key: str) -> None:
    """Where the cursor is among the threads: main › task toolu_… (each part goes up), and the way in."""
    path = breadcrumb(trace, cursor)
    into = sub_agent_at(trace, cursor)
    if len(path) == 1 and into is None and len(trace.threads) <= 2:
        return
    ups = path[:-1]
    cols = st.columns([1.1] * len(ups) + [3.4], vertical_alignment="center")
    for n, (thread, to) in enumerate(ups):
        cols[n].button(f"{thread_name(thread)} ›", key=f"{key}-up" if n == len(ups) - 1 else f"{key}-up-{n}",
                       icon=":material/arrow_upward:", disabled=to is None, on_click=_go, args=(trace, to),
                       width="stretch", help=t("Go up to the parent loop, at the step that took the "
                                               "sub-agent's answer (or waits for it)."))
    here = path[-1][0]
    with cols[-1]:
        if into is not None:
            first = trace.opened_at(into.id)
            count = len(trace.steps_of(into.id))
            st.button(t("Into the sub-agent's loop ({n} steps)", n=count), key=f"{key}-into",
                      icon=":material/subdirectory_arrow_right:", disabled=first is None, on_click=_go,
                      args=(trace, first), help=into.label or None)
        elif not here.is_main:
            st.markdown(f"**`{thread_name(here)}`**" + (f" · {here.label}" if here.label else ""))
    if len(trace.threads) > 2:  # many sub-agents (an imported session): go to any one's first step
        ids = list(trace.threads)
        here = trace.thread_of(cursor).id
        st.session_state[f"{key}-thread"] = here  # follows the cursor, as the slider does
        st.selectbox(t("Go to a thread"), ids, key=f"{key}-thread", on_change=_to_thread, args=(trace, key),
                     format_func=lambda tid: _thread_option(trace, tid), label_visibility="collapsed")


def _thread_option(trace: Trace, tid: str) -> str:
    thread = trace.threads[tid]
    label = f": {thread.label}" if thread.label else ""
    return f"{thread_name(thread)}{label} ({len(trace.steps_of(tid))})"


def _to_thread(trace: Trace, key: str) -> None:
    first = trace.opened_at(st.session_state[f"{key}-thread"])
    if first is not None:
        trace.goto(first)


def draw_compaction(trace: Trace, cursor: int, key: str) -> bool:
    """At a compact step: the history before and after, side by side. False on any other step."""
    shown = compaction_at(trace, cursor)
    if shown is None:
        return False
    before, after = shown["before"], shown["after"]
    st.markdown(t("#### compact ({kind}) · messages {a} → {b}", kind=shown["kind"], a=before["messages"],
                  b=after["messages"]))
    if lang() == "en":  # the reason as the run recorded it, in English; the stage note says it in every language
        st.caption(shown["why"])
    left, right = st.columns(2, gap="small")
    with left:
        st.markdown(t("**Before** · {n} messages · about {tokens} tokens", n=before["messages"],
                      tokens=f"{before['tokens'] or 0:,}"))
    with right:
        st.markdown(t("**After** · {n} messages · about {tokens} tokens", n=after["messages"],
                      tokens=f"{after['tokens'] or 0:,}"))
    if "pairs" in shown:  # messages replaced in place: each one as it was and as it is
        st.caption(t("{n} message(s) replaced in place; every other message is unchanged.", n=len(shown["pairs"])))
        with st.container(height=HEIGHT - 120, border=False):
            for slot, old, new in shown["pairs"][-WINDOW:]:
                a, b = st.columns(2, gap="small")
                with a:
                    draw_message(slot, old, False)
                with b:
                    draw_message(slot, new, True)
        return True
    old, new = shown["history_before"], shown["history_after"]
    with st.container(height=HEIGHT - 120, border=False):
        a, b = st.columns(2, gap="small")
        with a:
            if len(old) > WINDOW:
                st.caption(t("The newest {n} of {total}; the rest stay in the trace.", n=WINDOW, total=f"{len(old):,}"))
            for i in range(max(0, len(old) - WINDOW), len(old)):
                draw_message(i, old[i], False)
        with b:
            st.caption(t("The whole history now: what the next call sends."))
            for i, message in enumerate(new[:WINDOW]):
                draw_message(i, message, True)
    return True


def draw_history(trace: Trace, cursor: int, key: str, height: int = HEIGHT) -> None:
    """The window of messages at `cursor`, newest last, then what is waiting to go in."""
    if trace.has_threads:
        draw_threads(trace, cursor, key)
    if draw_compaction(trace, cursor, key):
        return
    messages = trace.messages_at(cursor)
    total = len(messages)
    first_new, n_new = trace.new_blocks_at(cursor) if 0 <= cursor < len(trace) else (0, 0)
    offset_key = f"{key}-history-offset"
    start, end = window(total, WINDOW, _offset(offset_key, cursor), snap=SNAP)

    thread = trace.thread_of(cursor)
    where = "" if thread.is_main else f" · {thread_name(thread)}"
    st.markdown(f"#### messages · {total}{where}")
    st.caption(t("The history exactly as the model will see it on its next call.") if thread.is_main else
               t("The sub-agent's own history, exactly as its model will see it on its next call; the parent's "
                 "history is not in it."))
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
    if response is not None and trace.steps[cursor].stage == "summarize":
        with st.container(border=True):
            st.markdown(t("**The summary the model wrote**, not yet in messages") + "  " + new_mark())
            st.caption(t("The next step, compact, replaces the whole history above by this summary."))
            draw_content(response.get("content"))
    elif response is not None:
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
