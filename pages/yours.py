"""Your loop: the learner writes agent_loop, it runs in the sandbox, and its run is drawn as Step through draws one."""

import streamlit as st

from pages.views.i18n import t
from pages.views.nav import through_app
from pages.views.presenter import apply, draw_switch, keep_presenting, presenting
from pages.views.project import draw_project
from pages.views.yours import (YOURS, apply_presenting, warm_up, draw_editor, draw_exercise, draw_run_row, draw_yours,
                               open_code_link, open_in_editor, run_code_link)

through_app()
keep_presenting()  # a teacher who presents Step through presents Your loop too
if not st.session_state.get("yours-warmed"):  # once a session: the next Run finds the SDK imported
    st.session_state["yours-warmed"] = True
    warm_up()

if presenting():  # the class reads the code from the back: large type, no sidebar, no caption
    apply()
    apply_presenting()
    with st.container(horizontal=True, vertical_alignment="center", key="yours-present-top"):
        st.markdown("**" + t("Your loop") + "**", width="stretch")
        draw_switch()
else:
    with st.container(horizontal=True, vertical_alignment="center", key="yours-title-row"):  # wraps rather than cuts
        st.title(t("Your loop"), width="stretch")
        draw_switch()
    st.caption(t("Write the chapter's agent_loop yourself. Run sends it to the sandbox the model's commands use; "
                 "every request, answer and tool run is recorded from outside your code and drawn stage by stage. "
                 "The first rule your loop breaks is named where it breaks."))
open_code_link()  # ?code=…&scenario=NAME&step=K: before the editor, which it fills
source = draw_editor()
if not presenting():  # the class reads the code; a project's files and a .env are the learner's own
    draw_project(source, open_in_editor)
draw_run_row(source)
run_code_link()  # a link's code, run once: under the editor that shows it
draw_exercise(source)
yours = st.session_state.get(YOURS)
if yours is None:
    st.info(t("Press Run to run your loop on the scenario chosen."))
    st.stop()
draw_yours(yours)
