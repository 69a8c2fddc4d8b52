"""The approval gate: before a tool runs, show the exact command and wait for Run or Deny.

On by default with a real model (a sidebar toggle), and saved with a run's
settings: Resume brings it back as it was, and on for a real model's run saved
without it (a new session's toggle follows the sidebar's model, which is back to
the scripted one). Deny answers the tool_use
with runner.DENIED, an is_error tool_result, so the history stays valid and
the model is told what happened.
"""

from __future__ import annotations

import json

import streamlit as st

from loop.engine.runner import Run

from .blocks import in_code
from .i18n import t

TOGGLE = "set-approve"
REAL = "anthropic"  # the sidebar's Model: SCRIPTED (the default) or a real model


def real_model() -> bool:
    """The sidebar chose a real model: only in so many words. Anything else (nothing chosen yet, a value the page
    cannot read) is the offline model, which needs no key."""
    return st.session_state.get("set-model") == REAL


def default_on() -> bool:
    """The gate is on by default when a real model is chosen."""
    return real_model()


def model_changed() -> None:
    """Choosing a model sets the toggle to that model's default; the learner can still change it."""
    st.session_state[TOGGLE] = default_on()


def as_saved(settings: dict, scripted: bool) -> bool:
    """The gate of a resumed run: as its settings saved it; when they say nothing, on unless the model is scripted."""
    value = settings.get("approve")
    return value if isinstance(value, bool) else not scripted


def gate_on() -> bool:
    return bool(st.session_state.get(TOGGLE, default_on()))


def waiting(run: Run | None) -> dict | None:
    """The tool_use waiting for approval: the next stage runs a tool, the cursor is at the end, the gate is on."""
    if run is None or not gate_on() or not run.trace.at_end:
        return None
    return run.pending_tool_use


def draw_toggle() -> None:
    if TOGGLE not in st.session_state:
        st.session_state[TOGGLE] = default_on()
    st.toggle(t("Ask before running a tool"), key=TOGGLE,
              help=t("Before a tool runs, show the exact command and wait for Run or Deny."))


def draw_gate(block: dict, key: str, ask) -> None:
    """The command the model asked for, and Run / Deny; `ask(key, action)` records the click."""
    with st.container(border=True, key=f"{key}-gate"):
        st.markdown(t("**The model asks to run a tool.** Nothing has run yet: check the command, then "
                      "choose.") + f"  \n:material/build: `{in_code(block.get('name'))}` · `{in_code(block.get('id'))}`")
        tool_input = block.get("input") or {}
        if block.get("name") == "bash" and isinstance(tool_input, dict) and "command" in tool_input:
            st.code(str(tool_input["command"]), language="bash")
        else:
            st.code(json.dumps(tool_input, indent=2, ensure_ascii=False), language="json")
        a, b, c = st.columns([1, 1, 4], vertical_alignment="center")
        a.button(t("Run"), key=f"{key}-approve", type="primary", icon=":material/play_arrow:", width="stretch",
                 on_click=ask, args=(key, "approve"))
        b.button(t("Deny"), key=f"{key}-deny", icon=":material/block:", width="stretch",
                 on_click=ask, args=(key, "deny"))
        c.caption(t("Deny writes an is_error tool_result back (\"denied by the user\"), so every tool_use "
                    "still has its tool_result and the loop goes on."))
