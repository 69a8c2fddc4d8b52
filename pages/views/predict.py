"""Predict, then step: before a step that reveals what the chapter teaches, Step asks first.

With the toggle on, a Step whose next step has a question (loop/views/questions.py) keeps the cursor
where it is and shows the question; an answer moves the cursor and reveals the step, marked right or
wrong, with the why. In a live run at the end of the trace the stage is executed first and the cursor
put back, so the question is made from what the loop really did. "I don't know" (and the presenter's
"Reveal now") reveals the step without counting as an answer.

The answers are kept per run, keyed by the trace itself (a weak key: a run dropped drops its answers);
the kinds answered right are kept for the session, for About's checklist.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

import streamlit as st

from loop.engine.runner import Run
from loop.engine.trace import Trace
from loop.text.catalogs import N_
from loop.views.questions import Question, question_before

from .blocks import markdown_html
from .i18n import lang, t
from .presenter import presenting

PREDICT = "predict"  # on or off, for the session: Step through and Replay alike
LINKED = "predict-linked"  # ?predict=on was taken once: toggling it off afterwards sticks
RUNS = "predict-runs"  # trace -> Answers
RIGHT = "predict-right"  # the kinds answered right this session
HOLDS = "predict-holds"  # trace -> a step held back from the browser by someone else's question (a class's)
REVEALED = -1  # a step revealed without an answer ("Reveal now")
COUNTDOWN = 20  # seconds the presenter's count-down runs
COUNTDOWN_ABOUT = N_("Time to think: {n} s. When the bar runs out nothing moves by itself: the question stays open "
                     "until you reveal the step (Reveal now, or an answer).")

# The verdict's colour, and room around the question (presenter.py makes both large)
CSS = ("<style>.ls-verdict { border-left: 0.3rem solid #999; padding: 0.2rem 0.8rem; margin: 0.2rem 0; }"
       ".ls-verdict-right { border-color: #21c354; } .ls-verdict-wrong { border-color: #ff4b4b; }"
       ".ls-question-head { font-weight: 600; margin-bottom: 0.2rem; }</style>")

# Which of About's closing statements a kind answers (all of them, answered right, tick it)
STATEMENTS = {1: ("continues",), 2: ("next_request_has",), 3: ("write_back_role", "tool_result_id")}


@dataclass
class Answers:
    """One run's predictions: the choice made before each step, and the question waiting, if one is."""

    chosen: dict[int, int] = field(default_factory=dict)  # step -> index of the choice (REVEALED: none)
    asking: int | None = None  # the step whose question is on the screen
    verdict: int | None = None  # the step just revealed, whose verdict shows while the cursor is on it


def on() -> bool:
    """Predict, then step is on (the toggle, or `?predict=on` once)."""
    s = st.session_state
    if st.query_params.get("predict") == "on" and not s.get(LINKED):
        s[LINKED] = True
        s[PREDICT] = True
    return bool(s.get(PREDICT))


def answers(trace: Trace) -> Answers:
    """The predictions made on `trace` this session."""
    runs = st.session_state.get(RUNS)
    if runs is None:
        runs = st.session_state[RUNS] = weakref.WeakKeyDictionary()
    if trace not in runs:
        runs[trace] = Answers()
    return runs[trace]


def _question(trace: Trace, k: int) -> Question | None:
    return question_before(trace, k, lang())


def score(trace: Trace) -> tuple[int, int]:
    """(right, asked) on `trace`: "I don't know" and "Reveal now" are not answers."""
    right = asked = 0
    for k, chosen in answers(trace).chosen.items():
        q = _question(trace, k)
        if q is None or chosen == REVEALED or chosen == len(q.choices) - 1:
            continue
        asked += 1
        right += chosen == q.answer
    return right, asked


def right_kinds() -> set[str]:
    """The kinds of question answered right this session (any run, any page)."""
    return set(st.session_state.get(RIGHT, ()))


def autoplay_step(run: Run | None, trace: Trace) -> bool:
    """One step of the presenter's autoplay: True when a question now waits, so autoplay stops for the class."""
    step_or_ask(run, trace, run.step if run is not None else trace.forward)
    return answers(trace).asking is not None


def step_or_ask(run: Run | None, trace: Trace, step: Callable[[], None]) -> None:
    """Step, or, with predict on and a question before the next step not yet answered, ask it instead.

    At the end of a live run the stage is executed first (the next step does not exist yet) and the cursor
    put back where it was: the answer reveals it.
    """
    if not on():
        step()
        return
    got = answers(trace)
    if got.asking == trace.cursor + 1:  # the question is on the screen: an answer moves on
        return
    got.asking = None  # (one the cursor has left, by a click handled just before this one)
    before = trace.cursor
    k = before + 1
    executed = trace.at_end
    if executed:
        if run is None:
            return
        step()  # may fail (the error shows), wait at the gate, or not add a step
        if len(trace) <= k or trace.cursor != k:
            return
    if k in got.chosen or _question(trace, k) is None:
        if not executed:
            step()
        return
    trace.goto(before)
    got.asking = k


def hold(trace: Trace, k: int | None) -> None:
    """Hold step `k` of `trace` back from the browser's steps ahead, whatever this page's toggle says (a class's
    question open on a student's page: its answer is the step after), or stop holding (None)."""
    holds = st.session_state.get(HOLDS)
    if holds is None:
        holds = st.session_state[HOLDS] = weakref.WeakKeyDictionary()
    if k is None:
        holds.pop(trace, None)
    else:
        holds[trace] = k


def held(trace: Trace) -> set[int]:
    """The steps the browser must not show ahead of the server: the next one, while its question waits."""
    holds = st.session_state.get(HOLDS)
    if holds is not None and trace in holds:
        return {holds[trace]}
    if not on():
        return set()
    k = trace.cursor + 1
    if k >= len(trace) or k in answers(trace).chosen or _question(trace, k) is None:
        return set()
    return {k}


def withheld(key: str) -> set[int]:
    """`held(trace)` for the controls of `key`, as this run's controls found it (see ahead.py)."""
    return st.session_state.get(f"{key}-predict-held", set())


def _answer(trace: Trace, k: int, choice: int) -> None:
    got = answers(trace)
    got.chosen[k] = choice
    got.asking = None
    got.verdict = k
    q = _question(trace, k)
    if q is not None and choice == q.answer:
        st.session_state.setdefault(RIGHT, set()).add(q.kind)
    trace.goto(k)


def _again(trace: Trace) -> None:
    got = answers(trace)
    got.chosen.clear()
    got.asking = got.verdict = None
    trace.first()


def draw_toggle(trace: Trace, key: str) -> None:
    """The toggle, the run's score and "Predict again", in the row of the controls."""
    widget = f"{key}-predict"
    now = on()  # (a link's ?predict=on taken first); only the toggle's own change turns it, before the run
    st.session_state[widget] = now

    def flip() -> None:
        st.session_state[LINKED] = True  # the learner's choice, now: the URL no longer turns it on
        st.session_state[PREDICT] = st.session_state[widget]
        if not st.session_state[PREDICT]:
            answers(trace).asking = None

    st.toggle(t("Predict, then step"), key=widget, on_change=flip,
              help=t("Before a step that shows something the chapter teaches, Step asks what will happen; "
                     "the step shows once you have answered. Keys 1 to 4 answer."))
    if not now:
        return
    right, asked = score(trace)
    if asked:
        st.markdown(t("**{right} of {asked} right**", right=int(right), asked=int(asked)), width="content")
    if answers(trace).chosen:
        st.button(t("Predict again"), key=f"{key}-predict-again", icon=":material/restart_alt:",
                  on_click=_again, args=(trace,), help=t("Back to the first step, the answers of this run cleared."))


def draw_question(trace: Trace, key: str) -> None:
    """The question waiting before the next step, or the verdict on the step just revealed."""
    st.session_state[f"{key}-predict-held"] = held(trace)  # drawn before the views, which send the steps ahead
    got = answers(trace)
    if got.asking is not None and (not on() or trace.cursor != got.asking - 1):  # moved away: asked no more
        got.asking = None
    if got.verdict is not None and trace.cursor != got.verdict:
        got.verdict = None
    if got.asking is not None:
        _draw_asking(trace, key, got.asking)
    elif got.verdict is not None and got.verdict in got.chosen:
        draw_verdict(trace, key, got.verdict, got.chosen[got.verdict])


def _draw_asking(trace: Trace, key: str, k: int) -> None:
    q = _question(trace, k)
    if q is None:
        return
    big = presenting()
    head = t("Predict before the step shows")
    with st.container(border=True, key=f"{key}-question"):
        st.html(CSS + f'<div class="ls-question{" ls-question-big" if big else ""}" id="ls-question-{key}" data-step="{k}">'
                f'<p class="ls-question-head">{escape(head)}</p>'
                f"{markdown_html(q.question)}</div>")
        with st.container(horizontal=True, gap="small", key=f"{key}-choices"):
            for n, choice in enumerate(q.choices):
                st.button(f"{n + 1}. {choice}", key=f"{key}-choice-{n}", shortcut=str(n + 1) if n < 9 else None,
                          on_click=_answer, args=(trace, k, n))
        if big:  # the class thinks while the bar runs down; the teacher may reveal at once
            st.caption(t(COUNTDOWN_ABOUT, n=COUNTDOWN))  # what the bar is, and what its end does
            st.html(f'<div class="ls-countdown" style="--ls-seconds: {COUNTDOWN}s"><div></div></div>')
            st.button(t("Reveal now"), key=f"{key}-reveal", icon=":material/visibility:",
                      on_click=_answer, args=(trace, k, REVEALED))


def draw_verdict(trace: Trace, key: str, k: int, chosen: int) -> None:
    """The answer to the question before step `k`, right or wrong for `chosen` (REVEALED: none given), and why."""
    q = _question(trace, k)
    if q is None:
        return
    right = q.choices[q.answer]
    if chosen == q.answer:
        said, kind = t("**Right:** {answer}", answer=right), "right"
    elif chosen == REVEALED or chosen == len(q.choices) - 1:
        said, kind = t("**The answer:** {answer}", answer=right), "open"
    else:
        said, kind = t("**Not quite.** You chose {chosen}; the answer is {answer}", chosen=q.choices[chosen],
                       answer=right), "wrong"
        if q.why_wrong(chosen):  # why the choice made is wrong, before why the answer is right
            said += "\n\n" + q.why_wrong(chosen)
    st.html(CSS + f'<div class="ls-verdict ls-verdict-{kind}" id="ls-verdict-{key}" data-verdict="{kind}">'
            f"{markdown_html(said)}{markdown_html(q.why)}</div>")
