"""A class: the students' browsers follow the teacher's step (the class itself is loop/files/classes.py's).

The teacher, in presenter mode, starts a class: a short code, a link `/?class=CODE` and its QR code, drawn
large. Each cursor move of the teacher's live run is saved (runs.py `autosave`) and then shown to the class
(`Classes.show`), from the step's `changed()` hook (step.py). A browser that opens the link and is not the
class's teacher follows (following.py): the class's run at the class's step, in its own language, on a copy of its
own. This module also tells who teaches the class, and draws the class's answers (`counts_html`): live under the
teacher's question, kept with the right answer marked after Reveal until the next step, and in the summary.
The teacher is known by the signed browser id (browser.py), never by anything in the URL: a follower's page
calls nothing that moves the class, and it never lists the teacher's saved runs.
"""

from __future__ import annotations

import json
import os
import secrets
from html import escape
from urllib.parse import urlsplit

import segno
import streamlit as st

from loop.classroom.summary import Tally, answers_csv, tallies, tally
from loop.engine.runner import Run
from loop.engine.trace import Trace
from loop.files.classes import EXPIRES, Classes, Ended, NotTeacher, Summary, normal_code
from loop.files.runs import StoreError, new_run_id
from loop.text.catalogs import N_
from loop.views.questions import question_before

from .address import PUBLIC_URL_VARIABLE, ClassLink, class_link, is_loopback, listens_beyond_loopback, machine_addresses
from .browser import store, this_browser
from .blocks import inline_code, markdown_html, plain
from .i18n import lang, t
from .predict import answers
from .predict import on as predict_on
from .presenter import PRESENT
from .runs import SAVED, autosave, current_run_id, resume, settings_of
from .script_run import fragment
from .settings import _keep

CLASS = "class"  # the query parameter: ?class=CODE
ROLE = "class-role"  # session: (code, whether this browser teaches it), decided once a code
TEACHING = "class-teaching"  # session: the code of the class this browser teaches, while it is open
SHOWN = "class-shown"  # session: (run_id, steps, cursor) the class was last shown
ASKED = "class-asked"  # session: the step whose question the teacher's page opened for the class
REVEALED_AT = "class-revealed"  # session: the step whose question the teacher just revealed: its counts stay on it
SMALL = "class-small"  # session: the teacher hid the QR code and the link (the code stays)
ENDED = "class-ended"  # session: (Summary, its questions' Tally, CSV) of the class this browser just ended
FRESH = 0.1  # seconds one read of a class answers every follower's poll on this server (Classes.state's `fresh`)
ATTENDANCE = 3.0  # seconds between two counts of the followers on the teacher's page
COUNTS = 1.0  # seconds between two counts of the class's answers on the teacher's page


def classes() -> Classes:
    """The classes in the server's runs store (what a process keeps of them is the process's, not the object's)."""
    return Classes(store())


ENDED_BY_ITSELF = N_("The class {code} has ended: in another tab, or by itself {hours} hours after your last move. "
                     "Start a new class to teach again.")


def wanted_code() -> str | None:
    """The code in the URL, as stored (a student may type it in lowercase, with a dash), or as typed if it is none."""
    typed = (st.query_params.get(CLASS) or "").strip()[:40]
    return normal_code(typed) or typed.upper() or None


def role(code: str) -> bool | None:
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
    if code is None or s.get(TEACHING) == code or not role(code):
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
    `counts`, where the step's controls are drawn, the class's answers to the question open, or just revealed."""
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
                s[REVEALED_AT] = asked
            s.pop(ASKED, None)
        if s.get(REVEALED_AT) is not None and s[REVEALED_AT] != run.trace.cursor:  # the next step: counts go
            s.pop(REVEALED_AT, None)
        if s.get(SHOWN) != now:
            classes().show(code, owner, *now)  # (a move closes the class's question)
            s[SHOWN] = now
        if asking is not None and asked != asking:  # the teacher's question is the class's too
            q = question_before(run.trace, asking, lang())
            classes().ask(code, owner, asking, q.kind if q is not None else "")
            s[ASKED] = asking
        if counts and asking is not None:  # the count for each choice, as the class answers (drawn above the question)
            fragment(_draw_counts, run_every=COUNTS)(code, run.trace, asking, False)
        elif counts and s.get(REVEALED_AT) is not None:  # revealed: the counts stay, the right answer marked
            _draw_counts(code, run.trace, s[REVEALED_AT], True)
    except Ended:
        _forget()
        s["class-error"] = t(ENDED_BY_ITSELF, code=code, hours=int(EXPIRES // 3600))
        st.rerun()  # the whole page: the class's bar goes, the error says why
    except NotTeacher:  # ended in another tab of this browser
        _forget()
    except (StoreError, OSError) as exc:
        st.toast(t("The class could not be shown this step: {error}", error=plain(exc)), icon=":material/warning:")


def _draw_counts(code: str, trace: Trace, step: int, revealed: bool) -> None:
    """The class's answers to the question before `step`: the question, one bar a choice with its words and its
    count, the late answers (not counted) said apart, and once revealed, the right answer marked."""
    try:
        counts = classes().counts(code, step)
    except StoreError:
        return
    q = question_before(trace, step, lang())
    if q is None:
        return
    st.html(counts_html(tally(q, step, counts, lang()), revealed), width="stretch")


def counts_html(one: Tally, revealed: bool, key: str = "ls-class-counts") -> str:
    """One question's answers as bars (the teacher's page, the summary): HTML, its words drawn as text."""
    top = max([c.answers for c in one.choices] + [1])
    head = t("The class's answers: {n}", n=one.answers)
    answer = escape(t("the answer"))
    rows = []
    for c in one.choices:
        right = revealed and c.right
        mark = f'<span class="ls-bar-right">{"✓ " + answer if right else ""}</span>'  # (empty: the bars stay aligned)
        rows.append(f'<div class="ls-bar-row{" ls-bar-is-right" if right else ""}" data-choice="{c.number}" '
                    f'data-count="{c.answers}"><div class="ls-bar-label">{c.number}. {_inline(c.text)}</div>'
                    f'<div class="ls-bar"><div style="width: {100 * c.answers / top:.0f}%"></div></div>'
                    f'<div class="ls-bar-n">{c.answers}</div>{mark}</div>')
    late = ""
    if one.late:
        said = t("{n} late: answered from browsers that joined after the question opened, not counted.", n=one.late)
        late = f'<p class="ls-bar-late">{escape(said)}</p>'
    return (f"<style>{COUNTS_CSS}</style>"
            f'<div class="ls-class-counts" id="{key}" data-step="{one.step}" data-revealed="{int(revealed)}" '
            f'data-answers="{one.answers}" data-late="{one.late}">'
            f'<p class="ls-class-counts-head">{escape(head)}</p>'
            f'<div class="ls-class-counts-question">{markdown_html(one.question)}</div>{"".join(rows)}{late}</div>')


def _inline(text: str) -> str:
    """A choice's Markdown as HTML within a line (one paragraph: its <p> dropped, so the number stays beside it)."""
    html = markdown_html(text).strip()
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        return html[3:-4]
    return html


COUNTS_CSS = """
.ls-class-counts { border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 0.5rem; padding: 0.4rem 0.8rem; }
.ls-class-counts-head { font-weight: 600; margin: 0 0 0.2rem 0; }
.ls-class-counts-question p { margin: 0 0 0.3rem 0; }
.ls-bar-row { display: grid; grid-template-columns: minmax(10rem, 2fr) 3fr 2.5rem 5.5rem; gap: 0.6rem;
  align-items: center; margin: 0.15rem 0; }
.ls-bar-label p { margin: 0; }
.ls-bar { height: 1.1rem; background: rgba(128, 128, 128, 0.15); border-radius: 0.25rem; overflow: hidden; }
.ls-bar > div { height: 100%; background: #4b8bff; }
.ls-bar-is-right .ls-bar > div { background: #21c354; }
.ls-bar-is-right .ls-bar-label { font-weight: 600; }
.ls-bar-n { text-align: right; font-variant-numeric: tabular-nums; font-weight: 600; }
.ls-bar-right { color: #21c354; font-weight: 600; white-space: nowrap; }
.ls-bar-late { opacity: 0.75; margin: 0.2rem 0 0 0; font-size: 0.9em; }
"""


def _forget() -> None:
    s = st.session_state
    s.pop(TEACHING, None)
    s.pop(SHOWN, None)
    s.pop(ASKED, None)
    s.pop(REVEALED_AT, None)
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
        summary = classes().end(code, owner)
    except NotTeacher:
        _forget()
        return
    except (StoreError, OSError) as exc:
        s["class-error"] = t("The class cannot end: {error}", error=exc)
        return
    found = tallies(summary.questions, lambda run_id: _load(owner, run_id), lang())  # in the teacher's language
    s[ENDED] = (summary, found, answers_csv(found, lang()))
    _forget()


def _load(owner: str, run_id: str) -> Trace | None:
    try:
        return store().load(owner, run_id)[0]
    except (KeyError, StoreError, ValueError):
        return None


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
        st.error(plain(s.pop("class-error")), icon=":material/error:")
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
        fragment(_draw_attendance, run_every=ATTENDANCE)(code)
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
    st.markdown(t("**{n} following** · {m} away", n=int(following), m=int(away)), width="content")


def _draw_summary(summary: Summary, found: list[Tally], answers: str) -> None:
    with st.container(border=True, key="classroom-summary"):
        st.markdown(t("**Class {code} ended.** Browsers that followed it: {n}.", code=plain(summary.code),
                      n=int(summary.followers)))
        steps = ", ".join(str(k + 1) for k in summary.steps_shown) or "—"
        st.markdown(t("Steps shown: {steps}", steps=steps))
        for one in found:
            st.markdown("**" + t("Question before step {k}", k=int(one.before)) + "**")
            st.html(counts_html(one, True, key=f"ls-class-summary-{one.step}"), width="stretch")
        with st.container(horizontal=True, gap="small"):
            st.download_button(t("Answers (CSV)"), data=answers, file_name=f"loopscope-class-{summary.code}.csv",
                               mime="text/csv", key="classroom-csv", icon=":material/download:", on_click="ignore")
            st.button(t("Close"), key="classroom-close", on_click=lambda: st.session_state.pop(ENDED, None))
