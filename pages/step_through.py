"""Step through: run the loop live, one stage a click, on the offline model or a real one."""

import streamlit as st

from loop.engine.model import SCRIPTED
from loop.engine.profiles import ABOUT as PROFILE_ABOUT
from loop.files.export import prose
from pages.views.blocks import in_code, plain
from pages.views.classroom import draw_start, draw_teacher, rejoin, shown
from pages.views.following import draw_follower, follows
from loop.tools.sandbox import NO_BUBBLEWRAP, programs
from pages.views.forks import draw_branch_picker
from pages.views.i18n import t
from pages.views.nav import through_app
from pages.views.permalink import open_scenario_link
from pages.views.predict import autoplay_step, draw_toggle
from pages.views.presenter import apply, draw_autoplay, draw_switch, keep_presenting, presenting
from pages.views.runs import draw_saved_runs
from pages.views.settings import RUN, _keep, draw_sidebar, live_run
from pages.views.step import draw_step

through_app()
if follows():  # ?class=CODE in a browser that is not the class's teacher: the class's run, nothing else
    draw_follower()  # never in presenter mode, whatever the address says (a teacher's, copied, has present=on)
    st.stop()
keep_presenting()

open_scenario_link(st.session_state.get(RUN), keep=_keep)  # ?scenario=NAME&step=K; it sets the sidebar, so first
rejoin(st.session_state.get(RUN))  # the teacher's reload at ?class=CODE: the class's run and step come back
draw_sidebar()
run = live_run()

if presenting():  # large type, no sidebar, one screen: the task, autoplay, then the step
    apply()
    with st.container(horizontal=True, vertical_alignment="center", gap="medium", key="present-top"):
        st.markdown("**" + t("Task") + f":** {plain(run.task)}", width="stretch")
        draw_autoplay(run.trace, run, advance=lambda: autoplay_step(run, run.trace))
        draw_toggle(run.trace, "live")
        draw_start(run)
        draw_switch()
else:
    with st.container(horizontal=True, vertical_alignment="center", key="title-row"):  # wraps rather than cuts
        st.title(t("Step through the loop"), width="stretch")
        draw_start(run, labelled=True)
        draw_switch()
    model = t("scripted model (offline, no key)") if run.model.config.model == SCRIPTED else \
        t("model `{name}`", name=in_code(run.model.name))
    st.caption(t("Task: **{task}** · {model} · max turns {turns} · workspace `{workspace}`", task=plain(run.task),
                 model=model, turns=int(run.max_turns), workspace=in_code(run.workspace))
               + " · " + t("loop: **{profile}**", profile=plain(run.profile.name)),
               help=t(PROFILE_ABOUT[run.profile.name]))
    sandbox = getattr(run.tools, "sandbox", None)
    if sandbox is not None and sandbox.mode != "bubblewrap":  # the teacher must know before Step
        st.warning(t("Commands run without bubblewrap on this server ({why}): they see the machine as `nobody` does, "
                     "share its network and /tmp, and runs are not isolated from each other. See docs/security.md.",
                     why=plain(programs().why_not)), icon=":material/shield:")
    for warning in run.tools.warnings:  # e.g. a folder commands cannot write in
        if not warning.startswith(NO_BUBBLEWRAP):  # said above, in the page's language
            st.warning(prose(warning), icon=":material/shield:")
    draw_saved_runs(run)
    draw_branch_picker(run)
draw_teacher(run)  # the class this browser teaches, if it teaches one
draw_step(run.trace, "live", run, name=run.task, moved=lambda: shown(run))  # a class this browser leads sees it
