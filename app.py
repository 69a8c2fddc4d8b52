"""Loopscope: watch an agent's loop, one stage at a time.

`streamlit run app.py`. The engine is in loop/ (no Streamlit there); each page
in pages/ draws (trace, cursor) with the small views in pages/views/.
"""

import streamlit as st

from pages.views.nav import run_app
from pages.views.runs import browser_session

st.set_page_config(page_title="Loopscope", page_icon=":material/autorenew:", layout="wide")
browser_session()  # this browser's id in the URL, on every page: its saved runs are its own
run_app()
