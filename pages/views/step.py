"""Everything shown at one step, the same for a live run and a replay: a function of (trace, cursor)."""

from __future__ import annotations

import re

import streamlit as st

from loop.diagram import dot_at
from loop.runner import Run
from loop.trace import Trace
from loop.transcript import dumps

from .controls import draw_controls
from .history import draw_history
from .raw import draw_raw
from .tables import draw_loop_state, draw_pairs


def draw_save(trace: Trace, key: str, name: str) -> None:
    """Save the transcript; the JSON is made only when the button is pressed."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "run"
    st.download_button("Save transcript", data=lambda: dumps(trace), file_name=f"loopscope-{slug}.json",
                       mime="application/json", key=f"{key}-save", disabled=not len(trace),
                       icon=":material/download:", on_click="ignore", width="stretch",
                       help="Loopscope's transcript format: open it again on the Replay page.")


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


@st.fragment
def draw_step(trace: Trace, key: str, run: Run | None = None, name: str = "run") -> None:
    """The controls, then the loop diagram, the history, the pairs, the LoopState and the raw JSON.

    A fragment: a click reruns only this, not the page around it. `name` names the saved file.
    """
    draw_controls(trace, key, run, save=lambda: draw_save(trace, key, name))
    cursor = trace.cursor
    left, right = st.columns([1, 1], gap="large")
    with left:
        st.markdown("#### The loop")
        draw_diagram(dot_at(trace, cursor), key)
    with right:
        draw_history(trace, cursor, key)
    st.divider()
    draw_pairs(trace, cursor, key)
    draw_loop_state(trace, cursor, key)
    draw_raw(trace, cursor, key)
