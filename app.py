"""Loopscope: watch an agent's loop, one stage at a time."""

import streamlit as st

st.set_page_config(page_title="Loopscope", layout="wide")
st.title("Loopscope")
st.write("The agent loop, one stage at a time.")
