"""Widget values that survive a visit to another page.

Streamlit drops the state of a widget that a run did not draw, so a setting
drawn only on Step through (the sidebar, Presenter mode) would go back to its
default after the learner looks at another page.
"""

from __future__ import annotations

import streamlit as st

KEPT = "kept-"  # + a widget's key: its value, which outlives the widget when another page is shown


def kept(key: str, default=None) -> str:
    """`key`, for a widget drawn next: its value survives a visit to another page.

    The widget's state is there when the last run drew it: remember it. It is gone after a page
    without the widget: put back what was remembered. So the widget takes its value from
    session_state and is never given a default of its own (Streamlit warns when it has both).
    """
    s = st.session_state
    if key in s:
        s[KEPT + key] = s[key]
    else:
        s[key] = s.get(KEPT + key, default)
    return key
