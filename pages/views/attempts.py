"""The SDK's retries, made visible: "attempt k of n" while a model call is retried.

The SDK retries by its own rules (429, 5xx and 529, timeouts, a dropped
connection; it waits as `retry-after` says, else backs off). A model call's
`Observer.on_attempt` is told of every attempt; this writes it into a
placeholder where the stage's spinner is, and leaves a line saying how many
attempts the call took.
"""

from __future__ import annotations

from contextlib import contextmanager

import streamlit as st

from loop.engine.runner import Run

from .i18n import t


@contextmanager
def attempts_shown(run: Run | None):
    """Yields (the attempts seen, an `on_attempt` for the model call's Observer, or None): while the body
    runs, each retry shows "attempt k of n".

    After the body, a call that needed more than one attempt leaves a caption saying so.
    """
    seen: list[tuple[int, int]] = []
    if run is None or getattr(run.model, "config", None) is None or run.model.config.scripted \
            or getattr(getattr(run, "profile", None), "retries", 0):
        yield seen, None  # the scripted model is never retried; the complete loop retries as steps, not the SDK
        return
    slot = st.empty()

    def on_attempt(k: int, n: int) -> None:
        seen.append((k, n))
        if k > 1:
            slot.warning(t("**Attempt {k} of {n}.** The previous attempt failed; the SDK retries it by its rules "
                           "(429, 5xx, 529, timeouts and dropped connections are retried, waiting as the server "
                           "asks with `retry-after`).", k=k, n=n), icon=":material/autorenew:")

    failed = False
    try:
        yield seen, on_attempt
    except BaseException:
        failed = True
        raise
    finally:
        retries = sum(1 for k, _ in seen if k > 1)  # Run to end makes many calls, each from attempt 1
        if retries:
            k, n = seen[-1]
            slot.caption(":material/autorenew: " + (
                t("{retries} attempt(s) retried by the SDK; the last call took {k} of at most {n} attempts and failed.",
                  retries=retries, k=k, n=n) if failed else
                t("{retries} attempt(s) retried by the SDK; the last call took {k} of at most {n} attempts and "
                  "succeeded.", retries=retries, k=k, n=n)))
        else:
            slot.empty()


def attempts_note(seen: list[tuple[int, int]]) -> str:
    """A sentence for an error message: how many attempts were made before giving up."""
    if not seen or seen[-1][0] <= 1:
        return ""
    k, n = seen[-1]
    return " " + t("The call was tried {k} times (the SDK retries at most {n} times).", k=k, n=n - 1)
