"""Loopscope: watch an agent's loop, one stage at a time.

`streamlit run app.py`. The engine is in loop/ (no Streamlit there); each page
in pages/ draws (trace, cursor) with the small views in pages/views/.
"""

import sys

import streamlit as st

from pages.views.nav import run_app
from pages.views.browser import browser_session
from pages.views.internals import deliver_in_bursts, no_delay
from pages.views.following import accept_language
from pages.views.script_run import page

# Every browser's script runs in a thread of this one process. Python hands the GIL between running threads
# every 5 ms by default; with a class stepping at once, that switching cost more than the work (bench/load.py:
# 20 students, 30 → 27 ms of CPU a click, p95 about 1.0 → 0.9 s). A thread still lets go at once when it waits.
sys.setswitchinterval(0.05)
no_delay()  # each click's answer sent at once, not held for the browser's delayed acknowledgement (40 ms)
deliver_in_bursts()  # the messages a run sends meanwhile handed to the server's loop in one wake

# The tab's icon is ours, served by this server: a :material/…: icon or an emoji would be fetched from a CDN
ICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="#ff4b4b" d="M12 4V1L8 5l4 4V6c3.31 '
        '0 6 2.69 6 6 0 1.01-.25 1.97-.7 2.8l1.46 1.46A7.93 7.93 0 0 0 20 12c0-4.42-3.58-8-8-8Zm0 14c-3.31 0-6-2.69-6-6 '
        '0-1.01.25-1.97.7-2.8L5.24 7.74A7.93 7.93 0 0 0 4 12c0 4.42 3.58 8 8 8v3l4-4-4-4v3Z"/></svg>')
st.set_page_config(page_title="Loopscope", page_icon=ICON, layout="wide")
with page():  # the page's whole run (a fragment's run alone is another: pages/views/script_run.py)
    browser_session()  # this browser's id, from its cookie or issued now (never in the URL): its saved runs are its own
    accept_language()  # a student's first page at ?class= in the browser's language, unless the address names one
    run_app()
