"""A click's action, kept until the page's next run handles it, in the order clicked.

A click reaches the server as a callback, and the page's run that follows does what it asks. Two quick
clicks (Step, then ←, while the first run is still going) stop that run before it got to the first one:
both must still happen, in order, or the page would show a step the learner did not ask for.
"""

import streamlit as st


def ask(key: str, action: str) -> None:
    """Queue `action` ("back", "step", "to_end", ...) for the controls of `key`."""
    st.session_state.setdefault(f"{key}-action", []).append(action)


def taken(key: str) -> list[str]:
    """The actions queued for `key`, oldest first; the queue is emptied."""
    return list(st.session_state.pop(f"{key}-action", None) or [])
