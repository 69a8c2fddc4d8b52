"""The exact request body sent and the response received, drawn only while its expander is open.

Neither holds the API key: the SDK sends it as a header, and the trace keeps bodies only.
"""

from __future__ import annotations

import json

import streamlit as st

from loop.views.step import StepView

from .blocks import in_code, plain
from .i18n import stage_title, t

SHOWN_LIMIT = 150_000  # characters of a request body drawn on the page; the download has it all
KEEP_MESSAGES = 6


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _elided(request: dict) -> dict:
    """The body with its middle messages replaced by a note, for the page only."""
    messages = request.get("messages") or []
    if len(messages) <= 2 * KEEP_MESSAGES:
        return request
    cut = len(messages) - 2 * KEEP_MESSAGES
    note = t("… {n} messages not drawn here (download the exact body) …", n=f"{cut:,}")
    shown = messages[:KEEP_MESSAGES] + [note] \
        + messages[-KEEP_MESSAGES:]
    return dict(request, messages=shown)


def origin_words(origin: object) -> str:
    """Where an imported step's record is in the file it was read from (its detail's `origin`), in a sentence;
    "" for a step of a run made here, or an origin of a shape this version does not know."""
    if not isinstance(origin, dict):
        return ""
    line, file, at = origin.get("line"), origin.get("file"), origin.get("at")
    if isinstance(line, int) and isinstance(file, str):
        return t("This step comes from `{file}`, line {line}, of the imported log.", file=in_code(file), line=int(line))
    if isinstance(line, int):
        return t("This step comes from line {line} of the imported log.", line=int(line))
    if isinstance(at, str) and at:
        return t("This step comes from `{at}` in the imported file.", at=in_code(at))
    return ""


def draw_raw(v: StepView, key: str) -> None:
    expander = st.expander(t("Raw JSON · the request sent and the response received"), key=f"{key}-raw",
                           on_change="rerun", icon=":material/data_object:")
    with expander:
        if not expander.open:  # drawn only when open: a request can hold the whole history
            return
        if v.stage is None:
            st.caption(t("Nothing has been sent yet."))
            return
        came_from = origin_words(v.origin)
        if came_from:
            st.caption(came_from)
        if v.stage in ("retry", "refused"):  # a call that failed: what it sent, and the API's error
            left, right = st.columns(2)
            left.markdown(t("**Request** (body sent to `/v1/messages`; the key travels in a header and is not here)"))
            left.code(_json(_elided(v.failed_request or {})), language="json", height=500, wrap_lines=True)
            right.markdown(t("**The error the call got**"))
            right.code(_json(v.recorded), language="json", height=500, wrap_lines=True)
            return
        if v.stage not in ("call_model", "summarize"):
            st.caption(t("This step ({stage}) did its work locally; what it recorded is below.",
                         stage=plain(stage_title(v.stage))))
            st.code(_json({k: value for k, value in v.recorded.items() if k != "response"}), language="json")
        call = v.last_call
        if call is None:
            st.caption(t("No model call yet at this step."))
            return
        if call != v.index:
            st.markdown(t("**The last model call, step {n}:**", n=call + 1))
        request, response = v.call_request, v.call_response
        text = _json(request)
        left, right = st.columns(2)
        with left:
            st.markdown(t("**Request** (body sent to `/v1/messages`; the key travels in a header and is not here)"))
            if len(text) > SHOWN_LIMIT:
                st.caption(t("The body is {n} characters; the middle messages are left out below.", n=f"{len(text):,}"))
                st.download_button(t("Download the exact request body"), data=lambda: _json(request),
                                   file_name=f"request-step-{call + 1}.json", mime="application/json",
                                   key=f"{key}-raw-download", on_click="ignore")
                text = _json(_elided(request))
            st.code(text, language="json", height=500, wrap_lines=True)
        with right:
            st.markdown(t("**Response**"))
            st.code(_json(response), language="json", height=500, wrap_lines=True)
