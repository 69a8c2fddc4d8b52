"""About the loop: the chapter's idea on one page, ending with what a reader should be able to say after it."""

import streamlit as st

from loop.files.export import prose
from loop.files.runs import StoreError
from loop.text.catalogs import N_
from loop.views.diagram import svg
from loop.engine.mistakes import ANTHROPIC, MISTAKES, NO_ASSISTANT_APPEND, NO_WRITE_BACK
from loop.views.notes import one_sentence, remember
from loop.yours.exercises import EXERCISES
from pages.views.browser import store, this_browser
from pages.views.i18n import commented, lang, t
from pages.views.chapter_table import draw_chapter_table
from pages.views.nav import through_app
from pages.views.predict import STATEMENTS, right_kinds

through_app()


def exercised() -> set[int]:
    """The statements whose exercise this browser passed in Your loop (the saved-runs store's progress)."""
    owner = this_browser()
    if owner is None:
        return set()
    try:
        passed = store().passed(owner)
    except (StoreError, OSError):
        return set()
    return {exercise.statement for name, exercise in EXERCISES.items() if name in passed}


# The chapter's three closing statements, each with the step that shows it (a built-in scenario on the offline
# model, opened at that step) and the mistake of the Mistakes lab that breaks it. tests/test_app_teach.py checks
# that each step is the stage it is said to be.
CHECKLIST = [  # (the statement, scenario, step, the stage shown there, mistake)
    (N_("A model alone is not an agent: it takes a loop that writes tool results back."),
     "list-files", 6, "write_back", "no-loop"),
    (N_("The assistant response itself must stay in history, or the next turn is cut off."),
     "hello-py", 3, "append_assistant", "no-assistant-append"),
    (N_("A tool_result is not a terminal log: it is the next turn's input block."),
     "recover", 7, "call_model", "no-write-back"),
]

CHAPTER_LOOP = """\
def agent_loop(state):                       # 1 (once): state["messages"] holds the request
    while True:
        response = client.messages.create(   # 2: call the model
            model=MODEL, system=SYSTEM, messages=state["messages"],
            tools=TOOLS, max_tokens=8000)
        state["messages"].append({           # 3: append the response itself
            "role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            state["transition_reason"] = None  # 4: anything else ends it
            return
        results = []
        for block in response.content:        # 4: run each tool_use
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({"type": "tool_result",
                                "tool_use_id": block.id, "content": output})
        state["messages"].append({           # 5: write back, ONE user message
            "role": "user", "content": results})
        state["turn_count"] += 1           # turn k ends; turn k + 1 begins
        state["transition_reason"] = "tool_result"
"""
COMMENTS = (  # CHAPTER_LOOP's comments, shown in the page's language
    N_('1 (once): state["messages"] holds the request'), N_("2: call the model"), N_("3: append the response itself"),
    N_("4: anything else ends it"), N_("4: run each tool_use"), N_("5: write back, ONE user message"),
    N_("turn k ends; turn k + 1 begins"),
)


CLASSIC = (NO_ASSISTANT_APPEND, NO_WRITE_BACK)  # the chapter's two classic mistakes


def classic(name: str) -> str:
    """A classic mistake as its one definition says it (loop/engine/mistakes.py): its title, the rule it breaks,
    the API's own words refusing it (English, as the API says them) and the fix."""
    mistake = MISTAKES[name]
    return t("**{title}.** {rule} The API refuses the next request: *{words}* {fix}", title=t(mistake.title),
             rule=t(mistake.rule), words=prose(mistake.said(ANTHROPIC)), fix=t(mistake.fix))


def body() -> str:
    """The chapter's five stages, the LoopState and two classic mistakes, as Markdown."""
    stages = [
        t("**Put the user's request into history** (once): `messages = [{\"role\": \"user\", \"content\": query}]`"),
        t("**Call the model** with `system`, `messages`, `tools` and `max_tokens`."),
        t("**Append the assistant response itself** to `messages`: "
          "`{\"role\": \"assistant\", \"content\": response.content}`."),
        t("**Read `stop_reason`.** Anything but `\"tool_use\"` ends the loop (`transition_reason = None`). "
          "Otherwise run every `tool_use` block, in order, and collect a `tool_result` for each, with the same id."),
        t("**Write the results back as ONE user message**, then `turn_count += 1`, "
          "`transition_reason = \"tool_result\"`, and go to 2."),
    ]
    mistakes = [classic(name) for name in CLASSIC]
    return "\n".join([
        "### " + t("The five stages"),
        t("Stage 1 happens once, before the loop. Stages 2 to 5 are **one turn**, and they repeat until "
          "`stop_reason` is not `\"tool_use\"`."),
        "",
        *(f"{n}. {text}" for n, text in enumerate(stages, 1)),
        "",
        "### " + t("The LoopState"),
        t("`messages` is the working context of the next call, not a chat log for display; `turn_count` is the "
          "number of the turn in progress: it starts at 1, and the write-back that ends turn 1 makes it 2; "
          "`transition_reason` says why the loop goes on (`\"tool_result\"`), or `None` when it ends. "
          "Loopscope labels every step with the turn it is part of: a write-back with the turn it ends "
          "(`turn_count 1 → 2`), the user's request with \"before turn 1\"."),
        "",
        "### " + t("Two classic mistakes"),
        *(f"- {text}" for text in mistakes),
    ])


st.title(t("About the loop"))
st.markdown(t("A model alone only predicts text. It becomes an **agent** when code around it repeats: ask the "
              "model, it asks for a tool, really run the tool, write the result back, ask again."))
st.info(t("**The chapter's most important sentence:**") + " " + one_sentence(lang()), icon=":material/lightbulb:")

left, right = st.columns([4, 3], gap="large")
with left:
    st.markdown(body())
with right:
    st.markdown(f'<div class="ls-diagram-box">{svg(translate=t)}</div>', unsafe_allow_html=True)

st.markdown("### " + t("Try it"))
with st.container(horizontal=True, gap="medium"):  # a row that wraps: every link keeps its whole label
    st.page_link("pages/step_through.py", label=t("Step through a run, one stage a click"), icon=":material/play_arrow:")
    st.page_link("pages/replay.py", label=t("Replay a saved transcript or a sample"), icon=":material/history:")
    st.page_link("pages/mistakes.py", label=t("Break the loop on purpose in the Mistakes lab"),
                 icon=":material/bug_report:")
    st.page_link("pages/compare.py", label=t("The minimal loop beside the complete loop a harness runs"),
                 icon=":material/compare:")
st.caption(t("Step through and Replay show the same views: the diagram with the stage just executed, the messages "
             "as the model will see them, the tool_use ↔ tool_result pairs and the LoopState after each step."))

st.markdown("### " + t("The whole loop, as the chapter writes it"))
st.code(commented(CHAPTER_LOOP), language="python")
draw_chapter_table()  # its closing table, each row linked to the complete loop's scenario for it

st.markdown("### " + t("Remember it in one sentence"))
st.success(remember(lang()), icon=":material/autorenew:")

st.markdown("### " + t("After this chapter you can say"))
st.caption(t("The chapter's three closing points. Tick each one once a step and a mistake have shown it to you."))
here = {"lang": lang()} if lang() != "en" else {}
done = exercised()
for i, (statement, scenario, step, _, mistake) in enumerate(CHECKLIST, 1):
    with st.container(border=True, key=f"about-s{i}"):
        answered = set(STATEMENTS[i]) <= right_kinds()  # its questions, answered right
        if (answered or i in done) and f"about-check-s{i}" not in st.session_state:  # ticked for the learner, who may untick it
            st.session_state[f"about-check-s{i}"] = True
        st.checkbox(t(statement), key=f"about-check-s{i}")
        if answered:
            st.caption(t("You answered its questions right in Predict, then step."))
        if i in done:
            st.caption(t("You passed its exercise in Your loop."))
        with st.container(horizontal=True, gap="medium"):
            st.page_link("pages/step_through.py", label=t("See it: step {step} of `{scenario}`", step=step,
                                                          scenario=scenario),
                         icon=":material/play_arrow:", query_params={**here, "scenario": scenario, "step": str(step)})
            st.page_link("pages/mistakes.py", label=t("Break it: {mistake}", mistake=t(MISTAKES[mistake].title)),
                         icon=":material/bug_report:", query_params={**here, "mistake": mistake})
