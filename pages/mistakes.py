"""Mistakes lab: the chapter's loop broken in one line, run for real, beside the correct loop."""

import streamlit as st

from loop.engine.mistakes import MISTAKES
from pages.views.blocks import draw_style
from pages.views.i18n import choice, lang, t
from pages.views.mistakes import draw_lab
from pages.views.nav import through_app

through_app()
draw_style()

st.title(t("Mistakes lab"))
st.caption(t("Each mistake is the chapter's loop with one line changed. Both loops really run, through the real "
             "SDK against the offline model, which checks the Messages API's rules as the API does: where the API "
             "refuses a request, the error below is its own 400 answer, word for word."))
names = list(MISTAKES)
wanted = st.query_params.get("mistake")  # ?mistake=NAME, as the About page's checklist links it
if wanted in names and st.session_state.get("mistake-seen") != wanted:
    st.session_state["mistake-seen"] = wanted
    st.session_state["mistake-pick"] = wanted
if st.session_state.get("mistake-pick") not in names:
    st.session_state["mistake-pick"] = names[0]
now = lang()  # for format_func, which may be called outside this run


def _follow() -> None:  # the URL names the mistake shown, so a copied link opens it
    st.query_params["mistake"] = st.session_state["mistake-pick"]
    st.session_state["mistake-seen"] = st.session_state["mistake-pick"]


st.radio(t("Mistake"), names, key=choice("mistake-pick"), horizontal=True, label_visibility="collapsed", on_change=_follow,
         format_func=lambda n: t(MISTAKES[n].title, now))
draw_lab(st.session_state["mistake-pick"])
