"""Replay: open a saved transcript or a sample and step through it with the same views. Nothing is executed."""

import streamlit as st

from pages.views.blocks import in_code, plain
from pages.views.forks import trace_label
from pages.views.i18n import choice, lang, t, t_n
from pages.views.nav import through_app
from pages.views.permalink import open_sample_link
from pages.views.replay import _open_sample, draw_follow, draw_openers, draw_sessions, follow_poll, said, sample_names
from pages.views.step import draw_step
from pages.views.yours import draw_learners, learners_source

through_app()

st.title(t("Replay a run"))
st.caption(t("Open a transcript and step through it exactly as in Step through. Nothing is executed: "
             "no model is called and no tool is run."))
open_sample_link(sample_names(), _open_sample)  # ?sample=NAME&step=K
draw_sessions()  # LOOPSCOPE_SESSIONS_DIR, on the user's own machine only
replay = draw_openers()
if replay is None:
    st.info(t("Open a transcript or choose a sample to replay."))
    st.stop()

trace, meta = replay["trace"], replay["trace"].meta
# The file's name, model and task are the file's: shown as text, never as Markdown (an image there would be fetched).
shown = plain(replay["name"])
if replay.get("sub_agent_logs"):  # a session read with its sub-agents' logs
    shown = t_n("{name} with {n} sub-agent log", "{name} with {n} sub-agent logs", int(replay["sub_agent_logs"]),
                name=shown)
st.markdown(t("**Replaying {name}** · format `{format}` · model `{model}`", name=shown,
              format=in_code(replay["format"]), model=in_code(meta.get("model", "?")))
            + (" · " + t("task: {task}", task=plain(meta["task"])) if meta.get("task") else ""))
warnings = replay["warnings"]  # notes (loop/importers/notes.py), said in the page's language
if warnings:
    shown = "\n".join(f"- {said(note, lang())}" for note in warnings[:10])
    more = "\n- " + t("… and {n} more", n=len(warnings) - 10) if len(warnings) > 10 else ""
    st.warning(t_n("**{n} warning while importing:**", "**{n} warnings while importing:**", len(warnings))
               + f"\n{shown}{more}", icon=":material/warning:")
draw_follow(replay)  # a session opened from the folder, read again as it is written
if trace.branches:  # a saved run with forks: every branch can be replayed
    family = [trace, *trace.branches]
    if st.session_state.get("replay-branch") not in range(len(family)):
        st.session_state["replay-branch"] = 0
    now = lang()
    i = st.selectbox(t("Branch"), range(len(family)), key=choice("replay-branch"),
                     format_func=lambda n: trace_label(family[n], n, now))
    trace = family[i]
# A learner's run saved on Your loop: their code beside the views, the step's line lit, as Your loop draws it
beside = (lambda: draw_learners(trace)) if learners_source(trace) is not None else None
draw_step(trace, "replay", name=replay["name"].rsplit(".", 1)[0], above=beside)
follow_poll(replay)
