"""Minimal beside complete: the chapter's loop and a production harness's, on the same scenario, call by call."""

import streamlit as st

from loop.views.compare import SCENARIOS
from loop.engine.scenarios import SCENARIOS as ALL
from pages.views.blocks import draw_style, inline_code, plain
from pages.views.compare import draw_compare
from pages.views.i18n import lang, t
from pages.views.nav import through_app

through_app()
draw_style()  # the sent messages' cards wrap their text inside their column, as on the other pages

PICK = "compare-pick"

st.title(t("Minimal beside complete"))
st.caption(t("The chapter ends with a table: its minimal loop beside a high-completion system, the same skeleton with "
             "more reasons to go on. Both loops below really run the same scenario, through the real SDK against the "
             "offline model, which answers as the API does: a 529 when it is overloaded, a 400 when the prompt is "
             "too long, an answer cut at max_tokens."))
linked = st.query_params.get("scenario")
if linked in SCENARIOS and st.session_state.get(f"{PICK}-linked") != linked:  # ?scenario=NAME, opened once
    st.session_state[PICK] = st.session_state[f"{PICK}-linked"] = linked
if st.session_state.get(PICK) not in SCENARIOS:
    st.session_state[PICK] = SCENARIOS[0]
now = lang()  # for format_func, which may be called outside this run
st.radio(t("Scenario"), list(SCENARIOS), key=PICK, horizontal=True,
         format_func=lambda n: f"{n}", label_visibility="collapsed")
name = st.session_state[PICK]
if st.query_params.get("scenario") != name:  # the URL follows the choice (and is not opened again as a link)
    st.query_params["scenario"] = st.session_state[f"{PICK}-linked"] = name
st.caption(f"{inline_code(name)}: {t(ALL[name].about, now)} · “{plain(ALL[name].task_in(now))}”")
draw_compare(name)
