"""Presenter mode: large type, no sidebar, the diagram and the newest messages on one screen, and autoplay.

Autoplay steps once every `pause` seconds with a timed fragment; Pause (or any
button of the controls) stops it. A step that waits at the approval gate, or
the end of the loop, stops it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from loop.engine.runner import Run
from loop.engine.trace import Trace

from .gate import waiting
from .i18n import choice, lang, t
from .keep import kept
from .script_run import fragment

PRESENTER_HEIGHT = 320  # pixels of history, until the page fits the panel to the screen (history.py)
PRESENT = "present"
LINKED = "present-linked"  # ?present=on was taken once: toggling it off afterwards sticks
PLAYING = "present-playing"
PAUSE = "present-pause"
LAST = "present-last-step"

CSS = """
<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
header[data-testid="stHeader"] { display: none !important; }
.stApp [data-testid="stMainBlockContainer"] { padding: 0.7rem 1.6rem 0.4rem 1.6rem !important; max-width: 100% !important; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.15rem; line-height: 1.4; }
/* the bottom padding makes up for the -1rem margin Streamlit gives a Markdown element: with less, the step's
   heading runs into the row of buttons under it */
[data-testid="stMain"] h3 { font-size: 1.7rem !important; padding: 0.1rem 0 1rem !important; }
[data-testid="stMain"] h4 { font-size: 1.3rem !important; padding: 0.1rem 0 !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1rem !important; }
[data-testid="stMain"] button p { font-size: 1.1rem !important; }
.ls-note { padding: 0.4rem 0.8rem 0.05rem; margin: 0 0 0.2rem; }
/* the note's size is the floor for every text of the history beside it (see .ls-panel below): a little under the
   page's body text, so that the history keeps room for a whole message on a 720-pixel screen */
.ls-note p, .ls-note li { font-size: 1.05rem; line-height: 1.4; margin-bottom: 0.3rem; }
.ls-h4 { font-size: 1.3rem; padding: 0.1rem 0; }
.ls-next { margin-top: 0.6rem; }
.ls-next p { font-size: 1.1rem; line-height: 1.4; margin: 0; }
/* the history's heading and what it shows, on one line: the room goes to the messages */
.ls-panel-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 0.8rem; }
.ls-panel-head .ls-caption { margin: 0; font-size: 1.05rem; }
/* The history is the lesson: none of its text is smaller than the note. The page's rules for it (blocks.py) size
   heads, ids, tool output and callouts in rem, a little under the body text, which a projector makes the smallest
   text on the screen; here each one takes the panel's size instead (a compaction's heading keeps its own). */
.ls-present .ls-panel { font-size: 1.05rem; }
.ls-present .ls-panel *:not(.ls-h4) { font-size: inherit; }
.ls-state-row { font-size: 1.2rem; }
.ls-state-row code { font-size: 1.05rem; }
/* Predict, then step: the question large, the class's count-down under it (drawn by the browser alone) */
.ls-question-big p { font-size: 1.6rem !important; line-height: 1.35; }
.ls-question-big .ls-question-head { font-size: 1.1rem !important; opacity: 0.7; }
.st-key-live-choices button p, .st-key-replay-choices button p { font-size: 1.35rem !important; }
.ls-verdict p { font-size: 1.3rem !important; }
.ls-countdown { height: 0.6rem; border-radius: 0.3rem; background: rgba(128, 128, 128, 0.2); overflow: hidden; }
.ls-countdown > div { height: 100%; background: #ff4b4b; transform-origin: left;
  animation: ls-countdown var(--ls-seconds, 20s) linear forwards; }
@keyframes ls-countdown { from { transform: scaleX(1); } to { transform: scaleX(0); } }
/* a long task wraps in its own place: the controls stay on its row, and the history keeps the room */
.st-key-present-top > [data-testid="stElementContainer"]:first-child { flex: 1 1 0 !important; min-width: 0 !important; }
/* the task as large as the note, not more: a long one on fewer lines (the history's room) */
.st-key-present-top [data-testid="stMarkdownContainer"] p { font-size: 1.05rem !important; line-height: 1.3 !important; }
/* a compaction's heading lines close together: its before and after cards need the room */
.ls-present .ls-panel-compact .ls-caption, .ls-present .ls-compact p { margin: 0 0 0.15rem; }
</style>
"""


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT))


def keep_presenting() -> None:
    """Presenter mode stays on after a look at another page (call before `presenting`, on Step through and Your
    loop). A link's `?present=on` turns it on once: a teacher's bookmark opens on the projector's view."""
    s = st.session_state
    if st.query_params.get("present") == "on" and not s.get(LINKED):
        s[LINKED] = True
        s[PRESENT] = True
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


def stopped_by_click(clicked: bool) -> None:
    """Any click of the controls stops autoplay."""
    if clicked:
        _stop()


def _tick(trace: Trace, run: Run | None, advance: Callable[[], bool]) -> None:
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
        if advance():  # e.g. Predict, then step: the class answers before the step shows
            _stop()
    except Exception:  # an API error: stop and let Step show it
        _stop()
    st.rerun()  # the whole page draws the new step


def draw_autoplay(trace: Trace, run: Run | None, advance: Callable[[], bool]) -> None:
    """Play / Pause and the pause between stages; while playing, a timed fragment calls `advance()`, which
    steps and says whether autoplay must stop there."""
    playing = bool(st.session_state.get(PLAYING))
    now = lang()  # for format_func, which may be called outside this run
    if playing:
        st.button(t("Pause"), key="present-stop", icon=":material/pause:", on_click=_stop)
    else:
        st.button(t("Play"), key="present-play", icon=":material/play_arrow:", type="primary", on_click=_play,
                  disabled=trace.at_end and (run is None or run.done))
    # A select box, not a slider: a slider's value sits on its track, where a projector makes it unreadable.
    st.selectbox(t("Pause between stages (s)"), [1.0, 1.5, 2.0, 3.0, 5.0, 8.0], index=2, key=choice(PAUSE),
                 label_visibility="collapsed", format_func=lambda s: t("{s} s between stages", now, s=s),
                 width=200)
    if playing:
        fragment(_tick, run_every=float(st.session_state.get(PAUSE, 2.0)))(trace, run, advance)
