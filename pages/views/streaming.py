"""A real model's answer as it streams in: Model.on_text writes into a placeholder while the step runs."""

from __future__ import annotations

import contextlib

import streamlit as st

from loop.runner import Run

from .i18n import t


@contextlib.contextmanager
def streamed(run: Run | None):
    """While a call_model stage runs with ModelConfig(stream=True), show its text as it arrives."""
    model = getattr(run, "model", None)
    if model is None or not getattr(model.config, "stream", False):
        yield
        return
    box = st.empty()
    text: list[str] = []

    def on_text(chunk: str) -> None:
        text.append(chunk)
        box.markdown(t("**Streaming from the model…**") + "\n\n" + "".join(text).replace("$", "\\$"))

    model.on_text = on_text
    try:
        yield
    finally:
        model.on_text = None
        box.empty()  # the answer is in the history now
