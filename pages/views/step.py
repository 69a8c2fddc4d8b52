"""Everything shown at one step, the same for a live run and a replay: a function of (trace, cursor)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from html import escape

import streamlit as st

from loop.views.diagram import LARGE, NORMAL, svg
from loop.views.notes import note
from loop.engine.profiles import COMPLETE
from loop.engine.runner import Run
from loop.views.step import StepView
from loop.engine.trace import Trace
from loop.files.transcript import dumps

from .ahead import ahead_script
from .complete_state import draw_complete_state
from .controls import draw_controls, heading, said_html, words_html
from .copylink import draw_copy_link
from .current import drawn, fresh, view_at
from .breaking import draw_break
from .forks import branches, draw_fork, with_branches
from .blocks import Ready, draw_style, id_colours, inline_code, markdown_html
from .history import HEIGHT as HISTORY_HEIGHT
from .history import draw_pager, draw_threads, history_offset, history_panel
from .more import draw_exports, draw_growth, file_stem, secrets_warning
from .i18n import lang, t
from .permalink import keep_url
from .presenter import PRESENTER_HEIGHT, presenting
from .raw import draw_raw
from .runs import autosave
from .script_run import alone, fragment
from .tables import draw_state_row, draw_tables, state_row_html


def draw_save(trace: Trace, key: str, name: str, run: Run | None = None) -> None:
    """Save the transcript; the JSON is made only when the button is pressed."""
    family = branches(run) if run is not None else []  # read now: the data is made when the button is pressed
    warning = secrets_warning(trace)  # an imported real log: what it may hold, and that nothing is redacted
    st.download_button(t("Save transcript"), data=lambda: dumps(with_branches(trace, family)),
                       file_name=f"loopscope-{file_stem(name)}.json",
                       mime="application/json", key=f"{key}-save", disabled=not len(trace),
                       icon=":material/download:", on_click="ignore", width="content",
                       help=t("Loopscope's transcript format: open it again on the Replay page.")
                       + ("\n\n" + warning if warning else ""))


@functools.lru_cache(maxsize=256)
def _picture(diagram: str, language: str, large: bool) -> str:
    """The diagram `svg(**diagram)` draws, as a JavaScript string. A few dozen pictures make every step of every run
    (a stage lit, an edge taken, a turn's number): each is drawn once for the whole server, not at each click of
    each learner."""
    picture = svg(**json.loads(diagram), translate=lambda text: t(text, language), size=LARGE if large else NORMAL)
    return json.dumps(picture).replace("<", "\\u003c")  # no "<" in a script: the sanitiser drops such a script


def diagram_html(v: StepView, key: str, heading: str = "", after: str = "") -> str:
    """The loop diagram at `cursor` as HTML: plain SVG made in loop/views/diagram.py, large when presenting.

    st.html keeps HTML only (its sanitiser drops SVG), and Markdown would parse the whole picture on
    every click; so a one-line script puts the SVG in place.
    """
    code = _picture(json.dumps(v.diagram, sort_keys=True), lang(), presenting())
    box = f"ls-diagram-{key}"
    return (f'{heading}<div class="ls-diagram-box" id="{box}" data-step="{v.index + 1}"></div>{after}'
            f'<script>document.getElementById("{box}").innerHTML = {code};</script>')


def views_html(v: StepView, key: str, next_words: str = "") -> str:
    """The diagram and its note beside the history, as HTML.

    The note (why the stage just executed matters) goes above the diagram: under the title, the controls and the
    line of what comes next, a note under the diagram would always start below the fold of a 1280×800 screen.
    Presenter mode puts the note above the history (the diagram keeps the room it needs to stay readable),
    `next_words` (what comes next) under the diagram, and the history fills the screen.
    """
    return _views(v, key, next_words, presenting())


def _views(v: StepView, key: str, next_words: str, present: bool) -> str:
    def draw() -> str:
        with id_colours({str(row["id"]): row["colour"] for row in v.pairs}):  # the ids as the Pairs table paints them
            return _views_html(v, key, next_words, present)

    # The same for the same record, until the history is paged: a cursor move draws a step the last rerun drew.
    return drawn(v, ("views", key, present, next_words, history_offset(v, key)), draw)


def _views_html(v: StepView, key: str, next_words: str, present: bool) -> str:
    if present:
        after = f'<div class="ls-next">{markdown_html(next_words)}</div>' if next_words else ""
        left = diagram_html(v, key, after=after)
        right = history_panel(v, key, height=PRESENTER_HEIGHT, fit=True, before=note_html(v, presenter=True))
    else:
        left = diagram_html(v, key, heading='<h4 class="ls-h4">' + escape(t("The loop")) + "</h4>" + note_html(v))
        right = history_panel(v, key, height=HISTORY_HEIGHT)
    grid = "ls-grid ls-present" if present else "ls-grid"
    if present and v.profile == COMPLETE:  # its retry and recovery stages beside the loop
        grid += " ls-wide"
    return (f'<div class="{grid}" id="ls-grid-{key}"><div class="ls-col">{left}</div>'
            f'<div class="ls-col">{right}</div></div>')


def step_html(v: StepView, key: str, words_at: Callable[[StepView], str]) -> dict:
    """What shows step k outside the tables, as the browser shows it before the server answers (see ahead.py):
    the heading's text, the elements above and beside the buttons by id, and the views."""
    words = words_at(v)
    present = presenting()  # read once: each read is one of the session's
    if present:
        parts = {f"ls-state-{key}": drawn(v, ("state", key), lambda: state_row_html(v, key))}
    else:
        parts = {f"ls-said-{key}": said_html(v, key), f"ls-words-{key}": words_html(words, key)}
    return {"status": v.status, "parts": parts, "views": _views(v, key, words if present else "", present)}


def draw_views(trace: Trace, v: StepView, key: str, words_at: Callable[[StepView], str], address: bool = False) -> None:
    """The views at `cursor` as ONE element: a click redraws one thing, not a dozen.

    A second, hidden element carries the steps beside the cursor, so that Back and Step show at once (see
    ahead.py); `words_at(view)` is what comes next at that step. `address`: the URL names this cursor's step.
    """
    st.html(Ready(views_html(v, key, words_at(v) if presenting() else "")), unsafe_allow_javascript=True)
    beside = {k: step_html(view_at(trace, k), key, words_at) for k in (v.index - 1, v.index + 1) if 0 <= k < v.total}
    st.html(Ready(ahead_script(key, v.index, heading(trace, v, key), beside, address)), unsafe_allow_javascript=True)


def note_extras(v: StepView, presenter: bool = False) -> list[str]:
    """What this very step adds to its stage's note: the turn it ends, an error the model reads, the end.

    In presenter mode the screen has no room to say a thing twice: the error is said by the callout under
    it in the history, the end under the diagram, `turn_count a → b` in the state row, so the note leaves them out.
    """
    out = []
    change = v.turn_count_change if not presenter else None  # the presenter's state row says `a → b`
    if change and v.stage == "recover":  # the complete loop: the request to continue ends it
        out.append(t("`turn_count` {a} → {b}: turn {a} ends with this request to continue; the next call starts "
                     "turn {b}.", a=change[0], b=change[1]))
    elif change:
        out.append(t("`turn_count` {a} → {b}: turn {a} ends with this write-back; the next call starts turn {b}.",
                     a=change[0], b=change[1]))
    read = v.errors_read if not presenter else ()
    if read:
        ids = ", ".join(inline_code(tool_use_id) for _, _, tool_use_id in read)
        out.append(t("**The model reads an error in this call** ({ids}, ringed in the history): a failed result is "
                     "its next input, not a terminal log.", ids=ids))
    end = v.ending if not presenter else None
    if end:
        out.append(t("**The loop ends.**") + " " + end)
    return out


def note_html(v: StepView, presenter: bool = False) -> str:
    """The note of the stage just executed, in the chosen language, and what this step adds to it, as HTML."""
    if v.stage is None:
        return ""
    broken = v.stage == "refused" and v.mistake  # Break it here: a rule broken, not a long prompt
    parts = [f"**{v.stage_title}**", note("refused_mistake" if broken else v.stage, v.lang)]
    if presenter and v.takes_answer:  # no room to say both: the one that
        parts = parts[:1]  # matters here is how the sub-agent's answer comes back, said below
    if v.parallel:  # the complete loop's
        parts.append(note("parallel", v.lang))
    # Where the learner is: inside a call frame. A presenter says it once, as the sub-agent starts: the heading
    # and the diagram say it on every step after, and the history needs the room.
    if not v.thread.is_main and not (presenter and not v.opens_thread):
        parts.append(note("subagent", v.lang))
    elif v.takes_answer:
        parts.append(note("subagent_returns", v.lang))
    text = "\n\n".join([*parts, *note_extras(v, presenter)])
    return f'<div class="ls-note" data-stage="{v.stage}">{markdown_html(text)}</div>'


def draw_step(trace: Trace, key: str, run: Run | None = None, name: str = "run",
              above: Callable[[], None] | None = None, moved: Callable[[], None] | None = None,
              before: Callable[[], None] | None = None) -> None:
    """The controls, then the loop diagram, the history, the pairs, the LoopState and the raw JSON.

    The step itself is a fragment: a click reruns only it, not the page around it (nor the views' stylesheet).
    `name` names the saved file. `above()`, when given, draws above the controls inside the same fragment, once
    the click has moved the cursor (Your loop: the learner's code with the step's line lit). `moved()`, when
    given, hears of every move before the page shows it: a live run's once it is saved (the class a teacher
    leads is shown the step); a trace without a run is then the caller's alone, its URL too (a student's copy
    of the class's run: whether the student stepped away). `before()`, when given, is called first at each run of
    the step, the fragment's own included (a student's copy takes the class's new step: see following.py `_sync`).
    """
    draw_style()
    _draw_step(trace, key, run, name, above, moved, before)
    if st.session_state.get(_below_key(key)) == "outside":  # closed, under the step: not drawn again at each move
        _draw_below(trace, key, name)


def _below_key(key: str) -> str:
    return f"{key}-below"


def _below_open(key: str) -> bool:
    """Context growth, the exports or the raw JSON is open: what they show depends on the cursor."""
    s = st.session_state
    return bool(s.get(f"{key}-growth") or s.get(f"{key}-exports") or s.get(f"{key}-raw"))


def _place_below(key: str) -> bool:
    """Whether the step's fragment draws Context growth, the exports and the raw JSON (True), or the page
    draws them under it (False).

    Closed, they show the same at every step: drawn by the page, under the fragment, a cursor move does not send
    them again. Open, they follow the cursor, so the fragment draws them. Opening one from under the fragment
    reruns the whole page; one closed inside it is drawn inside until the page runs again.
    """
    inside = _below_open(key) or (alone() and st.session_state.get(_below_key(key)) != "outside")
    st.session_state[_below_key(key)] = "inside" if inside else "outside"
    return inside


def _draw_below(trace: Trace, key: str, name: str) -> None:
    cursor = trace.cursor
    draw_growth(trace, cursor, key)
    draw_exports(trace, cursor, key, name)
    draw_raw(view_at(trace, cursor), key)


@fragment
def _draw_step(trace: Trace, key: str, run: Run | None = None, name: str = "run",
               above: Callable[[], None] | None = None, moved: Callable[[], None] | None = None,
               before: Callable[[], None] | None = None) -> None:
    if before is not None:
        before()
    top = st.container() if above is not None else None
    try:
        _draw_step_body(trace, key, run, name, moved)
    finally:
        if top is not None:
            with top:
                above()


def _draw_step_body(trace: Trace, key: str, run: Run | None, name: str,
                    moved: Callable[[], None] | None = None) -> None:
    address = moved is None or run is not None  # the URL follows this cursor (else it is the caller's)

    def changed() -> None:  # before the page shows the step: the URL names it, a live run is saved, a class hears
        if address:
            keep_url(trace, key, run)
        if run is not None:
            autosave(run)  # the new steps and the cursor: a reload or a restart loses nothing
        if moved is not None:
            moved()

    def header() -> None:
        draw_save(trace, key, name, run)
        draw_copy_link(key)

    fresh()  # this rerun's records of the steps: built again, once each
    words_at = draw_controls(trace, key, run, save=header, saved=changed)
    cursor = trace.cursor
    v = view_at(trace, cursor)  # everything drawn below of the step under the cursor: one record
    if v.has_threads and not presenting():  # where the cursor is among the threads: up, or into a sub-agent
        draw_threads(trace, v, key)  # (a presenter steps in and out with Step; the heading names the thread)
    if presenting():  # one screen: the state in one row, the diagram, the note and the newest messages
        st.session_state[_below_key(key)] = "none"
        draw_state_row(v, key)
        draw_views(trace, v, key, words_at, address)
        return
    draw_views(trace, v, key, words_at, address)
    draw_pager(v, key)
    draw_fork(trace, v, run, key)
    draw_break(trace, v, run, key)
    draw_tables(v, key, trace)  # (the whole Pairs table of a long run, when asked for, is the trace's)
    draw_complete_state(v)
    if _place_below(key):
        _draw_below(trace, key, name)
