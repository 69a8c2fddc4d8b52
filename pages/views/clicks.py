"""A click's action, kept until the page's next run handles it, in the order clicked.

A click reaches the server as a callback, and the page's run that follows does what it asks. Two quick
clicks (Step, then ←, while the first run is still going) stop that run before it got to the first one:
both must still happen, in order, or the page would show a step the learner did not ask for.

A click can also reach the server with another fragment's run (a timer's, the teacher's count of followers):
Streamlit calls its callback, and runs only that other fragment. A run that ends with a click's action still
waiting then reruns the page, whose controls take it (script_run.py).
"""

import streamlit as st


_QUEUE = "-action"  # a session-state key ending so holds a controls' queue
_RERUN_ASKED = "clicks-page-rerun"  # the page was rerun for a waiting action


def ask(key: str, action: str) -> None:
    """Queue `action` ("back", "step", "to_end", ...) for the controls of `key`."""
    st.session_state.setdefault(f"{key}{_QUEUE}", []).append(action)


def taken(key: str) -> list[str]:
    """The actions queued for `key`, oldest first; the queue is emptied."""
    st.session_state.pop(_RERUN_ASKED, None)
    return list(st.session_state.pop(f"{key}{_QUEUE}", None) or [])


def waiting() -> bool:
    """Whether a click's action waits for controls the run did not draw."""
    return any(str(key).endswith(_QUEUE) and value for key, value in st.session_state.items())


def run_the_page_for_it() -> None:
    """A run ended with a click's action waiting (another fragment's run took its callback): the page runs once
    more for it, whose controls take it; if they are not on the page, it is dropped at the next such end."""
    if st.session_state.pop(_RERUN_ASKED, False):  # the page ran for it already: its controls are gone
        for key in [key for key in st.session_state if str(key).endswith(_QUEUE)]:
            del st.session_state[key]
        return
    st.session_state[_RERUN_ASKED] = True
    st.rerun()
