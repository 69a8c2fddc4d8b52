"""Your loop: the learner writes agent_loop, it runs in the sandbox, and its run is drawn as Step through draws one."""

import streamlit as st

from pages.views.i18n import t
from pages.views.nav import through_app
from pages.views.yours import YOURS, warm_up, draw_editor, draw_exercise, draw_run_row, draw_yours, open_code_link

through_app()
if not st.session_state.get("yours-warmed"):  # once a session: the next Run finds the SDK imported
    st.session_state["yours-warmed"] = True
    warm_up()

st.title(t("Your loop"))
st.caption(t("Write the chapter's agent_loop yourself. Run sends it to the sandbox the model's commands use; every "
             "request, answer and tool run is recorded from outside your code and drawn stage by stage. The first "
             "rule your loop breaks is named where it breaks."))
open_code_link()  # ?code=…&scenario=NAME&step=K: before the editor, which it fills
source = draw_editor()
draw_run_row(source)
draw_exercise(source)
yours = st.session_state.get(YOURS)
if yours is None:
    st.info(t("Press Run to run your loop on the scenario chosen."))
    st.stop()
draw_yours(yours)
