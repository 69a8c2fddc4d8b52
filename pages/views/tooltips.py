"""A toggle's `?` (its help) shows the help and nothing else.

Streamlit draws a toggle's help icon inside the toggle's label, and the label takes any press in it as a press of
the toggle: a learner who clicks `?` beside "Predict, then step" to read what it does turned it on or off. The
page's one listener keeps a press on such an icon from reaching the label; hovering shows the help as before.
"""

from __future__ import annotations

import streamlit as st

SCRIPT = """<script>(() => {
  if (window.lsHelpApart) return;
  window.lsHelpApart = true;
  const help = '[data-testid="stCheckbox"] label [data-testid="stTooltipIcon"]';
  for (const type of ["pointerdown", "pointerup", "mousedown", "mouseup", "click", "touchstart", "touchend"]) {
    document.addEventListener(type, (event) => {
      if (event.target.closest && event.target.closest(help)) event.stopPropagation();
    }, true);
  }
})();</script>"""


def keep_help_apart() -> None:
    """Install the listener (once a page: the script returns at once after the first run)."""
    with st.sidebar:  # an element of no height
        st.html(SCRIPT, unsafe_allow_javascript=True)
