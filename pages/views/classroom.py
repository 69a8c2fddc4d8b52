"""A class: the students' browsers follow the teacher's step (the class itself is loop/files/classes.py's).

The teacher, in presenter mode, starts a class: a short code, a link `/?class=CODE` and its QR code, drawn
large. Each cursor move of the teacher's live run is saved (runs.py `autosave`) and then shown to the class
(`Classes.show`), from the step's `changed()` hook (step.py). A browser that opens the link and is not the
class's teacher follows: it draws the class's run at the class's step, in its own language, on a copy of its own
(Back and Step move the copy; nothing runs, no key is spent). The page polls nothing: the server's watcher
(wake.py) reruns it when the class moves.
A fork or Break it here on the copy is a step away too, onto a branch of the student's own, in this session only:
on the offline model, or a real model's run with the student's own key, never the teacher's.
The teacher is known by the signed browser id (browser.py), never by anything in the URL: a follower's page
calls nothing that moves the class, and it never lists the teacher's saved runs.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import weakref
from dataclasses import dataclass, field, replace
from html import escape
from urllib.parse import urlsplit

import segno
import streamlit as st

from loop.engine.broken import offline_model
from loop.engine.broken import settings_of as settings_in
from loop.engine.fork import continue_from
from loop.engine.model import Model, ModelConfig
from loop.engine.runner import Run, new_workspace
from loop.engine.toolsets import default_toolbox
from loop.engine.trace import Trace
from loop.text.catalogs import N_
from loop.files.classes import CODE_LETTERS, Classes, NotTeacher, Summary
from loop.files.runs import StoreError, new_run_id
from loop.views.questions import question_before

from .address import PUBLIC_URL_VARIABLE, ClassLink, class_link, is_loopback, listens_beyond_loopback, machine_addresses
from .browser import store, this_browser
from .blocks import inline_code, markdown_html
from .forks import Own, set_own, trace_label
from .i18n import lang, t
from .keep import KEPT
from .predict import REVEALED, answers, draw_verdict, hold
from .predict import on as predict_on
from .presenter import PRESENT
from .runs import SAVED, autosave, current_run_id, resume, settings_of
from .settings import _keep, unsandboxed_refusal
from . import wake

CLASS = "class"  # the query parameter: ?class=CODE
ROLE = "class-role"  # session: (code, whether this browser teaches it), decided once a code
TEACHING = "class-teaching"  # session: the code of the class this browser teaches, while it is open
SHOWN = "class-shown"  # session: (run_id, steps, cursor) the class was last shown
ASKED = "class-asked"  # session: the step whose question the teacher's page opened for the class
SMALL = "class-small"  # session: the teacher hid the QR code and the link (the code stays)
ENDED = "class-ended"  # session: (Summary, CSV) of the class this browser just ended
FOLLOWING = "class-follower"  # session: a follower's Copy
KEY = "class"  # the step views' key on a follower's page
FALLBACK = 2.0  # seconds between two reads of the class by a page the server cannot wake (see `_watch`)
FRESH = 0.1  # seconds one read of a class answers every follower's page on this server (see `_polled`)
BEAT = 3.0  # seconds between two heartbeats of a follower
ATTENDANCE = 3.0  # seconds between two counts of the followers on the teacher's page
COUNTS = 1.0  # seconds between two counts of the class's answers on the teacher's page


def classes() -> Classes:
    """The classes in the server's runs store (their cache of the class's run is the process's, not the object's)."""
    return Classes(store())


# The last state read of each class, by (store, code): (time.monotonic(), state). 30 followers on a server poll
# 60 times a second; each read is a transaction under the store's process-wide lock, and on PostgreSQL a round
# trip to the database's process: on a busy machine the polls queued behind one another and behind the pages
# being drawn. One read now answers the polls of the next FRESH seconds, whoever sends them.
_states: dict[tuple[str, str], tuple[float, object]] = {}
_states_lock = threading.Lock()
_clock = time.monotonic  # (a test stops it)


def _read(code: str):
    """The class's state, read now (a page drawn after the class moved must show where it is); it also answers
    the polls of the next FRESH seconds."""
    found = classes()
    state = found.state(code)
    key = (found.store.database.name, code)
    with _states_lock:
        last = _states.get(key)
        if state is None or last is None or last[1] is None or state.version >= last[1].version:  # never older
            _states[key] = (_clock(), state)
        if len(_states) > 1000:  # classes long gone
            _states.clear()
    return state


def _polled(code: str):
    """The class's state for a poll: a read of the last FRESH seconds, by any page of this server, or a new one."""
    key = (classes().store.database.name, code)
    with _states_lock:
        last = _states.get(key)
    if last is not None and _clock() - last[0] < FRESH:
        return last[1]
    return _read(code)


def wanted_code() -> str | None:
    """The code in the URL, as typed (a student may type it in lowercase)."""
    code = (st.query_params.get(CLASS) or "").strip().upper()
    return code or None


def _role(code: str) -> bool | None:
    """Whether this browser teaches the class `code` (None: no browser id, so neither)."""
    s = st.session_state
    if s.get(ROLE) and s[ROLE][0] == code:
        return s[ROLE][1]
    owner = this_browser()
    if owner is None:
        return None
    try:
        teaches = classes().of_teacher(owner) == code
    except StoreError:
        return None
    s[ROLE] = (code, teaches)
    return teaches


# -- the teacher's page ------------------------------------------------------------------------------------------

def rejoin(run: Run | None) -> None:
    """The teacher's reload at ?class=CODE (call before the sidebar is drawn): the class, its run and its step
    come back, in presenter mode."""
    s = st.session_state
    code = wanted_code()
    if code is None or s.get(TEACHING) == code or not _role(code):
        return
    try:
        state = classes().state(code)
    except StoreError:
        return
    if state is None or state.ended:
        return
    s[TEACHING] = code
    s[PRESENT] = True
    if current_run_id() != state.run_id or run is None:
        writer = secrets.token_urlsafe(12)  # this tab writes the run from now on
        try:
            run = resume(state.run_id, writer)
        except Exception as exc:  # the run cannot be read, or needs a key this session has not given
            s["saved-runs-error"] = t("The run {run_id} cannot be resumed: {error}", run_id=state.run_id, error=exc)
            return
        _keep(run)
        s[SAVED] = (run, state.run_id, run.trace.cursor, len(run.trace), writer)
    run.trace.goto(state.cursor)
    s[SAVED] = (*s[SAVED][:2], run.trace.cursor, *s[SAVED][3:])
    s[SHOWN] = (state.run_id, len(run.trace), run.trace.cursor)


def _saved_id(run: Run) -> str:
    """The run id under which `run` is saved now, saving it first if it is not (a run opened by a link, or with
    no step yet, is saved only once the teacher goes further: a class needs it now)."""
    autosave(run)
    run_id = current_run_id()
    if run_id is not None:
        return run_id
    s = st.session_state
    saved = s.get(SAVED)
    writer = saved[4] if saved and saved[0] is run else secrets.token_urlsafe(12)
    run_id = new_run_id()
    store().save(this_browser(), run_id, run.trace, settings_of(run), writer=writer)
    s[SAVED] = (run, run_id, run.trace.cursor, len(run.trace), writer)
    return run_id


def shown(run: Run, counts: bool = True) -> None:
    """Show the class the teacher's step, when it changed (after every click, once the run is saved); with
    `counts`, where the step's controls are drawn, the class's answers to the question open."""
    s = st.session_state
    code = s.get(TEACHING)
    owner = this_browser()
    if code is None or owner is None:
        return
    try:
        run_id = _saved_id(run)
        now = (run_id, len(run.trace), run.trace.cursor)
        got = answers(run.trace)
        asking = got.asking if predict_on() else None
        asked = s.get(ASKED)
        if asked is not None and asked != asking:  # the teacher answered it, or Reveal now: the class sees why
            if asked in got.chosen and run.trace.cursor == asked:
                classes().reveal(code, owner)
            s.pop(ASKED, None)
        if s.get(SHOWN) != now:
            classes().show(code, owner, *now)  # (a move closes the class's question)
            s[SHOWN] = now
        if asking is not None and asked != asking:  # the teacher's question is the class's too
            q = question_before(run.trace, asking, lang())
            classes().ask(code, owner, asking, q.kind if q is not None else "")
            s[ASKED] = asking
        if asking is not None and counts:  # the count for each choice, as the class answers (drawn above the question)
            st.fragment(_draw_counts, run_every=COUNTS)(code, asking)
    except NotTeacher:  # ended in another tab of this browser
        _forget()
    except (StoreError, OSError) as exc:
        st.toast(t("The class could not be shown this step: {error}", error=exc), icon=":material/warning:")


def _draw_counts(code: str, step: int) -> None:
    try:
        counts = classes().counts(code, step)
    except StoreError:
        return
    said = " · ".join(f"**{choice + 1}.** {n}" for choice, n in sorted(counts.items())) or "—"
    st.markdown(t("The class's answers: {counts} (of {n})", counts=said, n=sum(counts.values())),
                width="content")


def _forget() -> None:
    s = st.session_state
    s.pop(TEACHING, None)
    s.pop(SHOWN, None)
    s.pop(ASKED, None)
    s.pop(ROLE, None)
    st.query_params.pop(CLASS, None)


def _start(run: Run, present: bool = False) -> None:
    s = st.session_state
    owner = this_browser()
    if owner is None:  # no browser id: the store cannot be opened here
        s["class-error"] = t("The class cannot start: {error}", error=s.get("saved-runs-error", ""))
        return
    try:
        run_id = _saved_id(run)
        code = classes().start(owner, run_id, len(run.trace), run.trace.cursor)
    except (StoreError, OSError) as exc:
        s["class-error"] = t("The class cannot start: {error}", error=exc)
        return
    s.pop("class-error", None)
    s.pop(ENDED, None)
    s[TEACHING] = code
    s[ROLE] = (code, True)
    s[SHOWN] = (run_id, len(run.trace), run.trace.cursor)
    st.query_params[CLASS] = code
    if present:  # a class is taught in presenter mode: the code, its link and its QR code large
        s[PRESENT] = True


def _end(code: str) -> None:
    s = st.session_state
    owner = this_browser()
    try:
        answers = classes().answers_csv(code, owner)
        summary = classes().end(code, owner)
    except NotTeacher:
        _forget()
        return
    except (StoreError, OSError) as exc:
        s["class-error"] = t("The class cannot end: {error}", error=exc)
        return
    s[ENDED] = (summary, answers)
    _forget()


def draw_start(run: Run, labelled: bool = False) -> None:
    """Start a class, while this browser teaches none: beside Play in presenter mode (an icon: the presenter's row
    must stay one row, or the history loses its room), or `labelled` beside the title, where it turns presenter
    mode on too."""
    if st.session_state.get(TEACHING) is not None:
        return
    about = t("Start a class: a short code and a link; the students' browsers follow your step, in their own "
              "language.")
    if labelled:
        st.button(t("Start a class"), key="classroom-start", icon=":material/groups:", on_click=_start,
                  args=(run, True), help=about)
    else:
        st.button(":material/groups:", key="classroom-start", on_click=_start, args=(run,), help=about)


def class_address(code: str) -> ClassLink:
    """The link a student opens, `/?class=CODE` at an address students reach (pages/views/address.py), and why
    they may not reach it."""
    url, public = str(st.context.url or ""), os.environ.get(PUBLIC_URL_VARIABLE)
    machine = []  # looked for only when the teacher's address is this machine's alone, and others reach the server
    if not public and is_loopback(urlsplit(url).hostname) and listens_beyond_loopback(st.get_option("server.address")):
        machine = machine_addresses()
    return class_link(code, url, public, machine)


def link(code: str) -> str:
    """The link a student opens: this server's address (one students reach) with ?class=CODE."""
    return class_address(code).url


def qr_html(text: str, box: str) -> str:
    """A QR code of `text`, drawn by segno as inline SVG (nothing fetched); a one-line script puts it in place, as
    the loop diagram's (st.html's sanitiser drops SVG)."""
    picture = segno.make(text, error="m").svg_inline(scale=5, border=2, dark="#000", light="#fff")
    code = json.dumps(picture).replace("<", "\\u003c")
    return (f'<div class="ls-class-qr" id="{box}"></div>'
            f'<script>document.getElementById("{box}").innerHTML = {code};</script>')


def draw_teacher(run: Run) -> None:
    """The class this browser teaches: its code, link and QR code, who follows, End class; or the summary of the
    class just ended."""
    s = st.session_state
    if s.get("class-error"):
        st.error(s.pop("class-error"), icon=":material/error:")
    if s.get(ENDED):
        _draw_summary(*s[ENDED])
    code = s.get(TEACHING)
    if code is None:
        return
    if st.query_params.get(CLASS) != code:  # back from another page: the URL says the class again
        st.query_params[CLASS] = code
    shown(run, counts=False)  # a New run or a resume: the class sees it
    found = class_address(code)
    address = found.url
    label = t("Class code")
    big = not st.session_state.get(SMALL)  # large while the class joins; hidden, the step gets the room back
    with st.container(horizontal=True, vertical_alignment="center", gap="medium", key="classroom-bar"):
        if big:
            st.html(qr_html(address, "ls-class-qr"), unsafe_allow_javascript=True, width="content")
        size = "3rem" if big else "1.4rem"
        st.html(f'<div class="ls-class-code" id="ls-class-code" data-code="{escape(code)}">'
                + (f'<div style="font-size: 1rem; opacity: 0.7">{escape(label)}</div>' if big else "")
                + f'<div style="font-size: {size}; font-weight: 700; letter-spacing: 0.3rem; line-height: 1.1">'
                f"{escape(code)}</div>"
                + (f'<div style="font-size: 1.1rem"><code>{escape(address)}</code></div>' if big else "")
                + "</div>", width="content")
        st.fragment(_draw_attendance, run_every=ATTENDANCE)(code)
        st.button(t("Hide the QR code") if big else t("Show the QR code"), key="classroom-size",
                  icon=":material/qr_code:", on_click=_resize)
        st.button(t("End class"), key="classroom-end", icon=":material/stop_circle:", on_click=_end, args=(code,),
                  help=t("The code stops working; you get a summary of the class and its answers."))
    if big and found.note is not None:  # the link reaches this computer's network, or this computer alone
        st.caption(found.note.render(lang(), data=inline_code), width="stretch")


def _resize() -> None:
    st.session_state[SMALL] = not st.session_state.get(SMALL)


def _draw_attendance(code: str) -> None:
    try:
        following, away = classes().attendance(code, this_browser())
    except (StoreError, NotTeacher):
        return
    st.markdown(t("**{n} following** · {m} away", n=following, m=away), width="content")


def _draw_summary(summary: Summary, answers: str) -> None:
    with st.container(border=True, key="classroom-summary"):
        st.markdown(t("**Class {code} ended.** Browsers that followed it: {n}.", code=summary.code,
                      n=summary.followers))
        steps = ", ".join(str(k + 1) for k in summary.steps_shown) or "—"
        st.markdown(t("Steps shown: {steps}", steps=steps))
        for step, counts in sorted(summary.questions.items()):
            said = ", ".join(f"{choice + 1}: {n}" for choice, n in sorted(counts.items())) or "—"
            st.markdown(t("Question before step {k}: {counts}", k=step + 1, counts=said))
        with st.container(horizontal=True, gap="small"):
            st.download_button(t("Answers (CSV)"), data=answers, file_name=f"loopscope-class-{summary.code}.csv",
                               mime="text/csv", key="classroom-csv", icon=":material/download:", on_click="ignore")
            st.button(t("Close"), key="classroom-close", on_click=lambda: st.session_state.pop(ENDED, None))


# -- a follower's page -------------------------------------------------------------------------------------------

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
    return code is not None and _role(code) is False


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
        state = _read(code)
    except StoreError as exc:
        st.error(t("The class cannot be read on this server: {error}", error=exc), icon=":material/error:")
        return
    if state is None or state.ended or not all(c in CODE_LETTERS for c in code):
        st.error(t("No class has the code {code}: it may have ended. Ask your teacher for the code.",
                   code=code[:12]), icon=":material/error:")
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
    st.markdown("#### " + t("Class {code}", code=code))
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
        state = _polled(code)
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
        st.fragment(_fallback, run_every=FALLBACK)(code, state.version)
        return
    _watcher().register(session, code, state.version, this_browser(), not copy.following, wake.shape(state))


def _watcher() -> wake.Watcher:
    return wake.watcher(_read, lambda code, followers: classes().seen_many(code, followers), time.monotonic)


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
        state = _polled(copy.code)
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


def _fallback(code: str, drawn: int) -> None:
    """Every few seconds, on a page the server cannot wake: the page is drawn again when the class moved."""
    try:
        state = _polled(code)
    except StoreError:
        return
    if state is None or state.ended or state.version != drawn:
        st.rerun()
