"""The mistakes lab's views: one broken loop beside the correct one, call by call.

Both loops really run (loop.engine.broken.lab, the real SDK against the offline
model, which checks the API's rules), each in a fresh workspace that is removed
afterwards. A session runs each mistake once and keeps the two runs. What each
mistake is (its lines, rule, the API's words and fix) is loop.engine.mistakes'.
"""

from __future__ import annotations

import json

import streamlit as st

from loop.engine.broken import lab
from loop.engine.mistakes import MISTAKES, OPENAI
from loop.engine.runner import new_workspace
from loop.engine.toolsets import default_toolbox
from loop.views.mistakes import NOT_RUN_YET, Call, LabRun, ids_of, lab_run
from loop.views.parts import screen_colours

from loop.files.export import prose

from .blocks import id_colours, in_code, inline_code, plain
from .history import draw_message
from .i18n import commented, lang, t

RUNS = "mistakes-runs"


def _run(mistake: str | None, scenario: str, language: str) -> LabRun:
    with default_toolbox(new_workspace()) as tools:  # closing the box removes the workspace it made
        return lab_run(lab(mistake, tools, scenario=scenario, lang=language), mistake)


def lab_runs(name: str) -> tuple[LabRun, LabRun]:
    """(the loop with the mistake, the correct loop) on the mistake's scenario, run once a session and language."""
    kept = st.session_state.setdefault(RUNS, {})
    now = lang()
    if (name, now) not in kept:
        scenario = MISTAKES[name].scenario
        kept[(name, now)] = (_run(name, scenario, now), _run(None, scenario, now))
    return kept[(name, now)]


def refusal(call: Call, rule: str) -> str:
    """The API's 400 as the page shows it: its words verbatim, wrapping like prose, then what the rule means."""
    quoted = "\n".join("> " + prose(line) for line in call.error.splitlines())  # the server's words, as text
    return (t("**Call {n} refused: HTTP 400 `invalid_request_error`**", n=int(call.number)) + "\n\n" + quoted
            + ("\n\n" + t("**What the rule means:**") + " " + t(rule) if rule else ""))


def _outcome(call: Call, rule: str = "", mistake: str | None = None) -> None:
    if call.error:
        st.error(refusal(call, rule), icon=":material/block:")
        other = MISTAKES[mistake].said(OPENAI) if mistake in MISTAKES else None
        if other:  # the same mistake in the other dialect a learner's loop may speak: its words, as text
            st.caption(t("OpenAI's Chat Completions refuses the same mistake with: “{words}”", words=plain(other)))
        return
    response = call.response or {}
    stop = response.get("stop_reason")
    texts = [b.get("text", "") for b in response.get("content", []) if b.get("type") == "text"]
    uses = [b for b in response.get("content", []) if b.get("type") == "tool_use"]
    line = ":green-badge[" + t("accepted") + f"] stop_reason {inline_code(stop)}"
    if uses:  # the model's names and inputs are text here, whatever they hold
        line += " · " + t("asks for") + " " + ", ".join(
            f"{inline_code(u.get('name'))} {inline_code(json.dumps(u.get('input'), ensure_ascii=False))}" for u in uses)
    st.markdown(line)
    if texts and not uses:
        st.caption(plain(" ".join(texts)[:400]))
    for output in call.tool_outputs:
        st.code(output[:600] or " ", language=None)


def draw_call(call: Call | None, side: str, broken: bool, rule: str = "", wish: bool = False,
              mistake: str | None = None) -> None:
    """One call of a loop: the messages it sent (open at the call that broke), then what came back."""
    if call is None:
        st.caption(t("No such call: this loop had already stopped."))
        return
    st.markdown(t("**Call {n}** · sent {m} message(s)", n=int(call.number), m=len(call.messages)))
    with st.expander(t("messages sent at call {n}", n=call.number), expanded=broken, key=f"mistake-{side}-{call.number}"):
        for i, message in enumerate(call.messages):
            draw_message(i, message, new=False)
    _outcome(call, rule, mistake)
    if wish:  # no loop: the model asked, and nothing will ever run it
        st.warning(t("**Nothing runs the tool_use.** No tool_result is written back and the model is not called "
                     "again: no file is read, and the answer stays a wish."), icon=":material/hourglass_disabled:")


def draw_lines(name: str) -> None:
    """The lines that differ: the broken loop's beside the chapter's."""
    m = MISTAKES[name]
    a, b = st.columns(2)
    with a:
        st.markdown(":red[:material/close:] " + t("**The broken loop has**"))
        st.code(commented(m.wrong), language="python", wrap_lines=True)
    with b:
        st.markdown(":green[:material/check:] " + t("**The chapter's loop has**"))
        st.code(commented(m.right), language="python", wrap_lines=True)


def draw_lab(name: str) -> None:
    """One mistake: the fix, the lines that differ, and both loops call by call."""
    m = MISTAKES[name]
    wrong, right = lab_runs(name)
    broke = wrong.broke_at
    st.subheader(t(m.title))
    st.success(t("**The fix:**") + " " + t(m.fix), icon=":material/build:")
    draw_lines(name)
    st.caption(t("Scenario `{name}`: “{task}”.", name=in_code(m.scenario), task=plain(right.calls[0].messages[0]["content"])) + " "
               + (t("The broken loop is refused at call {n}; the correct loop ends with `{ended}` after {calls} call(s).",
                    n=int(broke.number), ended=in_code(right.ended), calls=len(right.calls)) if broke else
                  t("The broken loop stops after {calls} call(s) with `{ended}` and runs {tools} tool(s); the correct "
                    "loop runs {right_tools} and ends with `{right_ended}` after {right_calls} call(s).",
                    calls=len(wrong.calls), ended=in_code(wrong.ended), tools=int(wrong.tools_run),
                    right_tools=int(right.tools_run), right_ended=in_code(right.ended), right_calls=len(right.calls))))
    a, b = st.columns(2)
    a.markdown(t("#### With the mistake"))
    b.markdown(t("#### The correct loop"))
    colours = screen_colours(ids_of(wrong.calls + right.calls))  # a wrong id never in a real id's colour
    for n in range(max(len(wrong.calls), len(right.calls))):
        a, b = st.columns(2, gap="medium", border=True)
        with a, id_colours(colours):
            last = n == len(wrong.calls) - 1
            draw_call(wrong.calls[n] if n < len(wrong.calls) else None, "wrong",
                       broke is not None and n == broke.number - 1, rule=m.rule,
                       wish=last and wrong.ended == NOT_RUN_YET, mistake=name)
        with b, id_colours(colours):
            draw_call(right.calls[n] if n < len(right.calls) else None, "right",
                       broke is not None and n == broke.number - 1)
