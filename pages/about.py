"""About the loop: the chapter's idea on one page."""

import streamlit as st

from loop.catalogs import N_
from loop.diagram import dot
from loop.notes import one_sentence
from pages.views.i18n import commented, lang, t
from pages.views.chapter_table import draw_chapter_table
from pages.views.nav import through_app

through_app()

CHAPTER_LOOP = """\
def agent_loop(state):                       # 1: state["messages"] holds the request
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
        state["turn_count"] += 1
        state["transition_reason"] = "tool_result"
"""
COMMENTS = (  # CHAPTER_LOOP's comments, shown in the page's language
    N_('1: state["messages"] holds the request'), N_("2: call the model"), N_("3: append the response itself"),
    N_("4: anything else ends it"), N_("4: run each tool_use"), N_("5: write back, ONE user message"),
)


def body() -> str:
    """The chapter's five stages, the LoopState and two classic mistakes, as Markdown."""
    stages = [
        t("**Put the user's request into history:** `messages = [{\"role\": \"user\", \"content\": query}]`"),
        t("**Call the model** with `system`, `messages`, `tools` and `max_tokens`."),
        t("**Append the assistant response itself** to `messages`: "
          "`{\"role\": \"assistant\", \"content\": response.content}`."),
        t("**Read `stop_reason`.** Anything but `\"tool_use\"` ends the loop (`transition_reason = None`). "
          "Otherwise run every `tool_use` block, in order, and collect a `tool_result` for each, with the same id."),
        t("**Write the results back as ONE user message**, then `turn_count += 1`, "
          "`transition_reason = \"tool_result\"`, and go to 2."),
    ]
    mistakes = [
        t("**Not appending the assistant response.** \"I only need the final answer\", so stage 3 is skipped. "
          "The next request then holds `tool_result`s that answer a `tool_use` the history no longer contains, "
          "and the API refuses it: *unexpected `tool_use_id` found in `tool_result` blocks*."),
        t("**Treating `tool_result` as a terminal log.** The tool runs, its output is printed, and it is never "
          "written back. The model never sees what happened and cannot take the next step; the API refuses the "
          "next request: *`tool_use` ids were found without `tool_result` blocks immediately after*."),
    ]
    return "\n".join([
        "### " + t("The five stages of one turn"),
        *(f"{n}. {text}" for n, text in enumerate(stages, 1)),
        "",
        "### " + t("The LoopState"),
        t("`messages` is the working context of the next call, not a chat log for display; `turn_count` starts "
          "at 1; `transition_reason` says why the loop goes on (`\"tool_result\"`), or `None` when it ends."),
        "",
        "### " + t("Two classic mistakes"),
        *(f"- {text}" for text in mistakes),
    ])


st.title(t("About the loop"))
st.markdown(t("A model alone only predicts text. It becomes an **agent** when code around it repeats: ask the "
              "model, it asks for a tool, really run the tool, write the result back, ask again."))
st.info(t("**The one sentence to remember:**") + " " + one_sentence(lang()), icon=":material/lightbulb:")

left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown(body())
with right:
    st.graphviz_chart(dot(translate=t), width="stretch")
    st.markdown("### " + t("Try it"))
    st.page_link("pages/step_through.py", label=t("Step through a run, one stage a click"), icon=":material/play_arrow:")
    st.page_link("pages/replay.py", label=t("Replay a saved transcript or a sample"), icon=":material/history:")
    st.page_link("pages/mistakes.py", label=t("Break the loop on purpose in the Mistakes lab"),
                 icon=":material/bug_report:")
    st.page_link("pages/compare.py", label=t("The minimal loop beside the complete loop a harness runs"),
                 icon=":material/compare:")
    st.caption(t("Both pages show the same views: the diagram with the stage just executed, the messages as the "
                 "model will see them, the tool_use ↔ tool_result pairs and the LoopState after each step."))

st.markdown("### " + t("The whole loop, as the chapter writes it"))
st.code(commented(CHAPTER_LOOP), language="python")
draw_chapter_table()  # its closing table, each row linked to the complete loop's scenario for it
