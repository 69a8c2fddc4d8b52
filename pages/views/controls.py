"""Python Tutor's controls: First, Back, Step, Run to end, a slider, and the line saying where we are.

First, Back and the slider only move the cursor. Step moves it too, and only
at the end of a live trace does it execute the next stage. A stage that fails
leaves the trace as it was; the error says what to do and Retry repeats it.
"""

from __future__ import annotations

import streamlit as st

from loop.errors import explain
from loop.narrate import describe
from loop.runner import Run
from loop.trace import STAGE_TITLES, Trace
from loop.views import status_line, what_happened


def _execute(run: Run, key: str, action) -> None:
    """Run `action` (which may call the model or a tool); keep its error for the page to show."""
    stage = run.next_stage()
    try:
        action()
    except Exception as exc:  # an API error, a missing key: say what to do, keep the trace
        st.session_state[f"{key}-error"] = {"stage": stage, "message": explain(exc)}
    else:
        st.session_state.pop(f"{key}-error", None)


def _step(run: Run | None, trace: Trace, key: str) -> None:
    if run is None or not trace.at_end:
        (run.step if run else trace.forward)()
        return
    with st.spinner(f"Running {STAGE_TITLES.get(run.next_stage(), run.next_stage())}…"):
        _execute(run, key, run.step)


def _retry(run: Run, key: str) -> None:
    run.trace.last()
    with st.spinner(f"Retrying {STAGE_TITLES.get(run.next_stage(), run.next_stage())}…"):
        _execute(run, key, run.step)


def _run_to_end(run: Run | None, trace: Trace, key: str) -> None:
    if run is None:  # a replay runs nothing: jump to its last step
        trace.last()
        return
    with st.status("Running the loop to its end…", expanded=True) as status:
        bar = st.progress(0.0, text="starting")
        line = st.empty()

        def on_step(step) -> None:
            bar.progress(min(1.0, step.turn_count / max(1, run.max_turns)),
                         text=f"step {step.index + 1} · turn {step.turn_count} of at most {run.max_turns}")
            line.caption(describe(trace, step.index))

        _execute(run, key, lambda: run.run_to_end(on_step=on_step))
        failed = f"{key}-error" in st.session_state
        status.update(label=("Stopped by an error after" if failed else "Ran to the end:") + f" {len(trace)} steps",
                      state="error" if failed else "complete", expanded=False)


def _escape(text: str) -> str:
    """Plain text in markdown: the narration quotes commands and JSON."""
    for ch in "\\`*_[]<>$~:#|":
        text = text.replace(ch, "\\" + ch)
    return text


def _goto(trace: Trace, slider_key: str) -> None:
    trace.goto(st.session_state[slider_key] - 1)


def _ask(key: str, action: str) -> None:
    st.session_state[f"{key}-action"] = action  # done in the script body, where progress can be drawn


def draw_controls(trace: Trace, key: str, run: Run | None = None, save=None) -> None:
    """The buttons, the error and Retry (live only), the slider and the status line; `save()` draws beside it."""
    bar = st.container()  # drawn after the click is handled, so enabled/disabled match the new cursor
    feedback = st.container()
    action = st.session_state.pop(f"{key}-action", None)
    with feedback:
        if action == "first":
            trace.first()
        elif action == "back":
            trace.back()
        elif action == "step":
            _step(run, trace, key)
        elif action == "to_end":
            _run_to_end(run, trace, key)
        elif action == "retry" and run is not None:
            _retry(run, key)
        error = st.session_state.get(f"{key}-error") if run is not None else None
        if error:
            title = STAGE_TITLES.get(error.get("stage"), error.get("stage"))
            st.error(f"**{title} failed.** {error['message']}\n\n"
                     "The trace is unchanged: nothing was added. **Retry** repeats this stage.",
                     icon=":material/error:")
            st.button("Retry", key=f"{key}-retry", icon=":material/replay:", on_click=_ask, args=(key, "retry"))

    ended = at_end = trace.at_end
    if run is not None:
        ended = at_end and run.done
    with bar:
        line, right = st.columns([5, 1], vertical_alignment="center")
        line.markdown(f"### {status_line(trace, trace.cursor)}")
        if save is not None:
            with right:
                save()
        happened = what_happened(trace, trace.cursor)
        if happened:
            st.markdown(f":material/lightbulb: {_escape(happened)}")
        cols = st.columns([1, 1, 1, 1.2, 3.3], vertical_alignment="center")
        cols[0].button("First", key=f"{key}-first", disabled=trace.cursor <= 0, width="stretch",
                       icon=":material/first_page:", shortcut="Home", on_click=_ask, args=(key, "first"))
        cols[1].button("Back", key=f"{key}-back", disabled=trace.cursor <= 0, width="stretch",
                       icon=":material/chevron_left:", shortcut="Left", on_click=_ask, args=(key, "back"))
        cols[2].button("Step", key=f"{key}-step", type="primary", width="stretch", disabled=ended,
                       icon=":material/chevron_right:", icon_position="right", shortcut="Right",
                       on_click=_ask, args=(key, "step"))
        cols[3].button("Run to end", key=f"{key}-to-end", width="stretch", disabled=ended,
                       icon=":material/last_page:", icon_position="right", shortcut="End",
                       on_click=_ask, args=(key, "to_end"),
                       help="Replay: jump to the last step." if run is None else
                       "Execute stages until the loop ends or max turns stops it.")
        with cols[4]:
            if run is not None and at_end:
                nxt = run.next_stage()
                st.markdown(f"The loop has ended: **{run.state.ended}**." if nxt is None else
                            f"Next, **Step** executes *{STAGE_TITLES.get(nxt, nxt)}*.")
            elif not at_end:
                st.markdown("Moving the cursor runs nothing: every step is already recorded.")
            else:
                st.markdown("The last recorded step.")
        if len(trace) >= 2:
            slider_key = f"{key}-slider"
            st.session_state[slider_key] = trace.cursor + 1
            st.slider("Step", 1, len(trace), key=slider_key, on_change=_goto, args=(trace, slider_key),
                      label_visibility="collapsed")
