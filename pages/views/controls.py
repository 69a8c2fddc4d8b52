"""Python Tutor's controls: First, Back, Step, Run to end, a slider, and the line saying where we are.

First, Back, Last and the slider only move the cursor. Step moves it too, and
only at the end of a live trace does it execute the next stage. A stage that
fails leaves the trace as it was; the error says what to do and Retry repeats it.

The keys Home, ←, → and End move the cursor over the recorded steps and never
execute a stage: a key pressed by mistake in front of a class must not call a
model or run a command. So → is Step's key only where Step just moves, and End
is Go to last step's key in a live run (in a replay, Run to end only jumps, and End is its).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from html import escape

import streamlit as st

from loop.views.errors import explain
from loop.engine.model import Observer
from loop.views.narrate import describe
from loop.engine.layer_gate import DENIED
from loop.engine.runner import Run
from loop.views.step import StepView
from loop.engine.trace import Trace

from .blocks import markdown_html, plain
from .current import view_at
from .gate import draw_gate, waiting
from .i18n import lang, stage_title, t
from .presenter import presenting, stopped_by_click
from .predict import answers, draw_question, draw_toggle, step_or_ask, withheld
from .streaming import streamed

from .attempts import attempts_note, attempts_shown
from .clicks import ask, taken
from .find import draw_find, draw_slider_marks
from .gate import gate_on
from .progress import arm, armed_key, draw_progress


def _execute(run: Run, key: str, action) -> None:
    """Run `action(observer)` (which may call the model or a tool); keep its error for the page to show."""
    stage = run.next_stage()
    seen: list = []
    run.approval_gate(gate_on())  # the complete loop starts no tool ahead of its step while each waits for approval
    try:
        # "attempt k of n" while the SDK retries; the text as it streams in
        with attempts_shown(run) as (seen, on_attempt), streamed(run) as on_text:
            action(Observer(on_text=on_text, on_attempt=on_attempt))
    except Exception as exc:  # an API error, a missing key: say what to do, keep the trace
        said = explain(exc, lang(), run.model.config.api_key)  # the session's own key hidden, whatever its shape
        st.session_state[f"{key}-error"] = {"stage": stage, "message": said + attempts_note(seen)}
    else:
        st.session_state.pop(f"{key}-error", None)


def _step(run: Run | None, trace: Trace, key: str) -> None:
    if run is None or not trace.at_end:
        (run.step if run else trace.forward)()
        return
    if waiting(run):  # the approval gate: Run or Deny executes this stage
        return
    if run.wait_left() > 0:  # the complete loop backs off before a retry: the call goes when the wait ends
        arm(key, "step")
        return
    stage = run.next_stage()
    # A spinner costs the server a timer thread and two messages a click: only where a stage can take
    # a while (a real command, a real model), not for the offline model's instant stages.
    slow = stage == "run_tool" or not getattr(run.model.config, "scripted", False)
    with st.spinner(t("Running {stage}…", stage=stage_title(stage))) if slow else contextlib.nullcontext():
        _execute(run, key, lambda observer: run.step(observer))


def _until_gate(run: Run, on_step, observer: Observer) -> None:
    """Run to the end, or to the next tool that waits for approval."""
    run.trace.last()
    while not run.done and not waiting(run) and run.wait_left() <= 0:  # a retry's wait is shown, and may be skipped
        on_step(run.execute(observer=observer))


def _retry(run: Run, key: str) -> None:
    run.trace.last()
    with st.spinner(t("Retrying {stage}…", stage=stage_title(run.next_stage()))):
        _execute(run, key, lambda observer: run.step(observer))


def _run_to_end(run: Run | None, trace: Trace, key: str, saved=None) -> None:
    if run is None:  # a replay runs nothing: jump to its last step
        trace.last()
        return
    with st.status(t("Running the loop to its end…"), expanded=True) as status:
        bar = st.progress(0.0, text=t("starting"))
        line = st.empty()

        def on_step(step) -> None:
            bar.progress(min(1.0, step.turn_count / max(1, run.max_turns)),
                         text=t("step {k} · turn {turn} of at most {turns}", k=step.index + 1, turn=step.turn_count,
                                 turns=run.max_turns))
            line.caption(plain(describe(trace, step.index, lang())))
            if saved is not None:  # each step saved as it comes: one transaction a step
                saved()

        _execute(run, key, lambda observer: _until_gate(run, on_step, observer))
        failed = f"{key}-error" in st.session_state
        n = len(trace)
        pausing = not failed and run.wait_left() > 0
        if pausing:  # goes on to the end once the wait is over (or skipped)
            arm(key, "to_end")
        label = (t("Stopped by an error after {n} steps", n=n) if failed else
                 t("Stopped before a tool, for your approval: {n} steps", n=n) if waiting(run) else
                 t("Waiting before the next attempt: {n} steps so far", n=n) if pausing else
                 t("Ran to the end: {n} steps", n=n))
        status.update(label=label,
                      state="error" if failed else "complete", expanded=False)


def _attempt(run: Run, stage: str | None) -> str:
    """" (attempt k of n)" when the next call is a retry of the complete loop."""
    status = run.status()
    if stage not in ("call_model", "summarize") or status.attempts <= 1 or status.attempt <= 1:
        return ""
    return " " + t("(attempt {k} of {n})", k=status.attempt, n=status.attempts)


def _goto(trace: Trace, slider_key: str) -> None:
    trace.goto(st.session_state[slider_key] - 1)


def _ask(key: str, action: str) -> None:
    ask(key, action)  # done in the script body, where progress can be drawn


def _handle(action: str, run: Run | None, trace: Trace, key: str, saved) -> None:
    if action == "first":
        trace.first()
    elif action == "back":
        trace.back()
    elif action == "step":
        step_or_ask(run, trace, lambda: _step(run, trace, key))  # predict on: a question may come first
    elif action == "last":
        trace.last()
    elif action == "to_end":
        _run_to_end(run, trace, key, saved)
    elif action == "retry" and run is not None:
        _retry(run, key)
    elif action in ("approve", "deny") and waiting(run):
        with st.spinner(t("Running {stage}…", stage=stage_title("run_tool"))):
            given = None if action == "approve" else DENIED
            _execute(run, key, lambda observer: run.execute(given=given, observer=observer))


def draw_controls(trace: Trace, key: str, run: Run | None = None, save=None,
                  saved=None) -> Callable[[StepView], str]:
    """The buttons, the error and Retry (live only), the slider and the status line; `save()` draws beside it.

    `saved()` is called once a click has changed the trace (and after each step of Run to end), before the page
    shows the new step. Returns `words_at(view)`: what comes next at a step's record, in a sentence (Markdown),
    drawn beside the buttons, except in presenter mode, which has no row to spare and puts it under the diagram.
    """
    bar = st.container()  # drawn after the click is handled, so enabled/disabled match the new cursor
    feedback = st.container()
    actions = taken(key)
    stopped_by_click(bool(actions))  # any click stops the presenter's autoplay
    if {"first", "back", "last"} & set(actions):  # moving away: a call asked for after a wait is asked no more
        st.session_state.pop(armed_key(key), None)
    with feedback:
        for action in actions:
            _handle(action, run, trace, key, saved)
            if run is not None and f"{key}-error" in st.session_state:  # a failed stage: the clicks after it wait
                break
        if saved is not None:
            saved()
        error = st.session_state.get(f"{key}-error") if run is not None else None
        if error:
            st.error(t("**{stage} failed.**", stage=plain(stage_title(error.get("stage")))) + f" {plain(error['message'])}\n\n"
                     + t("The trace is unchanged: nothing was added. **Retry** repeats this stage."),
                     icon=":material/error:")
            st.button(t("Retry"), key=f"{key}-retry", icon=":material/replay:", on_click=_ask, args=(key, "retry"))
        draw_progress(run, key)  # the complete loop: the wait before a retry, the tools still running
        draw_question(trace, key)

    ended = at_end = trace.at_end
    if run is not None:
        ended = at_end and run.done
    gated = waiting(run)
    if gated and not error:
        with feedback:
            draw_gate(gated, key, _ask)
    v = view_at(trace, trace.cursor)  # the step to show, now that the clicks are done
    locked = st.session_state.get(f"{key}-locked")  # why the cursor may not move now (a class's open question), or None
    with bar:
        st.markdown(f"### {plain(heading(trace, v, key))}")  # a thread's name is the file's id
        if trace.cursor >= 0 and not presenting():
            st.html(said_html(v, key))
        live = run is not None
        # One row that wraps rather than squeezes: every button keeps its whole label, in every language,
        # at 1280 px (columns of fixed shares cut "最初" to a sliver).
        with st.container(horizontal=True, vertical_alignment="center", gap="small", key=f"{key}-buttons"):
            st.button(t("First"), key=f"{key}-first", disabled=trace.cursor <= 0 or bool(locked), help=locked,
                      icon=":material/first_page:", shortcut="Home", on_click=_ask, args=(key, "first"))
            st.button(t("Back"), key=f"{key}-back", disabled=trace.cursor <= 0 or bool(locked), help=locked,
                      icon=":material/chevron_left:", shortcut="Left", on_click=_ask, args=(key, "back"))
            st.button(t("Step"), key=f"{key}-step", type="primary", disabled=ended or bool(gated) or bool(locked),
                      help=locked,
                      icon=":material/chevron_right:", icon_position="right",
                      shortcut=None if live and at_end else "Right",  # at the end it executes: a click only
                      on_click=_ask, args=(key, "step"))
            if live:
                st.button(t("Go to last step"), key=f"{key}-last", disabled=at_end,
                          icon=":material/last_page:", icon_position="right", shortcut="End",
                          on_click=_ask, args=(key, "last"), help=t("Jump to the last recorded step; nothing runs."))
            st.button(t("Run to end"), key=f"{key}-to-end", disabled=ended or bool(gated) or bool(locked),
                      icon=":material/fast_forward:" if live else ":material/last_page:", icon_position="right",
                      shortcut=None if live else "End", on_click=_ask, args=(key, "to_end"),
                      help=t("Execute stages until the loop ends or max turns stops it.") if live else
                      t("Replay: jump to the last step."))
            if len(trace) >= 2 and not presenting():  # the presenter has no use for it, and needs the room
                # In a popover: the browser draws the slider only while it is open (a slider on the page measured
                # the whole page again on every click). A new slider for each cursor, drawn at its value: one slider
                # whose value the script set at every click lagged in the browser and sent a stale value back.
                # Drawn only while it is open: a cursor move would send the slider again for nothing.
                goto = st.popover(t("Go to step"), icon=":material/linear_scale:", key=f"{key}-goto", on_change="rerun")
                with goto:
                    if goto.open:
                        slider_key = f"{key}-slider-{trace.cursor}"
                        with st.container(key=f"{key}-slider"):
                            st.slider(t("Step"), 1, len(trace), value=trace.cursor + 1, key=slider_key,
                                      on_change=_goto, args=(trace, slider_key), label_visibility="collapsed")
                        draw_slider_marks(trace, key)  # where Find's query matches, under the slider
                draw_find(trace, key)  # what to find, and Previous / Next match (Alt+↑ / Alt+↓)
            if not presenting():  # a presenter's is in the row above, by Play: this row must stay one row
                draw_toggle(trace, key)
            if save is not None:
                save()
            words_at = _words(run, gated, trace, key)
            if not presenting():
                st.html(words_html(words_at(v), key), width="stretch")
    return words_at


def held_back(trace: Trace, key: str) -> bool:
    """The last recorded step is held back until its question is answered, and the cursor is on the step before:
    a Step that ran a stage and asks first. The learner must not learn of that step (not even that it is there)."""
    last = len(trace) - 1
    return trace.cursor == last - 1 and last in withheld(key)


def heading(trace: Trace, v: StepView, key: str) -> str:
    """The heading over the buttons (`Step k of n · …`), counting only the steps the learner may know of."""
    if v.index == trace.cursor and held_back(trace, key) and v.status_held:
        return v.status_held
    return v.status


def _words(run: Run | None, gated, trace: Trace, key: str) -> Callable[[StepView], str]:
    """What comes next, in a sentence (Markdown), at step `v.index`: the same for any recorded step but the last."""
    hidden = held_back(trace, key)
    asking = hidden and answers(trace).asking == len(trace) - 1

    def words_at(v: StepView) -> str:
        k, end = v.index, v.ending
        if hidden and k == v.total - 2:  # the step Step just ran waits for the answer: it is not "recorded" to them
            return (t("Next: answer the question; its step shows once you have.") if asking else
                    t("Next, a click on **Step** asks what happens first; the step shows once you have answered."))
        if run is not None and k >= v.total - 1:
            status = run.status()
            nxt = status.next_stage
            return (t("The loop has ended.") + " " + (end or "") if nxt is None else
                    t("Next: **Run** or **Deny** the command above.") if gated else
                    t("Next, a click on **Step** starts the sub-agent's own loop: *{stage}*.",
                      stage=stage_title(nxt)) if nxt == "user_request" and status.stage is not None else
                    t("Next, a click on **Step** goes back to the parent: *{stage}* takes the sub-agent's "
                      "answer.", stage=stage_title(nxt)) if status.ended else
                    t("Next, a click on **Step** executes *{stage}*; the keys only move over recorded steps.",
                      stage=stage_title(nxt) + _attempt(run, nxt)))
        if k < v.total - 1:
            return t("Moving the cursor runs nothing: every step is already recorded.")
        return t("The last recorded step.") + (" " + end if end else "")
    return words_at


def said_html(v: StepView, key: str) -> str:
    """What the step did, in one line: the narration, which quotes commands and JSON as they are."""
    return f'<p class="ls-said" id="ls-said-{key}">{escape(v.said)}</p>'  # its icon: CSS


def words_html(words: str, key: str) -> str:
    """The line beside the buttons (Markdown) as HTML."""
    return f'<div class="ls-words" id="ls-words-{key}">{markdown_html(words)}</div>'
