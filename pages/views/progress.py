"""The complete loop's progress, live: the attempt a retry is at, the wait left before the next call, the tools still
running.

After a `retry` step the loop waits before it calls again (1 s × 2^attempt plus
jitter, or what `retry-after` asked). The page shows the seconds really left,
counting down, and **Skip the wait** calls now. Clicking **Step** during the
wait asks for the call when the wait ends; nothing runs without a click. The
countdown is a fragment that reruns itself a few times a second while there is
something to show, then hands the page back (one full rerun).
"""

from __future__ import annotations

import streamlit as st

from loop.engine.details import RetryDetail
from loop.views.narrate_complete import error_label, number
from loop.engine.runner import Run

from .blocks import in_code, plain
from .clicks import ask
from .i18n import t
from .script_run import fragment

TICK = 0.25  # seconds between two redraws of the countdown


def armed_key(key: str) -> str:
    return f"{key}-armed"


def _handed_key(key: str) -> str:
    return f"{key}-handed"


def arm(key: str, action: str) -> None:
    """Ask for `action` ("step" or "to_end") once the wait is over."""
    st.session_state[armed_key(key)] = action


def active(run: Run | None) -> bool:
    """Is there a wait or a running tool to show? (only at the end of a live run's trace)"""
    if run is None or not run.trace.at_end:
        return False
    status = run.status()
    return status.wait_left > 0 or bool(status.running)


def _skip(run: Run, key: str, wait: int) -> None:
    """Skip the wait that followed step `wait` (the trace's length when the box was drawn).

    A click reaches the server with the page's next run, which may come after the call it asks for was asked for
    (Step was clicked too) or has gone: then it asks for nothing, or one click would make two calls."""
    if len(run.trace) != wait or st.session_state.get(_handed_key(key)) == (id(run), wait):
        return
    run.skip_wait()
    st.session_state.setdefault(armed_key(key), "step")  # skipping the wait is asking for the call now


def _hand_over(run: Run, key: str) -> bool:
    """The wait is over: the call asked for goes now, once for this wait. Was one asked for?"""
    action = st.session_state.pop(armed_key(key), None)
    wait = (id(run), len(run.trace))  # this run's wait after its last step
    if not action or run.done or st.session_state.get(_handed_key(key)) == wait:
        return False
    st.session_state[_handed_key(key)] = wait
    ask(key, action)
    return True


def draw_progress(run: Run | None, key: str) -> None:
    """The countdown and the running tools, while there are any.

    A call asked for whose wait is over by the time the page runs (Skip the wait or Step clicked as it ended: the
    countdown that hands it over is not drawn any more) goes now; left asked for, it would go when a later wait ends,
    without a click.
    """
    if active(run):
        _live(run, key)
    elif run is not None and run.trace.at_end and armed_key(key) in st.session_state:
        if _hand_over(run, key):
            st.rerun()


@fragment(run_every=TICK)
def _live(run: Run, key: str) -> None:
    status = run.status()
    left, running = status.wait_left, status.running
    armed = st.session_state.get(armed_key(key))
    if left <= 0 and not running:  # over: the page takes over again (and Step's call goes, if it was asked for)
        _hand_over(run, key)
        st.rerun()
    if left > 0:
        retry = run.trace.steps[-1]
        d = retry.detail if retry.stage == "retry" else RetryDetail()  # a wait comes after a retry step
        with st.container(border=True, key=f"{key}-wait"):
            st.markdown(":material/hourglass_top: " + t(
                "**Attempt {k} of {n} failed** ({error}). The loop waits **{left} s** before attempt {next}.",
                k=plain(d.attempt if d.given("attempt") else "?"), n=plain(d.attempts if d.given("attempts") else "?"),
                error=plain(error_label(d.error)), left=f"{left:.1f}", next=f"{number(d.attempt) + 1:g}"))
            total = number(d.wait_s)
            st.progress(min(1.0, max(0.0, 1 - left / total)) if total else 1.0)
            a, b = st.columns([1, 3], vertical_alignment="center")
            # A key of its own for each wait: a click on the box of a wait that is over skips no later wait.
            a.button(t("Skip the wait"), key=f"{key}-skip-{len(run.trace)}", icon=":material/skip_next:",
                     on_click=_skip, args=(run, key, len(run.trace)),
                     help=t("Call the model now, without waiting the rest of the backoff."))
            b.caption(t("The call goes out when the wait ends: you clicked Step.") if armed else
                      t("Step calls the model again when the wait ends; Skip the wait calls it now."))
    if running:
        lines = [t("{name} `{id}`: {s} s so far", name=plain(name), id=in_code(tool_use_id), s=f"{seconds:.1f}")
                 for tool_use_id, name, seconds in running]
        st.info(t("**Tools still running, at once:**") + "\n\n" + "\n".join(f"- {line}" for line in lines),
                icon=":material/sync:")
