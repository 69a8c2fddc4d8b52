"""Everything shown at one step, the same for a live run and a replay: a function of (trace, cursor)."""

from __future__ import annotations

import streamlit as st

from loop.diagram import dot_at
from loop.notes import note
from loop.runner import Run
from loop.trace import Trace
from loop.transcript import dumps

from .complete_state import draw_complete_state
from .controls import draw_controls
from .copylink import draw_copy_link
from .forks import branches, draw_fork, with_branches
from .history import HEIGHT as HISTORY_HEIGHT
from .history import draw_history
from .more import draw_exports, draw_growth, file_stem
from .i18n import lang, stage_title, t
from .permalink import keep_url
from .presenter import PRESENTER_HEIGHT, presenting
from .raw import draw_raw
from .runs import autosave
from .tables import draw_loop_state, draw_pairs


def draw_save(trace: Trace, key: str, name: str, run: Run | None = None) -> None:
    """Save the transcript; the JSON is made only when the button is pressed."""
    family = branches(run) if run is not None else []  # read now: the data is made when the button is pressed
    st.download_button(t("Save transcript"), data=lambda: dumps(with_branches(trace, family)),
                       file_name=f"loopscope-{file_stem(name)}.json",
                       mime="application/json", key=f"{key}-save", disabled=not len(trace),
                       icon=":material/download:", on_click="ignore", width="stretch",
                       help=t("Loopscope's transcript format: open it again on the Replay page."))


def draw_diagram(dot: str, key: str) -> None:
    """The loop diagram, drawn as a new chart whenever it changes.

    Streamlit's graphviz chart updates an existing drawing by tweening every
    shape (about 0.25 s of browser time a click); a new chart is drawn without
    that. Alternating one level of nesting gives the chart a new element id.
    """
    last, flip = st.session_state.get(f"{key}-diagram", ("", False))
    if dot != last:
        flip = not flip
        st.session_state[f"{key}-diagram"] = (dot, flip)
    slot = st.empty()
    (slot.container() if flip else slot).graphviz_chart(dot, width="stretch")


def draw_note(trace: Trace, cursor: int) -> None:
    """The note of the stage just executed, in the chosen language."""
    if not 0 <= cursor < len(trace):
        return
    step = trace.steps[cursor]
    with st.container(border=True, key="stage-note"):
        st.markdown(f"**{stage_title(step.stage)}**")
        st.markdown(note(step.stage, lang()))
        if step.stage == "run_tool" and isinstance(step.detail.get("parallel"), dict):  # the complete loop's
            st.markdown(note("parallel", lang()))
        if not trace.thread_of(cursor).is_main:  # where the learner is: inside a call frame
            st.markdown(note("subagent", lang()))
        elif step.stage == "run_tool" and step.detail.get("thread"):
            st.markdown(note("subagent_returns", lang()))


@st.fragment
def draw_step(trace: Trace, key: str, run: Run | None = None, name: str = "run") -> None:
    """The controls, then the loop diagram, the history, the pairs, the LoopState and the raw JSON.

    A fragment: a click reruns only this, not the page around it. `name` names the saved file.
    """
    def changed() -> None:  # before the page shows the step: the URL names it, and a live run is saved
        keep_url(trace, key, run)
        if run is not None:
            autosave(run)  # the new steps and the cursor: a reload or a restart loses nothing

    def header() -> None:
        draw_save(trace, key, name, run)
        draw_copy_link(key)

    draw_controls(trace, key, run, save=header, saved=changed)
    cursor = trace.cursor
    if presenting():  # the note, in large type, above the diagram
        draw_note(trace, cursor)
    left, right = st.columns([1, 1], gap="large")
    with left:
        if not presenting():
            st.markdown(t("#### The loop"))
        draw_diagram(dot_at(trace, cursor, translate=t), key)
        if not presenting():
            draw_note(trace, cursor)
    with right:
        draw_history(trace, cursor, key, height=PRESENTER_HEIGHT if presenting() else HISTORY_HEIGHT)
        draw_fork(trace, cursor, run, key)
    if presenting():  # one screen: the diagram and the newest messages
        return
    st.divider()
    draw_pairs(trace, cursor, key)
    draw_loop_state(trace, cursor, key)
    draw_complete_state(trace, cursor, key)
    draw_growth(trace, cursor, key)
    draw_exports(trace, cursor, key, name)
    draw_raw(trace, cursor, key)
