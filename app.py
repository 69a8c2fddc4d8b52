"""Loopscope: watch an agent's loop, one stage at a time.

`streamlit run app.py`. The engine is in loop/ (no Streamlit there); each page
in pages/ draws (trace, cursor) with the small views in pages/views/.
"""

import sys

import streamlit as st

from pages.views.nav import run_app
from pages.views.browser import browser_session

# Every browser's script runs in a thread of this one process. Python hands the GIL between running threads
# every 5 ms by default; with a class stepping at once, that switching cost more than the work (bench/load.py:
# 20 students, 30 → 27 ms of CPU a click, p95 about 1.0 → 0.9 s). A thread still lets go at once when it waits.
sys.setswitchinterval(0.05)

st.set_page_config(page_title="Loopscope", page_icon=":material/autorenew:", layout="wide")
browser_session()  # this browser's id, from its cookie or issued now (never in the URL): its saved runs are its own
run_app()
