"""A real model's answer as it streams in: the call's `Observer.on_text` writes into a placeholder while the step runs."""

from __future__ import annotations

import contextlib

import streamlit as st

from loop.runner import Run

from .i18n import t


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

    def on_text(chunk: str) -> None:
        text.append(chunk)
        box.markdown(t("**Streaming from the model…**") + "\n\n" + "".join(text).replace("$", "\\$"))

    try:
        yield on_text
    finally:
        box.empty()  # the answer is in the history now
