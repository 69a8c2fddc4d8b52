"""A real model's answer as it streams in: the call's `Observer.on_text` writes into a placeholder while the step runs."""

from __future__ import annotations

import contextlib
import time

import streamlit as st

from loop.engine.runner import Run
from loop.files.export import no_fetch

from .i18n import t

SHOWN = 4000  # characters of a streaming answer on the page: its end (the whole answer is in the history after)
DRAWS_PER_SECOND = 20


@contextlib.contextmanager
def streamed(run: Run | None):
    """Yields an `on_text` for the model call's Observer when the run streams (ModelConfig(stream=True)), else None.

    The text shows as it arrives, and goes when the step is done: it is in the history then.
    """
    model = getattr(run, "model", None)
    if model is None or not getattr(model.config, "stream", False):
        yield None
        return
    box = st.empty()
    text: list[str] = []
    tail = {"text": "", "cut": False, "drawn": 0.0}

    def on_text(chunk: str) -> None:
        # Only the answer's end is drawn, and at most DRAWS_PER_SECOND times: a server that streams megabytes in
        # tiny deltas would otherwise send the page the whole text again at every delta (loop/engine/capped.py bounds it).
        joined = tail["text"] + chunk
        tail["cut"] = tail["cut"] or len(joined) > SHOWN
        tail["text"] = joined[-SHOWN:]
        now = time.monotonic()
        if now - tail["drawn"] < 1 / DRAWS_PER_SECOND:
            return
        tail["drawn"] = now
        text[:] = [("…" if tail["cut"] else "") + tail["text"]]
        box.markdown(t("**Streaming from the model…**") + "\n\n" + no_fetch("".join(text).replace("$", "\\$")))

    try:
        yield on_text
    finally:
        box.empty()  # the answer is in the history now
