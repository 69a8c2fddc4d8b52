"""A follower's page: a student at `/?class=CODE` follows the teacher's step (the teacher's side is classroom.py).

The page draws the class's run at the class's step, in the student's own language, on a copy of its own (Back and
Step move the copy; nothing runs, no key is spent). The server's watcher (wake.py) reruns it, or only its step,
when the class moves; the page's own timer looks at the class only every 30 s, a safety net (`_watch`). A fork or
Break it here on the copy is a step away too, onto a branch of the student's own, in this session only: on the
offline model, or a real model's run with the student's own key, never the teacher's. A follower's page calls
nothing that moves the class, and never lists the teacher's runs.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field, replace
from html import escape

import streamlit as st

from loop.engine.broken import offline_model
from loop.engine.broken import settings_of as settings_in
from loop.engine.fork import continue_from
from loop.engine.model import Model, ModelConfig
from loop.engine.runner import Run, new_workspace
from loop.engine.toolsets import default_toolbox
from loop.engine.trace import Trace
from loop.text.catalogs import N_
from loop.files.classes import CODE_LETTERS
from loop.files.runs import StoreError
from loop.views.questions import question_before

from .browser import this_browser
from .blocks import markdown_html, plain
from .forks import Own, set_own, trace_label
from .i18n import lang, t
from .keep import KEPT
from .predict import REVEALED, draw_verdict, hold
from .settings import unsandboxed_refusal
from . import wake
from .classroom import CLASS, classes, polled_state, read_state, role, wanted_code

FOLLOWING = "class-follower"  # session: a follower's Copy
KEY = "class"  # the step views' key on a follower's page
FALLBACK = 2.0  # seconds between two reads of the class by a page the server cannot wake (see `_watch`)
SAFETY = 30.0  # seconds between two looks at the class by a page the server wakes: its safety net (see `_watch`)
BEAT = 3.0  # seconds between two heartbeats of a follower


@dataclass
class Copy:
    """A follower's own copy of the class's run: its cursor moves with the class while the student follows."""

    code: str
    trace: Trace | None = None
    run_id: str | None = None
    steps: int = -1
    version: int | None = None  # the class's version last taken
    put: int = -1  # the step the class last put the copy on
    following: bool = True
    beat: float = 0.0  # when the last heartbeat went (time.monotonic)
    beat_away: bool | None = None  # what it said
    asked: int | None = None  # the step whose question the class asked last
    chosen: dict | None = None  # step -> this browser's answer to the class's question
    branches: list[Run] = field(default_factory=list)  # the student's own forks and breaks, newest last


def follows() -> bool:
    """?class=CODE in a browser that is not the class's teacher: the page is the class's, nothing else."""
    code = wanted_code()
    return code is not None and role(code) is False


def _copy(code: str) -> Copy:
    s = st.session_state
    copy = s.get(FOLLOWING)
    if copy is None or copy.code != code:
        copy = s[FOLLOWING] = Copy(code)
    return copy


def _take(copy: Copy, state) -> bool:
    """Put the copy where the class is (its run, its step). False: the class's run cannot be read."""
    if copy.trace is None or (copy.run_id, copy.steps) != (state.run_id, state.steps):
        shared = classes().trace(copy.code)
        if shared is None:
            return False
        copy.trace = shared.with_branches(shared.branches)  # the steps shared, a cursor of its own
        copy.run_id, copy.steps = state.run_id, state.steps
    copy.put = copy.trace.goto(state.cursor)
    copy.version = state.version
    return True


def _beat(copy: Copy) -> None:
    """The follower's heartbeat, every few seconds and at once when it steps away or back."""
    away = not copy.following
    if copy.beat_away == away and time.monotonic() - copy.beat < BEAT:
        return
    owner = this_browser()
    if owner is None:
        return
    try:
        classes().seen(copy.code, owner, away)
    except StoreError:
        return
    copy.beat, copy.beat_away = time.monotonic(), away


def _url(copy: Copy) -> None:
    if st.query_params.get(CLASS) != copy.code:
        st.query_params[CLASS] = copy.code
    if copy.trace is not None and copy.trace.cursor >= 0 and st.query_params.get("step") != str(copy.trace.cursor + 1):
        st.query_params["step"] = str(copy.trace.cursor + 1)


def moved(trace: Trace) -> None:
    """The step views' hook on a follower's page: a step the student took is a step away from the class."""
    copy = st.session_state.get(FOLLOWING)
    if copy is None or copy.trace is not trace:
        return
    if copy.asked is not None and trace.cursor != copy.put and _open(copy):  # a question open: no stepping away
        trace.goto(copy.put)
        return
    _url(copy)
    if trace.cursor != copy.put and copy.following:
        copy.following = False
        _beat(copy)
        st.rerun()  # (a click reruns the step's fragment only) the whole page says the student stepped away


def _open(copy: Copy) -> bool:
    try:
        state = classes().state(copy.code)
    except StoreError:
        return False
    return state is not None and state.question is not None and not state.revealed


def _back_to_class() -> None:
    copy = st.session_state.get(FOLLOWING)
    if copy is not None:
        _rejoin(copy)


def _rejoin(copy: Copy) -> None:
    """The copy follows the class again, on the class's run. Its own branches are dropped: the follower's page has
    no branch picker to reach them, each holds a workspace of its own on the server (a class of thirty keeps none
    it cannot show), and the class's run is the lesson the student comes back to."""
    for branch in copy.branches:
        branch.close()
    if copy.branches:
        copy.branches.clear()
        copy.trace = None  # taken again from the class
    copy.following = True
    copy.version = None  # taken again on this run


# Why a student's copy of a real model's run cannot fork: the class's key is the teacher's, and is never spent here.
NO_KEY_OF_YOUR_OWN = N_("This class's run was made with {model}, whose key is the teacher's: a branch of your own "
                        "would need an API key of your own (on Step through, in this tab). Break it here needs none: "
                        "it runs against the offline model.")


def _own_key() -> str | None:
    """The key this student typed on Step through in this tab, if any: never the server's, which a class lends to
    the teacher's run."""
    s = st.session_state
    return (s.get("set-api-key") or s.get(KEPT + "set-api-key") or "").strip() or None


def _own_model(trace: Trace) -> Model | None:
    """The model a branch of the copy goes on with: the offline model for a run made on it (it plays the class's
    scenario, found by its task); for a real model's run, the same model with the student's own key and base URL;
    None without a key of their own."""
    if trace.meta.get("scripted"):
        return offline_model(trace)
    key = _own_key()
    if key is None:
        return None
    s = st.session_state
    base_url = (s.get("set-base-url") or s.get(KEPT + "set-base-url") or "").strip() or None
    config = replace(offline_model(trace).config, model=str(trace.meta.get("model") or ""), api_key=key,
                     base_url=base_url)
    return Model(config)


def _refusal(copy: Copy) -> str | None:
    trace = copy.trace
    if trace.meta.get("scripted"):
        return None
    if _own_key() is None:
        return t(NO_KEY_OF_YOUR_OWN, model=str(trace.meta.get("model") or "?"))
    return unsandboxed_refusal(ModelConfig(model=str(trace.meta.get("model") or "")))


def _base(copy: Copy) -> Run:
    """A run on the copy's trace, at its last step, in a workspace of its own (the teacher's files are not read)."""
    trace = copy.trace
    settings = settings_in(trace)
    tools = default_toolbox(new_workspace(), settings.tool_timeout, settings.toolset or "s01")
    return continue_from(trace, len(trace) - 1, _own_model(trace), tools, settings)


def _adopt(copy: Copy, branch: Run) -> None:
    """A fork or a break on the copy: a step away, onto a branch that lives in this session only."""
    close = getattr(branch.tools, "close", None)
    if callable(close):  # the session's end removes its workspace too
        weakref.finalize(branch, close)
    copy.branches.append(branch)
    copy.trace = branch.trace
    copy.following = False
    _beat(copy)


def _own(copy: Copy) -> Own:
    """What the step views fork and break the copy with (forks.py, breaking.py)."""
    return Own(refusal=lambda: _refusal(copy), base=lambda: _base(copy), adopt=lambda b: _adopt(copy, b),
               paused=lambda: copy.asked is not None and _open(copy),
               family=lambda: [b.trace for b in copy.branches])


def draw_follower() -> None:
    """The class's run at the class's step, on this browser's own copy; or why there is none."""
    from .step import draw_step  # (step.py calls this module's hooks)

    code = wanted_code()
    try:
        state = read_state(code)
    except StoreError as exc:
        st.error(t("The class cannot be read on this server: {error}", error=plain(exc)), icon=":material/error:")
        return
    if state is None or state.ended or not all(c in CODE_LETTERS for c in code):
        st.error(t("No class has the code {code}: it may have ended. Ask your teacher for the code.",
                   code=plain(code[:12])), icon=":material/error:")
        return
    copy = _copy(code)
    if state.question is not None and not state.revealed and not copy.following:  # no stepping away while it is open
        _rejoin(copy)
    if copy.following and (copy.version != state.version or copy.trace is None):
        if not _take(copy, state):
            st.error(t("The class's run cannot be read on this server."), icon=":material/error:")
            return
    elif copy.trace is None:
        copy.following = True
        if not _take(copy, state):
            st.error(t("The class's run cannot be read on this server."), icon=":material/error:")
            return
    _beat(copy)
    _url(copy)
    st.markdown("#### " + t("Class {code}", code=plain(code)))
    if copy.following:
        st.caption(t("You follow the teacher: your page shows the teacher's step. Back and Step move your own "
                     "copy; nothing runs."))
    elif copy.branches:
        st.caption(t("You are on a branch of your own ({branch}): it lives on this page only and the class's run "
                     "is not changed. Back to the class drops it.",
                     branch=trace_label(copy.trace, len(copy.branches))))
    _poll(code)
    _draw_class_question(copy, state)
    if not len(copy.trace):
        st.info(t("The teacher has not taken the first step yet."), icon=":material/hourglass_top:")
        return
    set_own(KEY, _own(copy))  # a fork or Break it here on the copy: the student's own branch
    draw_step(copy.trace, KEY, None, name=f"class-{code}", moved=lambda: moved(copy.trace),
              before=lambda: _sync(copy))


def _choose(copy: Copy, step: int, choice: int) -> None:
    try:
        taken = classes().answer(copy.code, this_browser(), step, choice)
    except StoreError:
        taken = False
    if taken:
        copy.chosen = {**(copy.chosen or {}), step: choice}
    else:
        st.session_state["class-answer-late"] = True


def _draw_class_question(copy: Copy, state) -> None:
    """The class's open question, with the choices this browser answers; once revealed, the answer and why."""
    if state.question is not None:
        copy.asked = state.question
    k = copy.asked
    if k is None or copy.trace is None:
        return
    hold(copy.trace, k if state.question == k and not state.revealed else None)  # Step shows no answer ahead
    chosen = (copy.chosen or {}).get(k)
    if state.question == k and not state.revealed:
        q = question_before(copy.trace, k, lang())
        if q is None:
            return
        head = t("The class's question: predict before the step shows")
        with st.container(border=True, key="classroom-question"):
            st.html(f'<div class="ls-question" id="ls-question-{KEY}" data-step="{k}">'
                    f'<p class="ls-question-head">{escape(head)}</p>'
                    f"{markdown_html(q.question)}</div>")
            with st.container(horizontal=True, gap="small", key="classroom-choices"):
                for n, choice in enumerate(q.choices):
                    st.button(f"{n + 1}. {choice}", key=f"classroom-choice-{n}", on_click=_choose, args=(copy, k, n),
                              type="primary" if chosen == n else "secondary")
            if st.session_state.pop("class-answer-late", False):
                st.warning(t("Too late: the teacher has closed this question."), icon=":material/timer_off:")
            elif chosen is not None:
                st.caption(t("Your answer: {n}. The teacher reveals the answer; you may change yours until then.",
                             n=chosen + 1))
        return
    if state.revealed and state.question == k or copy.trace.cursor == k:  # revealed: the answer, and why
        draw_verdict(copy.trace, KEY, k, REVEALED if chosen is None else chosen)


def _poll(code: str) -> None:
    """The page's last look at the class before it is drawn, and its registration with the server's watcher, which
    reruns the page when the class moves on (wake.py); away, where the class is now."""
    copy = st.session_state.get(FOLLOWING)
    if copy is None:
        return
    try:
        state = polled_state(code)
    except StoreError:
        return
    if state is None or state.ended:
        st.rerun()  # the page says the class has ended
    if state.version != copy.version:
        if copy.following:
            st.rerun()  # the class moved while the page was drawn: it takes the class's step (draw_follower)
        copy.version = state.version  # away: the copy stays where the student put it
    _watch(code, copy, state)
    if copy.following:
        return
    with st.container(horizontal=True, vertical_alignment="center", key="classroom-away"):  # where the class is now
        st.info(t("You stepped away: the class is at step {k}.", k=state.cursor + 1),
                icon=":material/directions_walk:", width="stretch")
        st.button(t("Back to the class"), key="classroom-rejoin", type="primary", icon=":material/group:",
                  on_click=_back_to_class)


def _watch(code: str, copy: Copy, state) -> None:
    """The watcher of this server wakes this page when the class is no longer as `state` (wake.py)."""
    session = wake.session_id()
    if session is None:  # a page the server cannot wake (AppTest; a Streamlit whose sessions are kept otherwise)
        st.fragment(_look, run_every=FALLBACK)(code)
        return
    _watcher().register(session, code, state.version, this_browser(), not copy.following, wake.shape(state))
    # A timer of the page's own, slow, as a safety net. The browser's page asks for a run when its connection comes
    # back only if it has a timer (Streamlit's frontend, `handleConnectionStateChanged`): without one, a student whose
    # Wi-Fi dropped for a moment came back to the same session, forgotten by the watcher meanwhile, and stayed on
    # the old step. It also catches a wake that was lost (a store error in the woken run).
    st.fragment(_look, run_every=SAFETY)(code)


def _watcher() -> wake.Watcher:
    return wake.watcher(read_state, lambda code, followers: classes().seen_many(code, followers), time.monotonic)


def _sync(copy: Copy) -> None:
    """First thing at each run of the step (its fragment's too): the watcher may wake the step alone (wake.py) when
    the class only moved its cursor or recorded more steps; the copy then takes the class's step here, and only
    the step is drawn again (about half the server's work of drawing the whole page, for each student of the
    class). Whatever else changed (the class's run, a question, the end of the class) draws the whole page."""
    session = wake.session_id()
    fragment = wake.fragment_id()
    if session is None or fragment is None or not copy.following or copy.trace is None:
        return
    watching = _watcher()
    watching.inside(session, fragment)  # where the next move of the class is drawn
    if not wake.step_only():  # the whole page's run: it has taken the class's step already
        return
    try:
        state = polled_state(copy.code)
    except StoreError:
        return
    if state is None or state.version == copy.version:
        return
    if state.ended or state.run_id != copy.run_id or state.question is not None or copy.asked is not None:
        st.rerun()  # the whole page: the class's run, its question or its end
    if state.steps != copy.steps:  # the teacher's step executed a stage: the copy takes the longer run, in place
        longer = classes().trace(copy.code)
        if longer is None or len(longer) < state.steps:
            st.rerun()  # (the page says why it cannot be read)
        copy.trace.take(longer)
        copy.steps = state.steps
    copy.put = copy.trace.goto(state.cursor)
    copy.version = state.version
    _url(copy)
    watching.drew(session, state.version)


def _look(code: str) -> None:
    """The page's own timer: every FALLBACK seconds on a page the server cannot wake, every SAFETY seconds on one it
    wakes. The page is drawn again if it is not where the class is (its copy's version is the class's it last took,
    by a whole run or by the step alone)."""
    copy = st.session_state.get(FOLLOWING)
    try:
        state = polled_state(code)
    except StoreError:
        return
    if copy is None or state is None or state.ended or state.version != copy.version:
        st.rerun()
