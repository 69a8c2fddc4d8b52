"""Step through: run the loop live, one stage a click, on the offline model or a real one."""

import streamlit as st

from loop.model import SCRIPTED
from pages.views.nav import through_app
from pages.views.settings import draw_sidebar, live_run
from pages.views.step import draw_step

through_app()

draw_sidebar()
run = live_run()

st.title("Step through the loop")
model = "scripted model (offline, no key)" if run.model.config.model == SCRIPTED else f"model `{run.model.name}`"
st.caption(f"Task: **{run.task}** · {model} · max turns {run.max_turns} · workspace `{run.workspace}`")
draw_step(run.trace, "live", run, name=run.task)
