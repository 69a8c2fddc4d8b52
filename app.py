"""Loopscope: watch an agent's loop, one stage at a time.

`streamlit run app.py`. The engine is in loop/ (no Streamlit there); each page
in pages/ draws (trace, cursor) with the small views in pages/views/.
"""

import streamlit as st

from pages.views.nav import run_app

st.set_page_config(page_title="Loopscope", page_icon=":material/autorenew:", layout="wide")
run_app()
