"""The app's pages, in one list, and a guard for a page opened before app.py ever ran.

Streamlit treats a folder named pages/ beside app.py as an old-style multipage
app until st.navigation is first called. So on a fresh server the first visit to
/replay would run pages/replay.py alone, without app.py's layout and menu. The
guard notices (app.py did not mark the run), declares the real pages and reruns.
"""

from __future__ import annotations

import threading

import streamlit as st

from .i18n import document_language, draw_language_picker, follow_url, t, upright_cjk
from . import script_run
from .tooltips import keep_help_apart

_run = threading.local()  # a script run happens in one thread: app.py marks it there


def app_pages() -> list:
    return [
        st.Page("pages/step_through.py", title=t("Step through"), icon=":material/play_arrow:", default=True),
        st.Page("pages/replay.py", title=t("Replay"), icon=":material/history:", url_path="replay"),
        st.Page("pages/mistakes.py", title=t("Mistakes lab"), icon=":material/bug_report:", url_path="mistakes"),
        st.Page("pages/compare.py", title=t("Minimal beside complete"), icon=":material/compare:", url_path="compare"),
        st.Page("pages/yours.py", title=t("Your loop"), icon=":material/edit_note:", url_path="yours"),
        st.Page("pages/about.py", title=t("About the loop"), icon=":material/school:", url_path="about"),
    ]


def run_app() -> None:
    """What app.py does: declare the pages and run the chosen one."""
    follow_url()
    page = st.navigation(app_pages())
    draw_language_picker()
    document_language()
    upright_cjk()
    keep_help_apart()
    _run.via_app = True
    try:
        page.run()
    finally:
        _run.via_app = False


def through_app() -> None:
    """Call first in every page: when app.py did not run this page, rerun through it."""
    if not getattr(_run, "via_app", False):
        with script_run.page():  # (a page's run too, though not app.py's)
            st.navigation(app_pages(), position="hidden")  # ends Streamlit's old pages/-folder mode
        st.rerun()
