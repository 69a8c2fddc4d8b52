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


def draw_step(trace: Trace, key: str, run: Run | None = None) -> None:
    """The controls, then the loop diagram, the history, the pairs, the LoopState and the raw JSON."""
    draw_controls(trace, key, run)
    cursor = trace.cursor
    left, right = st.columns([1, 1], gap="large")
    with left:
        st.markdown("#### The loop")
        st.graphviz_chart(dot_at(trace, cursor), width="stretch")
    with right:
        draw_history(trace, cursor, key)
    st.divider()
    draw_pairs(trace, cursor, key)
    draw_loop_state(trace, cursor, key)
    draw_raw(trace, cursor, key)
