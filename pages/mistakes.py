"""Mistakes lab: the chapter's loop broken in one line, run for real, beside the correct loop."""

import streamlit as st

from loop.mistakes import MISTAKES
from pages.views.i18n import lang, t
from pages.views.mistakes import draw_lab
from pages.views.nav import through_app

through_app()

st.title(t("Mistakes lab"))
st.caption(t("Each mistake is the chapter's loop with one line changed. Both loops really run, through the real "
             "SDK against the offline model, which checks the Messages API's rules as the API does: the error "
             "below is the API's own 400 answer, word for word."))
names = list(MISTAKES)
if st.session_state.get("mistake-pick") not in names:
    st.session_state["mistake-pick"] = names[0]
now = lang()  # for format_func, which may be called outside this run
st.radio(t("Mistake"), names, key="mistake-pick", horizontal=True, label_visibility="collapsed",
         format_func=lambda n: t(MISTAKES[n].title, now))
draw_lab(st.session_state["mistake-pick"])
