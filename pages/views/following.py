"""A follower's page: a student at `/?class=CODE` follows the teacher's step (the teacher's side is classroom.py).

The page draws the class's run at the class's step, in the student's own language, on a copy of its own (Back and
Step move the copy; nothing runs, no key is spent). Where the student is (following, away, a question open,
answered, revealed, ended) is loop/classroom/follower.py's `Follower`: every event (the class as read, the student's
move, a branch, Back to the class, an answer) is one of its transitions, and this page only turns each into what
it says: take the class's step, undo a move, drop the branches, draw the step or the whole page again, say a word.

The server's watcher (wake.py) reruns the page, or only its step, when the class moves; the page's own timer looks
at the class only every 30 s, a safety net (`_watch`). A fork or Break it here on the copy is a step away too, onto
a branch of the student's own, in this session only (loop/classroom/branches.py keeps them bounded): on the offline
model, or a real model's run with the student's own key, never the teacher's. A follower's page calls nothing that
moves the class, and never lists the teacher's runs.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field, replace
from html import escape

import streamlit as st

from loop.classroom import follower as said
from loop.classroom.branches import Branches
from loop.classroom.follower import Follower, Phase, Redraw, Transition
from loop.classroom.language import accepted
from loop.classroom.limits import CODE_TRIES, CODE_TRIES_A_MINUTE
from loop.engine.broken import offline_model
from loop.engine.broken import settings_of as settings_in
from loop.engine.fork import continue_from
from loop.engine.model import Model, ModelConfig
from loop.engine.runner import Run, new_workspace
from loop.engine.toolsets import default_toolbox
from loop.engine.trace import Trace
from loop.files.classes import CODE_LETTERS, Answered, ClassState, Joined, max_followers
from loop.files.runs import StoreError
from loop.text.catalogs import N_, languages
from loop.views.questions import question_before

from .browser import address as browser_address
from .browser import refused_id, this_browser
from .blocks import markdown_html, plain
from .forks import Own, set_own, trace_label
from .i18n import LANG, lang, t
from .keep import KEPT
from .predict import REVEALED, draw_verdict, hold
from .settings import unsandboxed_refusal
from . import internals, script_run, wake
from .classroom import CLASS, FRESH, classes, role, wanted_code

FOLLOWING = "class-follower"  # session: a follower's Copy
KEY = "class"  # the step views' key on a follower's page
LOCKED = f"{KEY}-locked"  # session: why First, Back and Step do not move the copy now (controls.py), or None
FALLBACK = 2.0  # seconds between two reads of the class by a page the server cannot wake (see `_watch`)
SAFETY = 30.0  # seconds between two looks at the class by a page the server wakes: its safety net (see `_watch`)
BEAT = 3.0  # seconds between two heartbeats of a follower

NO_CLASS = N_("No class has the code {code}: it may have ended. Ask your teacher for the code.")
CLASS_ENDED = N_("The class {code} has ended.")
TOO_MANY_CODES = N_("Too many wrong class codes from your network: at most {n} a minute. Check the code with your "
                    "teacher, then try again in {seconds} s.")
FULL = N_("This class is full: it holds {n} browsers at once. Ask your teacher; a place frees when someone leaves.")
RUN_LANGUAGE = N_("The task and the model's words stay in {language}, the language of the teacher's run; the rest of "
                  "this page is in yours.")


@dataclass
class Copy:
    """A follower's own copy of the class's run, and where the follower is (`follower`)."""

    follower: Follower
    trace: Trace | None = None
    run: tuple[str | None, int] = (None, -1)  # the class's (run, steps) the copy's trace holds
    branches: Branches = field(default_factory=Branches)  # the student's own forks and breaks, newest last
    beat: float = 0.0  # when the last heartbeat went (time.monotonic)
    beat_away: bool | None = None  # what it said

    @property
    def code(self) -> str:
        return self.follower.code

    @property
    def following(self) -> bool:
        return self.follower.phase is not Phase.AWAY


def follows() -> bool:
    """?class=CODE in a browser that is not the class's teacher: the page is the class's, nothing else (a browser
    with no id yet, too, whose page says why it cannot follow)."""
    code = wanted_code()
    return code is not None and role(code) is not True


def accept_language() -> None:
    """A student's first page in the language their browser asks for (Accept-Language), unless the address names
    one: called before the page's language is first read (app.py)."""
    if LANG in st.session_state or st.query_params.get(LANG) or not st.query_params.get(CLASS):
        return
    known = languages()
    wanted = accepted(st.context.headers.get("Accept-Language"), known) or accepted(st.context.locale, known)
    if wanted is not None and wanted != "en":
        st.query_params[LANG] = wanted  # (taken by i18n.follow_url, and kept in the address as a chosen one is)


# -- turning a transition into what it says ------------------------------------------------------------------------
def _apply(copy: Copy, done: Transition) -> bool:
    """Do what `done` says to the copy: drop its branches, take the class's step, undo the student's move. False: the
    class's run cannot be read."""
    f = copy.follower
    if done.drop and len(copy.branches):
        copy.branches.close()
        copy.trace = None  # taken again from the class
    if done.take or copy.trace is None:
        if copy.trace is None or copy.run != (f.run_id, f.steps):
            if not _load(copy):
                return False
        copy.trace.goto(f.put)
    if done.undo:
        copy.trace.goto(f.at)
    return True


def _load(copy: Copy) -> bool:
    """The copy takes the class's run as it is now (its steps shared, a cursor of its own)."""
    f = copy.follower
    shared = classes().trace(copy.code, ended_too=f.phase is Phase.ENDED)
    if shared is None:
        return False
    if copy.trace is not None and not len(copy.branches) and copy.run[0] == f.run_id and len(shared) >= len(copy.trace):
        copy.trace.take(shared)  # the same run, recorded further: in place, as the step views hold it
    else:
        copy.trace = shared.with_branches(shared.branches)
    copy.run = (f.run_id, f.steps)
    return True


def _copy(code: str) -> Copy | None:
    copy = st.session_state.get(FOLLOWING)
    return copy if copy is not None and copy.code == code else None


def _new_copy(code: str) -> Copy:
    copy = Copy(Follower(code))
    weakref.finalize(copy, copy.branches.close)  # the session's end removes the branch's workspace too
    old = st.session_state.get(FOLLOWING)
    if old is not None:
        old.branches.close()
    st.session_state[FOLLOWING] = copy
    return copy


def _beat(copy: Copy) -> None:
    """The follower's heartbeat, every few seconds and at once when it steps away or back."""
    away = not copy.following
    if copy.follower.phase is Phase.ENDED or copy.beat_away == away and time.monotonic() - copy.beat < BEAT:
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
    """The step views' hook on a follower's page: a step the student took (the follower says whether it may)."""
    copy = st.session_state.get(FOLLOWING)
    if copy is None or copy.trace is not trace:
        return
    done = copy.follower.moved(trace.cursor)
    _apply(copy, done)
    if done.said is not None:  # (drawn in the step's feedback, above its question)
        st.info(t(done.said), icon=":material/front_hand:")
    _url(copy)
    if done.after is not done.before:
        _beat(copy)
        st.rerun()  # (a click reruns the step's fragment only) the whole page says the student stepped away


def _back_to_class() -> None:
    copy = st.session_state.get(FOLLOWING)
    if copy is not None:
        _apply(copy, copy.follower.back())


def _choose(copy: Copy, step: int, choice: int) -> None:
    try:
        result = classes().answer(copy.code, this_browser(), step, choice)
    except StoreError:
        result = Answered.CLOSED
    copy.follower.answered(step, choice, result)


# -- a branch of the student's own --------------------------------------------------------------------------------
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
    """A fork or a break on the copy: a step away, onto a branch that lives in this session only (the one it
    leaves is closed: loop/classroom/branches.py)."""
    copy.branches.add(branch)
    copy.trace = branch.trace
    copy.follower.branched()
    _beat(copy)


def _own(copy: Copy) -> Own:
    """What the step views fork and break the copy with (forks.py, breaking.py)."""
    return Own(refusal=lambda: _refusal(copy), base=lambda: _base(copy), adopt=lambda b: _adopt(copy, b),
               paused=lambda: not copy.follower.may_branch(), family=copy.branches.traces)


# -- the page -------------------------------------------------------------------------------------------------------
def draw_follower() -> None:
    """The class's run at the class's step, on this browser's own copy; or why there is none."""
    from .step import draw_step  # (step.py calls this module's hooks)

    code = wanted_code()
    copy = _copy(code)
    address = browser_address()  # (what its requests count under: loop/classroom/limits.py)
    if copy is None and (wait := CODE_TRIES.left(address)) > 0:  # guessing codes: no look at the store either
        st.warning(t(TOO_MANY_CODES, n=int(CODE_TRIES_A_MINUTE), seconds=int(max(1, round(wait)))), icon=":material/timer:")
        return
    try:
        state = classes().state(code)
    except StoreError as exc:
        st.error(t("The class cannot be read on this server: {error}", error=plain(exc)), icon=":material/error:")
        return
    if copy is None and not _join(code, state, address):
        return
    copy = _copy(code) or _new_copy(code)
    if not _apply(copy, copy.follower.heard(state)):
        st.error(t("The class's run cannot be read on this server."), icon=":material/error:")
        return
    screen = copy.follower.screen()
    _beat(copy)
    _url(copy)
    st.markdown("#### " + t("Class {code}", code=plain(code)))
    if screen.phase is Phase.ENDED:
        st.info(t(said.ENDED), icon=":material/event_available:")
    elif screen.caption is not None:
        st.caption(t(screen.caption))
    if copy.branches and screen.phase is Phase.AWAY:
        st.caption(t("You are on a branch of your own ({branch}): it lives on this page only and the class's run "
                     "is not changed. Back to the class drops it.",
                     branch=trace_label(copy.trace, len(copy.branches))))
    _draw_run_language(copy.trace)
    if screen.note is not None and screen.note not in (said.ANSWER_FIRST, said.NOT_BEFORE_REVEAL):  # (said by the step)
        st.info(t(screen.note), icon=":material/campaign:")
    _watch(code, copy, screen.watch)
    if screen.away is not None:
        with st.container(horizontal=True, vertical_alignment="center", key="classroom-away"):  # where the class is
            st.info(t(said.STEPPED_AWAY, k=screen.away + 1), icon=":material/directions_walk:", width="stretch")
            st.button(t("Back to the class"), key="classroom-rejoin", type="primary", icon=":material/group:",
                      on_click=_back_to_class)
    _draw_class_question(copy, screen)
    st.session_state[LOCKED] = t(screen.locked) if screen.locked else None
    if not len(copy.trace):
        st.info(t("The teacher has not taken the first step yet."), icon=":material/hourglass_top:")
        return
    set_own(KEY, _own(copy))  # a fork or Break it here on the copy: the student's own branch
    draw_step(copy.trace, KEY, None, name=f"class-{code}", moved=lambda: moved(copy.trace),
              before=lambda: _sync(copy))


def _join(code: str, state: ClassState | None, address: str) -> bool:
    """A browser new to the class: whether it may follow it, else why not, said."""
    if state is None or not all(c in CODE_LETTERS for c in code):
        CODE_TRIES.take(address)  # a wrong code: counted against the address
        st.error(t(NO_CLASS, code=plain(code[:12])), icon=":material/error:")  # (the address's words: text only)
        return False
    if state.ended:
        st.info(t(CLASS_ENDED, code=plain(code)), icon=":material/event_available:")
        return False
    owner = this_browser()
    if owner is None:  # no id for this browser: too many new ones from its address, or the store cannot be opened
        st.warning(plain(refused_id()) if refused_id() else t(
            "The class cannot be read on this server: {error}",
            error=plain(st.session_state.get("saved-runs-error", ""))), icon=":material/timer:")
        return False
    try:
        joined = classes().join(code, owner)
    except StoreError as exc:
        st.error(t("The class cannot be read on this server: {error}", error=plain(exc)), icon=":material/error:")
        return False
    if joined is Joined.FULL:
        st.warning(t(FULL, n=int(max_followers())), icon=":material/group_off:")
        return False
    if joined is Joined.GONE:
        st.info(t(CLASS_ENDED, code=plain(code)), icon=":material/event_available:")
        return False
    return True


def _draw_run_language(trace: Trace) -> None:
    """Where the student reads the page in a language other than the run's: the run's words stay as recorded."""
    run_lang = str(trace.meta.get("lang") or "en")
    if run_lang != lang():
        name = languages().get(run_lang, run_lang)
        st.caption(t(RUN_LANGUAGE, language=plain(name)))


def _draw_class_question(copy: Copy, screen) -> None:
    """The class's open question, with the choices this browser answers; once revealed, the answer and why."""
    hold(copy.trace, screen.hold)  # Step shows no answer ahead
    if screen.question is not None:
        k = screen.question
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
                              type="primary" if screen.chosen == n else "secondary")
            if screen.locked:
                st.caption(t(screen.locked))
            if screen.chosen is not None:
                st.caption(t("Your answer: {n}. The teacher reveals the answer; you may change yours until then.",
                             n=screen.chosen + 1))
        return
    if screen.verdict is not None and copy.trace.cursor == screen.verdict:  # revealed: the answer, and why
        draw_verdict(copy.trace, KEY, screen.verdict, REVEALED if screen.chosen is None else screen.chosen)


def _watch(code: str, copy: Copy, watching: bool) -> None:
    """The watcher of this server wakes this page when the class is no longer as the follower last heard it
    (wake.py); once the class has ended, nothing does."""
    session = internals.session_id()
    if not watching:
        if session is not None:
            _watcher().forget(session)
        return
    if session is None:  # a page the server cannot wake (AppTest; a Streamlit whose sessions are kept otherwise)
        script_run.fragment(_look, run_every=FALLBACK)(code)
        return
    f = copy.follower
    drawn = ClassState(code, f.run_id, f.steps, f.cursor, f.version, f.question if f.open else None, False, False)
    _watcher().register(session, code, f.version, this_browser(), not copy.following, wake.shape(drawn))
    # A timer of the page's own, slow, as a safety net. The browser's page asks for a run when its connection comes
    # back only if it has a timer (Streamlit's frontend, `handleConnectionStateChanged`): without one, a student whose
    # Wi-Fi dropped for a moment came back to the same session, forgotten by the watcher meanwhile, and stayed on
    # the old step. It also catches a wake that was lost (a store error in the woken run).
    script_run.fragment(_look, run_every=SAFETY)(code)


def _watcher() -> wake.Watcher:
    return wake.watcher(lambda code: classes().state(code), lambda code, followers: classes().seen_many(code, followers),
                        time.monotonic)


def _sync(copy: Copy) -> None:
    """First thing at each run of the step (its fragment's too): the watcher may wake the step alone (wake.py) when
    the class only moved its cursor or recorded more steps; the copy then takes the class's step here, and only
    the step is drawn again (about half the server's work of drawing the whole page, for each student of the
    class). Whatever else the follower says changed draws the whole page."""
    session = internals.session_id()
    fragment = internals.fragment_id()
    if session is None or fragment is None or copy.trace is None:
        return
    watching = _watcher()
    watching.inside(session, fragment)  # where the next move of the class is drawn
    if not script_run.alone():  # the whole page's run: it has heard the class already
        return
    _hear(copy, session)


def _hear(copy: Copy, session: str | None) -> None:
    """The class as this server last read it, heard by the follower: the step taken here, or the whole page drawn."""
    try:
        state = classes().state(copy.code, fresh=FRESH)
    except StoreError:
        return
    done = copy.follower.heard(state)
    if done.redraw is Redraw.NOTHING:
        return
    if not _apply(copy, done) or done.redraw is Redraw.PAGE:
        st.rerun()  # the whole page: its question, a branch dropped, the end of the class (or why it cannot be read)
    _url(copy)
    if session is not None:
        _watcher().drew(session, copy.follower.version)


def _look(code: str) -> None:
    """The page's own timer: every FALLBACK seconds on a page the server cannot wake, every SAFETY seconds on one it
    wakes. The page is drawn again if the class is not where the follower last heard it."""
    copy = _copy(code)
    if copy is None:
        st.rerun()
    try:
        state = classes().state(code, fresh=FRESH)
    except StoreError:
        return
    done = copy.follower.heard(state)
    if done.redraw is not Redraw.NOTHING:
        _apply(copy, done)
        st.rerun()  # the whole page draws what the follower heard
