"""Minimal beside complete: one scenario in both loop profiles, call by call (loop/views/compare.py runs them).

As the Mistakes lab draws a broken loop beside the chapter's, this draws the
chapter's minimal loop beside the complete loop a production harness runs: at
the call where the minimal loop stops, the complete loop goes on, and says why.
A session runs each scenario once a language and keeps both runs.
"""

from __future__ import annotations

import json

import streamlit as st

from loop.views.compare import THEN, Call, ProfileRun, failure, side_by_side
from loop.files.export import fenced
from loop.views.narrate import clip, why_in
from loop.engine.profiles import TRANSITIONS

from .blocks import in_code, inline_code, plain
from .history import draw_message
from .i18n import lang, t

RUNS = "compare-runs"


def runs(scenario: str) -> tuple[ProfileRun, ProfileRun]:
    """(minimal, complete) on `scenario`, run once a session and language."""
    kept = st.session_state.setdefault(RUNS, {})
    now = lang()
    if (scenario, now) not in kept:
        with st.spinner(t("Running `{name}` in both loops…", name=scenario)):
            kept[(scenario, now)] = side_by_side(scenario, now)
    return kept[(scenario, now)]


def ending(run: ProfileRun) -> str:
    """How a run ended, in a line."""
    last = run.calls[-1] if run.calls else None
    if run.ended == "error" and last is not None:
        return t("**Stopped by an error** at call {n}: `{error}`.", n=int(last.number), error=in_code(failure(last)))
    return t("**Ended with `{ended}`** after {n} call(s).", ended=in_code(run.ended), n=len(run.calls))


def _outcome(call: Call) -> None:
    if call.error:
        st.error(t("**Call {n} failed: `{error}`**", n=int(call.number), error=in_code(failure(call)))
                 + "\n\n" + fenced(str(call.error.get("message", ""))), icon=":material/block:")
    else:
        response = call.response or {}
        uses = [b for b in response.get("content", []) if b.get("type") == "tool_use"]
        texts = [b.get("text", "") for b in response.get("content", []) if b.get("type") == "text"]
        # The model's names, inputs and words are text here, whatever they hold (code spans, escapes).
        line = ":green-badge[" + t("accepted") + f"] stop_reason {inline_code(response.get('stop_reason'))}"
        if uses:
            line += " · " + t("asks for") + " " + ", ".join(
                f"{inline_code(u.get('name'))} {inline_code(json.dumps(u.get('input'), ensure_ascii=False))}"
                for u in uses)
        st.markdown(line)
        if texts and not uses:
            text = " ".join(texts)
            st.caption(plain(clip(text, 300)))
        for output in call.tool_outputs:
            st.code(output[:400] or " ", language=None)
        if call.parallel:
            st.caption(t("{n} tools at once: wall time {wall} s beside a sum of {sum} s",
                         n=int(call.parallel["tools"]), wall=f"{call.parallel['wall_ms'] / 1000:.1f}",
                         sum=f"{call.parallel['sum_ms'] / 1000:.1f}"))
    values = {k: plain(v) for k, v in call.values.items()}  # they quote a server's error
    if "why" in values and call.why_step is not None:  # the trace's English, said in the page's language
        values["why"] = plain(why_in(call.why_step, lang()))
    then = t(THEN[call.then], **values)
    icon = ":material/stop_circle:" if call.then in ("end", "error", "gave_up") else ":material/redo:"
    st.markdown(f"{icon} " + t("Then:") + " " + then)


def _draw_raw(call: Call, side: str) -> None:
    """The request this call sent, as JSON, in a box that scrolls: what a block cut short in the card says to see."""
    expander = st.expander(t("Raw JSON · the request sent at call {n}", n=call.number), icon=":material/data_object:",
                           key=f"compare-{side}-{call.number}-raw", on_change="rerun")
    with expander:
        if not expander.open:  # drawn only when open: a request holds the whole history
            return
        if call.request is None:
            st.caption(t("This call's request body was not recorded; the messages it sent are above."))
            return
        st.markdown(t("**Request** (body sent to `/v1/messages`; the key travels in a header and is not here)"))
        st.code(json.dumps(call.request, indent=2, ensure_ascii=False, default=str), language="json", height=400,
                wrap_lines=True)


def _draw_call(call: Call | None, side: str, stops_here: bool) -> None:
    if call is None:
        st.caption(t("No such call: this loop had already stopped."))
        return
    st.markdown(t("**Call {n}** · sent {m} message(s)", n=int(call.number), m=len(call.messages)))
    with st.expander(t("messages sent at call {n}", n=call.number), expanded=stops_here,
                     key=f"compare-{side}-{call.number}"):
        for i, message in enumerate(call.messages[-6:], start=max(0, len(call.messages) - 6)):
            draw_message(i, message, new=False)
        if len(call.messages) > 6:
            st.caption(t("The newest 6 of {n} messages.", n=len(call.messages)))
    _draw_raw(call, side)
    _outcome(call)


def draw_compare(scenario: str) -> None:
    """Both loops on `scenario`: how each ended, then their calls side by side."""
    minimal, complete = runs(scenario)
    reasons = sorted({c.then for c in complete.calls})
    shown = [r for r in ("retry", "recover", "compact") if r in reasons]
    words = {"retry": "retry", "recover": "max_tokens_recovery", "compact": "compact_resume"}
    if shown:
        # a list: each reason is a sentence of the page's language, with its own punctuation (no ASCII period)
        st.info(t("Where the minimal loop stops, the complete loop goes on:") + "\n"
                + "".join(f"\n- {t(TRANSITIONS[words[r]])}" for r in shown), icon=":material/alt_route:")
    elif minimal.calls and complete.calls and minimal.calls[0].parallel is None and complete.calls[0].parallel:
        st.info(t("Both loops make the same calls; the complete loop runs the tools at once: {a} s of tools in "
                  "{b} s.", a=f"{complete.calls[0].parallel['sum_ms'] / 1000:.1f}",
                  b=f"{complete.calls[0].parallel['wall_ms'] / 1000:.1f}"), icon=":material/alt_route:")
    a, b = st.columns(2)
    with a:
        st.markdown(t("#### The chapter's minimal loop"))
        st.markdown(ending(minimal))
    with b:
        st.markdown(t("#### The complete loop"))
        st.markdown(ending(complete))
        if complete.waited_s:
            st.caption(t("Its retry waits, {s} s in all, are recorded here, not waited.", s=f"{complete.waited_s:.1f}"))
    stop = len(minimal.calls)
    for n in range(max(len(minimal.calls), len(complete.calls))):
        left, right = st.columns(2, gap="medium", border=True)
        with left:
            _draw_call(minimal.calls[n] if n < len(minimal.calls) else None, "minimal", n == stop - 1)
        with right:
            _draw_call(complete.calls[n] if n < len(complete.calls) else None, "complete", n == stop - 1)
