"""Your loop's drawing: the editor, the exercise and scenario pickers, and a run of the learner's loop read into a trace.

The trace is drawn by the same views as Step through and Replay (step.py); beside them, the learner's code
with the line that made step i lit, their own `state` against the chapter's LoopState, and the first rule
they broke, named as the Mistakes lab names it.

An exercise (loop/yours/exercises.py) opens its starter in the editor; Check runs the learner's loop on the
exercise's own scenarios, and a pass is kept for the browser in the saved-runs store (its progress).
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor, wait as futures_wait
from html import escape

import streamlit as st
from code_editor import code_editor

from loop.text.catalogs import N_, languages
from loop.engine.mistakes import MISTAKES
from loop.text.terminal import as_shown, printable
from loop.files.runs import StoreError
from loop.yours import sandboxed
from loop.yours.exercises import EXERCISES, Verdict, run_exercise
from loop.yours.lines import code_at
from loop.yours.listing import chapter_loop
from loop.yours.named import EXCEPTION, SYNTAX_ERROR
from loop.engine.trace import Trace
from loop.yours.reading import Yours, call_step, file_at, learner_at, line_at, read

from .blocks import cell, inline_code, note_markdown, plain
from .browser import store, this_browser
from .current import view_at
from .i18n import choice, lang, t
from .permalink import CODE_MOST, SEEN, BadCode, source_of
from .presenter import presenting
from .project import drop_project, runnable
from .step import draw_step

YOURS = "yours-run"  # the last run read: a Yours, its trace's cursor moved by the step views
SOURCE = "yours-source"  # what the learner typed, kept for the session
START = "yours-start"  # (the text the editor was opened with, its comment's language, the editor's generation)
EDITOR = "yours-editor"
OFFERED = "yours-restore-offered"  # this session has offered the browser's kept code to the editor
LINKED = "yours-linked-source"  # the code a link opened: someone else's, not kept over what this browser kept
KEPT = "loopscope-yours-source"  # the browser's localStorage key: what the learner typed, kept for a reload
PICK = "yours-scenario"
EXERCISE = "yours-exercise"  # the exercise picker's box
PICKER = "yours-exercise-picker"  # the picker's key's start (picker_key): its value is FREE or an exercise's name
SHOWN = "yours-shown"  # the exercise whose text the editor holds now
MINE = "yours-mine"  # {FREE or an exercise's name: what the learner typed for it}, kept for the session
VERDICT = "yours-verdict"  # (the exercise's name, its last Check's Verdict, the source it checked)
ASKED = "yours-check-asked"  # Check was clicked for this exercise: it runs where the exercise is drawn
FREE = "free"

# The scenarios the chapter's loop ends by itself on (it does not compact, nor retry a 529): toolsets s01 and s02.
SCENARIOS = ["list-files", "hello-py", "recover", "two-tools", "max-tokens", "long-answer", "parallel", "subagent",
             "compact"]  # the last two for a file of the course's s04 and s06: a sub-agent's thread, a compaction
HEADER = N_("Write agent_loop(state) as the chapter does: client, MODEL, SYSTEM, TOOLS, MAX_TOKENS and run_tool(block) "
            "are given.")
CODE_STYLE = """<style>
.ls-yours-code { font: 0.8rem/1.35 ui-monospace, monospace; max-height: 420px; overflow: auto; margin: 0;
  border: 1px solid rgba(128,128,128,.3); border-radius: .4rem; padding: .3rem 0; position: relative; }
/* every line as wide as the longest (the box scrolls sideways): the lit line's colour runs under all of its text */
.ls-yours-code .ls-yours-lines { display: inline-block; min-width: 100%; }
.ls-yours-lines > div { white-space: pre; padding: 0 .5rem; }
.ls-yours-code span.n { display: inline-block; width: 2.5em; color: #888; user-select: none; }
.ls-yours-code div.lit { background: rgba(255, 200, 0, .35); font-weight: 600; }
/* the state beside the code keeps to its column: the fields' names, the headings and the chapter's values whole
   (`transition_reason` cut in two reads as two words), the learner's value, which may be long, wrapped anywhere */
.st-key-yours-state table { width: 100%; }
.st-key-yours-state th, .st-key-yours-state td { padding: .3rem .4rem; }
.st-key-yours-state td code { white-space: normal; overflow-wrap: anywhere; }
.st-key-yours-state td:first-child code, .st-key-yours-state td:last-child code { white-space: nowrap;
  overflow-wrap: normal; }
</style>"""
# Presenter mode: the learner's code read from the back of the class, no smaller than the note (presenter.py, 1.05rem)
PRESENTER_CODE_PX = 18
PRESENTER_CSS = """<style>
.ls-yours-code { font-size: 1.1rem !important; max-height: 360px; }
.ls-yours-code span.n { width: 2.2em; }
.st-key-yours-state table, .st-key-yours-state table * { font-size: 1.05rem !important; }
</style>"""


def apply_presenting() -> None:
    """Your loop's part of presenter mode: the code beside the views large (the editor's size is its own prop)."""
    st.markdown(PRESENTER_CSS, unsafe_allow_html=True)


def starting_code(language: str, exercise: str = FREE) -> str:
    """The chapter's listing, or the exercise's starter (its piece missing), its comments in `language`."""
    body = EXERCISES[exercise].starter(language) if exercise in EXERCISES else chapter_loop(language)
    return f"# {t(HEADER, language)}\n{body}"


def warm_up() -> None:
    # A child with the SDK imported waits for Run (about 1.5 s saved); started beside the page, not before it.
    threading.Thread(target=sandboxed.warm, daemon=True, name="loopscope-yours-warm").start()


def open_in_editor(text: str) -> None:
    """Open a file of the learner's own project in the editor, as their free code (no exercise's)."""
    s = st.session_state
    s[SHOWN] = FREE
    for key in [k for k in s if isinstance(k, str) and k.startswith(PICKER)]:
        del s[key]
    _open_editor(text, lang())
    s[OFFERED] = True  # the browser's kept code is not put back over it


def _open_editor(text: str, language: str) -> None:
    """Open the editor afresh with `text` (a new key: the component drops what it held)."""
    s = st.session_state
    s[START] = (text, language, s.get(START, (None, None, 0))[2] + 1)
    s[SOURCE] = text


def draw_editor() -> str:
    """The code editor, pre-filled with the chapter's listing; what the learner typed, kept for the session."""
    s = st.session_state
    now = lang()
    shown = s.get(SHOWN, FREE)
    start, started_in, _ = s.get(START, (None, None, 0))
    if start is None or (started_in != now and s.get(SOURCE, start) == start):  # untouched: in the new language
        _open_editor(starting_code(now, shown), now)
    start, _, generation = s[START]
    # Presenter mode: no taller than 20 lines of its large type, so the Run row under it stays on a projector's screen
    height = [12, 20] if presenting() else [22, 44]
    typed = code_editor(start, lang="python", height=height, key=f"{EDITOR}-{generation}",
                        response_mode="debounce",
                        # a long line (the first comment, in any language) wraps: cut at the editor's edge, it
                        # would hide what it says past 1280 px's room
                        options={"showLineNumbers": True, "tabSize": 4, "wrap": True},
                        props={"theme": "chrome",  # Ace's own: the component's themes fetch a web font
                               "fontSize": PRESENTER_CODE_PX if presenting() else 14,  # 14: Ace's own
                               "annotations": _marks(s.get(YOURS), s.get(SOURCE))})
    if isinstance(typed, dict) and typed.get("type") and isinstance(typed.get("text"), str):
        s[SOURCE] = typed["text"]
    _keep_in_browser(s[SOURCE], start)
    if s[SOURCE] != starting_code(now, shown):
        label = t("Start again from the exercise's starter") if shown in EXERCISES else \
            t("Start again from the chapter's listing")
        st.button(label, key="yours-reset", icon=":material/restart_alt:",
                  on_click=_open_editor, args=(starting_code(now, shown), now))
    return s[SOURCE]


def _marks(yours: Yours | None, source: str | None) -> list[dict]:
    """The broken rule's line marked in the editor's gutter, while the editor holds the code that was run."""
    named = yours.named if yours is not None else None
    if named is None or not named.line or source != yours.recording.source or \
            named.file not in (None, yours.recording.file):  # a line of another of their files: not the editor's
        return []
    column = (yours.recording.error_column or 1) - 1 if named.name == SYNTAX_ERROR else 0
    return [{"row": named.line - 1, "column": max(column, 0), "type": "error", "text": named.render(lang())}]


def _keep_in_browser(source: str, start: str) -> None:
    """What the learner typed survives a reload: the browser keeps it (localStorage, in this browser only).

    A session's first run puts the kept code back into the editor (the component then hands it to the page),
    unless the editor already holds something else; every later run keeps what the editor holds.
    """
    s = st.session_state
    first = not s.get(OFFERED)
    s[OFFERED] = True
    if first:
        script = f"""(() => {{
  const kept = localStorage.getItem({json.dumps(KEPT)}), start = {json.dumps(start)};
  if (!kept || kept === start) return;
  let tries = 0;
  const put = setInterval(() => {{
    const frame = document.querySelector("iframe[title*='code_editor']");
    const box = frame && frame.contentDocument && frame.contentDocument.querySelector(".ace_editor");
    if (box && box.env && box.env.editor) {{
      clearInterval(put);
      if (box.env.editor.getValue() === start) box.env.editor.setValue(kept, -1);
    }} else if (++tries > 200) clearInterval(put);
  }}, 50);
}})();"""
    elif source == s.get(LINKED):  # a link's code, untouched: the learner's own kept code stays as it was
        return
    else:
        script = f"localStorage.setItem({json.dumps(KEPT)}, {json.dumps(source)});"
    code = script.replace("<", "\\u003c")  # no "<" in a script: the sanitiser drops such a script
    st.html(f"<script>{code}</script>", unsafe_allow_javascript=True)


def draw_run_row(source: str) -> None:
    """The scenario picker and Run: the learner's file runs in the sandbox, the run is read into a trace."""
    if st.session_state.get(PICK) not in SCENARIOS:
        st.session_state[PICK] = SCENARIOS[0]
    passed = _passed()
    labels = _exercise_labels(passed)
    # Streamlit's picker keeps showing the label an option had when it was chosen: ticks that changed (a pass) make
    # a picker of their own, which starts on the exercise shown
    widget = picker_key(passed)
    if st.session_state.get(widget) not in labels:
        st.session_state[widget] = st.session_state.get(SHOWN, FREE)
    with st.container(horizontal=True, vertical_alignment="bottom"):
        with st.container(key=EXERCISE, width=380):
            st.selectbox(t("Exercise"), list(labels), key=choice(widget), format_func=labels.get, on_change=_choose,
                         args=(widget,))
        st.selectbox(t("Scenario"), SCENARIOS, key=PICK, width=260)
        clicked = st.button(t("Run"), type="primary", icon=":material/play_arrow:", key="yours-run-button")
    st.caption(t("Or paste your whole agent file, as you run it yourself: its own client (anthropic or openai), its "
                 "own tools, its input() loop. The scenario's task is typed into its input(); every request it sends "
                 "is answered by the offline model."))
    if clicked:
        _run(runnable(source), st.session_state[PICK])


def _run(source: str, scenario: str, step: int | None = None) -> None:
    """Run `source` in the sandbox under a spinner, keep its run (at `step`, counted from 1, when given) and draw
    the page again: the editor above marks the broken line, knowing the run."""
    waiting = st.empty()
    with st.spinner(t("Running your loop in the sandbox…")):
        try:
            recording = sandboxed.run(source, scenario, lang(), owner=this_browser(),
                                      on_wait=lambda ahead: _say_wait(waiting, ahead))
        except Exception as exc:  # the sandbox could not start here: said, never a traceback of Loopscope's
            st.error(t("Your loop could not be run here: {error}", error=plain(f"{type(exc).__name__}: {exc}")),
                     icon=":material/error:")
            return
        yours = read(recording)
        if step is not None:
            yours.trace.goto(step - 1)
        st.session_state[YOURS] = yours  # kept before the spinner ends: a click meanwhile reruns the page there
    warm_up()
    st.rerun()


def _say_wait(place, ahead: int | None) -> None:
    """Where this browser's run stands in the line for a sandbox (a server runs a few at once)."""
    if ahead is None:
        place.empty()
    else:
        place.info(t("Waiting for a free sandbox: {n} run(s) ahead of yours.", n=ahead), icon=":material/hourglass:")


def _passed() -> set[str]:
    """The exercises this browser has passed (the saved-runs store); none when the store cannot be read."""
    owner = this_browser()
    if owner is None:
        return set()
    try:
        return store().passed(owner)
    except (StoreError, OSError):
        return set()


def _exercise_labels(passed: set[str]) -> dict[str, str]:
    labels = {FREE: t("Free: the chapter's loop")}
    for name, exercise in EXERCISES.items():
        tick = "✓ " if name in passed else ""
        labels[name] = tick + exercise.label(lang())  # "Statement 3: …", or "Beyond the chapter: …"
    return labels


def picker_key(passed: set[str]) -> str:
    """The exercise picker's key, for the exercises passed so far."""
    return "-".join([PICKER, *sorted(passed)])


def _choose(widget: str) -> None:
    """The exercise picked: the editor keeps what was typed for the one left and opens the learner's text of
    the one picked (its starter, the first time)."""
    s = st.session_state
    mine = s.setdefault(MINE, {})
    left, picked = s.get(SHOWN, FREE), s.get(widget, FREE)
    if SOURCE in s:
        mine[left] = s[SOURCE]
    s[SHOWN] = picked
    s.pop(YOURS, None)  # the run drawn was of the exercise left: not this one's
    _open_editor(mine.get(picked) or starting_code(lang(), picked), lang())
    if picked in EXERCISES:
        _warm_for_check(picked)


def _warm_for_check(name: str) -> None:
    # Check runs the exercise's scenarios at once, one child each: that many wait, their SDK imported, by the click.
    threading.Thread(target=sandboxed.warm, kwargs={"n": len(EXERCISES[name].scenarios)}, daemon=True,
                     name="loopscope-yours-warm").start()


def draw_exercise(source: str) -> None:
    """The exercise picked: its goal, a hint on request, and Check, which runs the loop on the exercise's scenarios."""
    s = st.session_state
    name = s.get(SHOWN, FREE)
    exercise = EXERCISES.get(name)
    if exercise is None:
        return
    scenarios = ", ".join(inline_code(x) for x in exercise.scenarios)
    with st.container(border=True, key="yours-exercise-box"):
        goal = t("Goal")
        st.markdown(f"**{goal}** · {t(exercise.goal)}")
        with st.expander(t("Hint"), icon=":material/lightbulb:"):
            st.markdown(t(exercise.hint))
        with st.container(horizontal=True, vertical_alignment="center"):
            st.button(t("Check"), key="yours-check", icon=":material/task_alt:", on_click=_ask, args=(name,))
            st.caption(t("Check runs your loop on scenarios of its own, not the one you pick: {scenarios}.",
                         scenarios=scenarios))
        if s.pop(ASKED, None) == name:
            _check(name, source)
        kept = s.get(VERDICT)
        if kept is not None and kept[0] == name:
            if kept[2] == source:
                _draw_verdict(kept[1])
            else:  # a verdict is about the code it checked: the editor holds other code now
                st.caption(t("Checked on your earlier code: Check again to check this one."),
                           help=plain(kept[1].why))


def _ask(name: str) -> None:
    # Kept until the page draws the exercise: a click is seen once, and the run that sees it may end in a rerun.
    st.session_state[ASKED] = name


def _check(name: str, source: str) -> None:
    s = st.session_state
    recordings = {}

    ahead: dict[str, int] = {}  # scenario -> runs ahead of it in the line for a sandbox, while it waits
    owner = this_browser()

    def runner(text: str, scenario: str, language: str, **limits):
        def waits(n: int | None) -> None:
            if n is None:
                ahead.pop(scenario, None)
            else:
                ahead[scenario] = n

        recordings[scenario] = sandboxed.run(text, scenario, language, owner=owner, on_wait=waits, **limits)
        return recordings[scenario]

    with st.spinner(t("Checking your loop on {scenarios}…", scenarios=", ".join(EXERCISES[name].scenarios))):
        try:
            # Check's scenarios wait in the line like any run: the page says where they stand while they wait
            waiting = st.empty()
            with ThreadPoolExecutor(1, thread_name_prefix="loopscope-check-wait") as pool:
                checking = pool.submit(run_exercise, EXERCISES[name], source.lstrip("\ufeff"), lang(), runner)
                while not checking.done():
                    _say_wait(waiting, min(ahead.values()) if ahead else None)
                    futures_wait([checking], timeout=0.25)
                waiting.empty()
                verdict = checking.result()
        except Exception as exc:  # the sandbox could not start here: said, never a traceback of Loopscope's
            st.error(t("Your loop could not be run here: {error}", error=plain(f"{type(exc).__name__}: {exc}")),
                     icon=":material/error:")
            return
    _warm_for_check(name)
    s[VERDICT] = (name, verdict, source)
    if verdict.passed:
        s.pop(YOURS, None)  # a run of earlier code (a failed Check's) is not drawn under the pass
        owner = this_browser()
        if owner is not None:
            try:
                store().mark_passed(owner, name)
            except (StoreError, OSError) as exc:  # the lesson goes on; the tick is not kept
                st.toast(t("Your progress could not be saved: {error}", error=plain(exc)), icon=":material/warning:")
    elif verdict.scenario in recordings:  # the run it failed on, drawn below with the same views, at the call
        s[YOURS] = _at_call(read(recordings[verdict.scenario]), verdict.call)
    st.rerun()  # the picker ticks a passed exercise; the editor marks the failed run's line


def _at_call(yours: Yours, call: int | None) -> Yours:
    """`yours` with its cursor on the step of model call `call` (its call_model step, or the refused one)."""
    step = call_step(yours.trace, call) if call is not None else None
    if step is not None:
        yours.trace.goto(step)
    return yours


def _draw_verdict(verdict: Verdict) -> None:
    why = note_markdown(verdict.note, lang()) if verdict.note is not None else plain(verdict.why)
    if verdict.passed:
        st.success(why, icon=":material/check_circle:")
        return
    where = t("Not yet: on {scenario}, at model call {call}.", scenario=inline_code(verdict.scenario or ""),
              call=(verdict.call or 0) + 1)
    st.error(f"**{where}**\n\n{why}", icon=":material/cancel:")
    st.caption(t("The run it failed on is drawn below."))


def _code_html(source: str, lit: int | None) -> str:
    rows = []
    for n, text in enumerate(source.splitlines(), start=1):
        cls = ' class="lit"' if n == lit else ""
        rows.append(f'<div{cls} data-line="{n}"><span class="n">{n}</span>{escape(text)}</div>')
    return (CODE_STYLE + f'<div class="ls-yours-code" id="ls-yours-code"><div class="ls-yours-lines">{"".join(rows)}'
            '</div></div>' + SCROLL_TO_LIT)


# The lit line in view: the panel shows some 30 lines of a file that may have hundreds (its own scroll, not the page's)
SCROLL_TO_LIT = """<script>(() => {
  const box = document.getElementById("ls-yours-code"), lit = box && box.querySelector("div.lit");
  if (lit && (lit.offsetTop < box.scrollTop || lit.offsetTop + lit.offsetHeight > box.scrollTop + box.clientHeight)) {
    box.scrollTop = Math.max(0, lit.offsetTop - box.clientHeight / 3);
  }
})();</script>"""


def _value(value: object) -> str:
    return inline_code("None" if value is None else str(value))


def learners_source(trace: Trace) -> str | None:
    """The learner's source a trace of their run keeps (meta["yours"]["source"]); None when it keeps none, or one
    no source is (not a string, or larger than a link may hold: a file made to be costly is drawn without it)."""
    yours = trace.meta.get("yours")
    source = yours.get("source") if isinstance(yours, dict) else None
    if not isinstance(source, str) or len(source.encode("utf-8", "replace")) > CODE_MOST:
        return None
    return _file_at_cursor(trace, yours) or source


def _file_at_cursor(trace: Trace, yours: dict) -> str | None:
    """A project's run: the text of the other file of theirs the cursor's line is in (a module beside the file run),
    when the trace keeps it and it is no larger than a source drawn may be; None for the file run."""
    files = yours.get("files")
    file = file_at(trace, trace.cursor) if isinstance(files, dict) and trace.cursor >= 0 else None
    text = files.get(file) if file is not None else None
    return text if isinstance(text, str) and len(text.encode("utf-8", "replace")) <= CODE_MOST else None


def draw_beside(trace: Trace) -> None:
    """The learner's code with step i's line lit, and their state against the chapter's LoopState: all of it read
    from the trace (its meta's source, each call's `line` and `learner`), so a saved run draws it in Replay too."""
    source = learners_source(trace)
    if source is None:
        return
    i = trace.cursor
    left, right = st.columns([3, 2])
    with left:
        line = line_at(trace, i) if i >= 0 else None
        st.markdown("**" + t("Your code") + "**" + (" · " + t("line {line}", line=int(line)) if line else ""))
        st.html(_code_html(source, line), unsafe_allow_javascript=True)
    with right, st.container(key="yours-state"):
        st.markdown("**" + t("Your state beside the chapter's LoopState") + "**")
        chapter_state = dict(view_at(trace, i).presenter_state) if i >= 0 else {}  # the step's record
        learner = learner_at(trace, i)  # None before the first call: the state is read at each call
        # A state of theirs is one with a turn_count (the sandbox reads no other, loop/yours/inside.py): without one,
        # their code keeps none (the course's whole s01 file keeps `messages` alone), and None would say it does
        kept = learner is not None and learner.get("turn_count") is not None
        mine = t("your state")
        rows = [f"| | {mine} | LoopState |", "|---|---|---|"]
        for field in ("turn_count", "transition_reason"):
            chapter = chapter_state.get(field)
            yours = cell(_value(learner.get(field))) if kept else "—"
            rows.append(f"| `{field}` | {yours} | "
                        f"{cell(inline_code(chapter) if chapter else _value(None))} |")  # a `|` stays in its cell
        st.markdown("\n".join(rows))
        caption = t("Your state as your code left it at the call shown last; the LoopState as the chapter's loop "
                    "keeps it.")
        if learner is None:
            caption += " " + t("Your state is read at each model call: before the first one, it is not known yet (—).")
        elif not kept:
            caption += " " + t("Your code keeps no state of its own (no turn_count) at the call shown last: —.")
        st.caption(caption)


def draw_named(yours: Yours) -> None:
    """The first broken rule: the mistake's title as the Mistakes lab names it, the API's words, the line."""
    named, recording = yours.named, yours.recording
    now = lang()
    if named is None:
        if yours.kept_every_rule:
            st.success(t("Your loop ended by itself and kept every rule: {n} model calls.",
                         n=len(recording.exchanges)), icon=":material/check_circle:")
        return
    mistake = MISTAKES.get(named.name)
    said = note_markdown(named.note, now) if named.note is not None else ""  # its values (a message) as text
    heading = t(mistake.title, now) if mistake else said
    lines = [f"**{heading}**"]
    if mistake:
        lines.append(said)
    if named.error:
        lines.append(t("The API's answer: {status} {message}", status=plain(named.error.get("status")),
                       message=inline_code(named.error.get("message") or "")))
    lines.extend(_line_words(named, recording))
    if mistake:
        lines.append(t("**The fix:**") + " " + t(mistake.fix, now))  # the one sentence the mistake's definition gives
        lines.append(t("[See this mistake in the Mistakes lab]({link})", link=f"/mistakes?mistake={plain(named.name)}"))
    st.error("\n\n".join(lines), icon=":material/error:")
    if named.name == EXCEPTION and recording.traceback:
        st.code(recording.traceback, language="text")


def _line_words(named, recording) -> list[str]:
    """Where the broken rule is named in their code, as Markdown: the line that made the message a mistake is about
    (or which message it was, with the call's line, when that line is not known), else the call's, the exception's
    or the syntax error's line. Their file's name, a role and their code are drawn as text."""
    made = named.made
    if made is not None:
        words, values = made.words(), made.values()
        return [t(words, line=plain(values["line"]), message=plain(values["message"]), call=int(made.call),
                  role=plain(values["role"]), code=inline_code(code_at(recording, made.file, made.line)))]
    code = code_at(recording, None, named.line) if named.file in (None, recording.file) else ""
    return [t("Your line {line}:", line=int(named.line)) + " " + inline_code(code)] if code else []


def draw_printed(yours: Yours) -> None:
    """What is worth saying beside the run (a max_tokens its file asked too much of). What the program printed is
    drawn beside the steps (draw_terminal)."""
    for note in yours.notes:
        st.info(note_markdown(note, lang()), icon=":material/info:")


TERMINAL_SHOWN = 20_000  # characters of the printed output drawn, its last ones (as a terminal scrolled to its end)
TERMINAL_STYLE = """<style>
.ls-terminal { font: 0.8rem/1.35 ui-monospace, monospace; background: #1e1e1e; color: #e6e6e6; margin: 0;
  border-radius: .4rem; padding: .4rem .6rem; max-height: 220px; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; }
</style>"""
SCROLL_TO_END = """<script>(() => { const box = document.getElementById("ls-terminal"); if (box) box.scrollTop = box.scrollHeight; })();</script>"""


def draw_terminal(output: str) -> None:
    """What the learner's program printed, beside the steps, as a terminal shows it: its colours left out, a line
    it rewrote shown as rewritten, its controls written as visible escapes; the last of it, scrolled to its end."""
    shown = printable(as_shown(output)).rstrip()
    if not shown:
        return
    cut = len(shown) - TERMINAL_SHOWN
    head = "**" + t("What your program printed") + "**"
    if cut > 0:
        head += " · " + t("its last {n} characters", n=TERMINAL_SHOWN)
        shown = shown[cut:]
    st.markdown(head)
    st.html(TERMINAL_STYLE + f'<pre class="ls-terminal" id="ls-terminal" data-testid="yours-terminal">'
            f'{escape(shown)}</pre>' + SCROLL_TO_END, unsafe_allow_javascript=True)


def draw_learners(trace: Trace, output: str | None = None) -> None:
    """Beside the steps: which of the project's files is shown (a project's run), the learner's code with the step's
    line lit and their state (draw_beside), and what their program printed (`output`, a live run's)."""
    yours = trace.meta.get("yours")
    files = yours.get("files") if isinstance(yours, dict) else None
    if isinstance(files, dict) and files and trace.cursor >= 0:
        shown = file_at(trace, trace.cursor) or yours.get("file")
        st.caption(t("Your project's {n} files: this is {file}.", n=len(files) + 1, file=inline_code(shown or "")))
    draw_beside(trace)
    if output:
        draw_terminal(output)


def _same_code(ran: object, editor: object) -> bool:
    """The run is of the code in the editor: the same text, or the same starter in another language (an untouched
    editor follows the page's language: only its comments change, not what runs)."""
    if ran == editor:
        return True
    starters = {starting_code(code, st.session_state.get(SHOWN, FREE)) for code in languages()}
    return ran in starters and editor in starters


def draw_yours(yours: Yours) -> None:
    """A run of the learner's loop: named, then drawn step by step with their code beside the views."""
    draw_named(yours)
    if not _same_code(yours.recording.source, st.session_state.get(SOURCE)):  # the editor holds other code now
        st.caption(t("This run is of your earlier code: Run again to run the code in the editor."))
    elif yours.recording.lang != lang():  # its task and the model's words are in the language it was run in
        st.caption(t("This run was made in {language}: Run again to make it in this page's language.",
                     language=plain(languages().get(yours.recording.lang, str(yours.recording.lang)))))
    draw_printed(yours)
    if not len(yours.trace):
        return
    # Step through's views, and above them the learner's code, in the views' one fragment: Back and Step move both
    draw_step(yours.trace, "yours", None, f"yours-{yours.recording.scenario}",
              above=lambda: draw_learners(yours.trace, yours.recording.output))


LINK_REFUSED = "yours-link-refused"  # the `code` of a link that was refused, and why: said while the URL holds it


LINK_RUN = "yours-link-run"  # (source, scenario, step) of a link opened in this run, to run once the editor is drawn


def open_code_link() -> None:
    """Open `?code=…&scenario=NAME&step=K` once: the code into the editor, the scenario picked, the code run once in
    the sandbox (as Run runs it, by `run_code_link` once the editor and the Run row are on the page: the learner
    reads the code while it runs) and the cursor on step K. A code that is not a source, or too large, is refused
    in the page and nothing runs. Call it before the editor and the Run row are drawn."""
    s = st.session_state
    code = st.query_params.get("code")
    if not code:
        return
    scenario = st.query_params.get("scenario")
    scenario = scenario if scenario in SCENARIOS else SCENARIOS[0]
    try:
        k = max(1, int(st.query_params.get("step") or 1))
    except ValueError:
        k = 1
    wanted = ("yours", code, scenario, k)
    if wanted != s.get(SEEN):
        s[SEEN] = wanted
        s.pop(LINK_REFUSED, None)
        try:
            source = source_of(code)
        except BadCode as exc:
            s[LINK_REFUSED] = (code, exc.too_large)
        else:
            _open_linked(source, scenario)
            s[LINK_RUN] = (source, scenario, k)
    refused = s.get(LINK_REFUSED)
    if refused is not None and refused[0] == code:
        st.error(t("This link's code is larger than {kb} KB once unpacked: nothing was run.", kb=CODE_MOST // 1024)
                 if refused[1] else t("This link's code cannot be read (it was cut or changed): nothing was run."),
                 icon=":material/link_off:")


def _open_linked(source: str, scenario: str) -> None:
    s = st.session_state
    drop_project()  # a link carries one file: it runs alone
    s[SHOWN] = FREE  # the link's code is the learner's own, not an exercise's: the picker starts on it
    for key in [k for k in s if isinstance(k, str) and k.startswith(PICKER)]:
        del s[key]
    _open_editor(source, lang())
    s[OFFERED] = True  # the editor holds the link's code: the browser's kept code is not put back over it
    s[LINKED] = source  # nor is it kept over the browser's, until the learner changes it
    s[PICK] = scenario


def run_code_link() -> None:
    """Run the code of the link `open_code_link` opened in this page run, under the Run row: the editor above shows
    it meanwhile."""
    s = st.session_state
    linked = s.pop(LINK_RUN, None)
    if linked is None:
        return
    source, scenario, k = linked
    _run(source.lstrip("\ufeff"), scenario, k)
