"""Presenter mode: large type, no sidebar, the diagram and the newest messages on one screen, and autoplay.

Autoplay steps once every `pause` seconds with a timed fragment; Pause (or any
button of the controls) stops it. A step that waits at the approval gate, or
the end of the loop, stops it too.
"""

from __future__ import annotations

import time

import streamlit as st

from loop.runner import Run
from loop.trace import Trace

from .gate import waiting
from .i18n import lang, t
from .keep import kept

PRESENTER_HEIGHT = 430  # pixels of history: with the rows above, one 1600×900 screen
PRESENT = "present"
PLAYING = "present-playing"
PAUSE = "present-pause"
LAST = "present-last-step"

CSS = """
<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header[data-testid="stHeader"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding: 1.2rem 2.2rem 1rem 2.2rem !important; max-width: 100% !important; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.35rem; line-height: 1.45; }
[data-testid="stMain"] h3 { font-size: 2.1rem !important; }
[data-testid="stMain"] h4 { font-size: 1.6rem !important; }
[data-testid="stMain"] [data-testid="stCode"] code { font-size: 1.15rem !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1.05rem !important; }
[data-testid="stMain"] button p { font-size: 1.2rem !important; }
[data-testid="stMain"] [data-testid="stGraphVizChart"] svg { max-height: 50vh; }
[data-testid="stMain"] [data-testid="stHeadingWithActionElements"] h4 { padding-top: 0.2rem; }
</style>
"""


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT))


def keep_presenting() -> None:
    """Presenter mode stays on after a look at another page (call before `presenting`, on Step through)."""
    kept(PRESENT, False)


def _stop() -> None:
    st.session_state[PLAYING] = False


def _play() -> None:
    st.session_state[PLAYING] = True
    st.session_state[LAST] = time.monotonic()


def draw_switch() -> None:
    """The Presenter mode toggle (in the page, since presenter mode hides the sidebar)."""
    st.toggle(t("Presenter mode"), key=PRESENT, on_change=_stop,
              help=t("Large type, no sidebar, the diagram and the newest messages on one screen; autoplay."))


def apply() -> None:
    """The presenter's CSS, when presenter mode is on."""
    if presenting():
        st.markdown(CSS, unsafe_allow_html=True)


def stopped_by_click(action: str | None) -> None:
    """Any click of the controls stops autoplay."""
    if action:
        _stop()


def _tick(trace: Trace, run: Run | None) -> None:
    if not st.session_state.get(PLAYING):
        return
    pause = float(st.session_state.get(PAUSE, 2.0))
    if time.monotonic() - st.session_state.get(LAST, 0.0) < pause * 0.9:
        return  # this run was not the timer's (a full rerun runs the fragment too)
    ended = trace.at_end and (run is None or run.done)
    if ended or (run is not None and waiting(run)):
        _stop()
        st.rerun()
    st.session_state[LAST] = time.monotonic()
    try:
        run.step() if run is not None else trace.forward()
    except Exception:  # an API error: stop and let Step show it
        _stop()
    st.rerun()  # the whole page draws the new step


def draw_autoplay(trace: Trace, run: Run | None) -> None:
    """Play / Pause and the pause between stages; while playing, a timed fragment steps."""
    playing = bool(st.session_state.get(PLAYING))
    now = lang()  # for format_func, which may be called outside this run
    a, b = st.columns([1, 3], vertical_alignment="center")
    if playing:
        a.button(t("Pause"), key="present-stop", icon=":material/pause:", on_click=_stop, width="stretch")
    else:
        a.button(t("Play"), key="present-play", icon=":material/play_arrow:", type="primary", on_click=_play,
                 width="stretch", disabled=trace.at_end and (run is None or run.done))
    b.select_slider(t("Pause between stages (s)"), [1.0, 1.5, 2.0, 3.0, 5.0, 8.0], value=2.0, key=PAUSE,
                    label_visibility="collapsed", format_func=lambda s: t("{s} s between stages", now, s=s))
    if playing:
        st.fragment(_tick, run_every=float(st.session_state.get(PAUSE, 2.0)))(trace, run)
