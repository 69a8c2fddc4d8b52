"""The mistakes lab's views: one broken loop beside the correct one, call by call.

Both loops really run (loop.mistakes.run_loop, the real SDK against the offline
model, which checks the API's rules), each in a fresh workspace that is removed
afterwards. A session runs each mistake once and keeps the two runs.
"""

from __future__ import annotations

import json
import shutil

import streamlit as st

from loop.mistakes import MISTAKES, Call, LabRun, run_loop
from loop.runner import new_workspace
from loop.tools import default_toolbox

from .history import draw_message

RUNS = "mistakes-runs"


def _run(mistake: str | None, scenario: str) -> LabRun:
    workspace = new_workspace()
    try:
        return run_loop(mistake, default_toolbox(workspace), scenario=scenario)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def lab_runs(name: str) -> tuple[LabRun, LabRun]:
    """(the loop with the mistake, the correct loop) on the mistake's scenario, run once a session."""
    kept = st.session_state.setdefault(RUNS, {})
    if name not in kept:
        scenario = MISTAKES[name].scenario
        kept[name] = (_run(name, scenario), _run(None, scenario))
    return kept[name]


def _outcome(call: Call) -> None:
    if call.error:
        st.error(f"**Call {call.number} refused: HTTP 400 `invalid_request_error`**\n\n```\n{call.error}\n```",
                 icon=":material/block:")
        return
    response = call.response or {}
    stop = response.get("stop_reason")
    texts = [b.get("text", "") for b in response.get("content", []) if b.get("type") == "text"]
    uses = [b for b in response.get("content", []) if b.get("type") == "tool_use"]
    line = f":green-badge[accepted] stop_reason `{stop}`"
    if uses:
        line += " · asks for " + ", ".join(f"`{u['name']}` `{json.dumps(u['input'])}`" for u in uses)
    st.markdown(line)
    if texts and not uses:
        st.caption(" ".join(texts).replace("$", "\\$")[:400])
    for output in call.tool_outputs:
        st.code(output[:600] or " ", language=None)


def _draw_call(call: Call | None, side: str, broken: bool) -> None:
    if call is None:
        st.caption("No such call: this loop had already stopped.")
        return
    st.markdown(f"**Call {call.number}** · sent {len(call.messages)} message(s)")
    with st.expander(f"messages sent at call {call.number}", expanded=broken, key=f"mistake-{side}-{call.number}"):
        for i, message in enumerate(call.messages):
            draw_message(i, message, new=False)
    _outcome(call)


def draw_lab(name: str) -> None:
    """One mistake: the fix, the lines that differ, and both loops call by call."""
    m = MISTAKES[name]
    wrong, right = lab_runs(name)
    broke = wrong.broke_at
    st.subheader(m.title)
    st.success(f"**The fix:** {m.fix}", icon=":material/build:")
    a, b = st.columns(2)
    with a:
        st.markdown(":red[:material/close:] **The broken loop has**")
        st.code(m.wrong, language="python")
    with b:
        st.markdown(":green[:material/check:] **The chapter's loop has**")
        st.code(m.right, language="python")
    st.caption(f"Scenario `{m.scenario}`: “{right.calls[0].messages[0]['content']}”. "
               + (f"The broken loop is refused at call {broke.number}; the correct loop ends with "
                  f"`{right.ended}` after {len(right.calls)} call(s)." if broke else
                  f"The broken loop ends with `{wrong.ended}`."))
    a, b = st.columns(2)
    a.markdown("#### With the mistake")
    b.markdown("#### The correct loop")
    for n in range(max(len(wrong.calls), len(right.calls))):
        a, b = st.columns(2, gap="medium", border=True)
        with a:
            _draw_call(wrong.calls[n] if n < len(wrong.calls) else None, "wrong", broke is not None and n == broke.number - 1)
        with b:
            _draw_call(right.calls[n] if n < len(right.calls) else None, "right",
                       broke is not None and n == broke.number - 1)
