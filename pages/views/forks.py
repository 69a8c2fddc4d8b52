"""Forks: edit a past tool_result (or the task) and continue from there in a new branch.

The new branch becomes the session's run; the old one is kept, and the branch
picker switches back. Save writes every branch: the others go in
`trace.branches`. Branches share the run's workspace (a fork changes history,
not the files), so the first branch's clean-up covers them all.

A trace drawn with no live run forks through an `Own` its page sets (`set_own`): a student's copy of a class's
run, whose branches are the student's own (following.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import streamlit as st

from loop.engine.fork import ForkRefused, fork_task, fork_tool_result
from loop.engine.runner import Run
from loop.engine.mistakes import MISTAKES
from loop.views.step import StepView
from loop.engine.trace import Trace
from loop.views.errors import explain
from loop.views.parts import result_text

from .blocks import plain
from .i18n import lang, t
from .settings import RUN

BRANCHES = "live-branches"
OWN = "fork-own"  # session: {a step views' key: Own}: a trace drawn with no live run that forks all the same


@dataclass
class Own:
    """How a trace drawn with no live run of its own forks (a class's run, on a student's copy of it).

    `refusal()` says why a fork cannot run here (no model this page may spend), in the page's language, or None;
    `base()` is then a run on the trace, built at the click, with that model (never the model of whoever made
    the trace); `adopt(branch)` makes the new branch what the page draws; `paused()` says whether no branch may
    be made now; `family()` is the traces it holds (the one a broken branch was forked from among them).
    """

    refusal: Callable[[], str | None]
    base: Callable[[], Run]
    adopt: Callable[[Run], None]
    paused: Callable[[], bool]
    family: Callable[[], list[Trace]]


def own(key: str) -> Own | None:
    """What the step views drawn under `key` fork with when they have no live run (see `Own`)."""
    return (st.session_state.get(OWN) or {}).get(key)


def set_own(key: str, how: Own | None) -> None:
    """From now on the step views under `key` fork with `how` when they have no live run (None: they do not)."""
    kept = st.session_state.setdefault(OWN, {})
    if how is None:
        kept.pop(key, None)
    else:
        kept[key] = how


def branches(run: Run) -> list[Run]:
    """The branches of this run's family; a new run starts a new family."""
    kept = st.session_state.get(BRANCHES) or []
    if not any(b is run for b in kept):
        kept = [run]
        st.session_state[BRANCHES] = kept
    return kept


def adopt(run: Run, branch: Run) -> None:
    """`branch` joins `run`'s family and becomes the session's run: the picker shows it."""
    family = branches(run)
    family.append(branch)
    st.session_state[RUN] = branch
    st.session_state["live-branch"] = len(family) - 1


def with_branches(trace: Trace, family: list[Run]) -> Trace:
    """`trace` with the other branches of `family` in `branches`, for Save (no trace is changed)."""
    others = [b.trace.with_branches([]) for b in family if b.trace is not trace]
    return trace.with_branches(others) if others else trace


def _label(family: list[Run], i: int) -> str:
    return trace_label(family[i].trace, i)


def trace_label(trace: Trace, i: int, now: str | None = None) -> str:
    """`Branch n · the original`, `Branch n · step k, edited …` or `Branch n · step k, broken: <mistake>`, from what
    the fork wrote in meta."""
    fork = trace.meta.get("forked_from")
    if not fork:
        return t("Branch {n} · the original", now, n=i + 1)
    mistake = MISTAKES.get(fork.get("mistake")) if fork.get("edit") == "mistake" else None  # Break it here
    if mistake is not None:
        return t("Branch {n} · step {step}, broken: {mistake}", now, n=i + 1, step=fork.get("step", 0) + 1,
                 mistake=t(mistake.title, now))
    what = t("edited task", now) if fork.get("edit") == "task" else t("edited tool_result", now)
    return t("Branch {n} · step {step}, {what}", now, n=i + 1, step=fork.get("step", 0) + 1, what=what)


def _switch() -> None:
    family = st.session_state.get(BRANCHES) or []
    i = st.session_state.get("live-branch")
    if i is not None and 0 <= i < len(family):
        st.session_state[RUN] = family[i]


def draw_branch_picker(run: Run) -> None:
    """Which branch is shown, when a fork has made more than one."""
    family = branches(run)
    if len(family) < 2:
        return
    st.session_state["live-branch"] = next(i for i, b in enumerate(family) if b is run)
    labels = {i: _label(family, i) for i in range(len(family))}
    st.selectbox(t("Branch"), list(labels), key="live-branch", format_func=labels.get, on_change=_switch,
                 help=t("A fork keeps the old branch: choose it here to go back. Save writes them all."))


def _ask(key: str, cursor: int) -> None:
    st.session_state[f"{key}-fork-asked"] = cursor  # acted on in the body, which then reruns the whole page


def draw_fork(trace: Trace, v: StepView, run: Run | None, key: str) -> None:
    """At a run_tool step: edit its result; at step 1: edit the task. Either continues in a new branch."""
    mine = own(key) if run is None else None
    if (run is None and mine is None) or v.stage is None:
        return
    cursor, stage = v.index, v.stage
    if stage == "run_tool":
        title = t("Edit this tool_result and continue from here")
    elif stage == "user_request":
        title = t("Edit the task and continue from here")
    else:
        return
    if mine is not None and mine.paused():  # a copy while the class's question is open: no stepping away
        return
    # Its form is drawn only while it is open: a text area holding the tool's output, made again at every
    # click of Step, was a tenth of what the browser did for a click.
    expander = st.expander(title, icon=":material/call_split:", key=f"{key}-fork-{cursor}", on_change="rerun")
    with expander:
        if not expander.open:
            return
        if mine is None:
            st.caption(t("A new branch starts here; the current one is kept and the branch picker switches back."))
        else:  # a copy: its run is built only now, and only with a model this page may spend
            st.caption(t("A new branch of your own starts here and runs to its end; the class's run is not changed. "
                         "With a real model it stops where the model asks for a tool: nothing here approves a "
                         "command."))
            why = mine.refusal()
            if why is not None:
                st.info(plain(why), icon=":material/key_off:")
                return
        if stage == "run_tool":
            text = st.text_area(t("tool_result content"), value=result_text(v.tool_output),
                                key=f"{key}-fork-text-{cursor}", height=150)
            is_error = st.checkbox("is_error", value=v.tool_is_error, key=f"{key}-fork-err-{cursor}")
        else:
            text = st.text_area(t("Task"), value=trace.meta.get("task", ""), key=f"{key}-fork-task")
        st.button(t("Continue from here"), key=f"{key}-fork-go-{cursor}", type="primary",
                  icon=":material/call_split:", on_click=_ask, args=(key, cursor))
        if st.session_state.pop(f"{key}-fork-asked", None) == cursor:
            if mine is not None:
                _fork_own(mine, stage, cursor, text, is_error if stage == "run_tool" else False)
                return
            try:
                branch = (fork_tool_result(run, cursor, text, is_error) if stage == "run_tool"
                          else fork_task(run, text))
            except ForkRefused as exc:
                st.error(plain(t(exc.message, **exc.values)), icon=":material/error:")
                return
            except ValueError as exc:
                st.error(plain(exc), icon=":material/error:")
                return
            adopt(run, branch)
            st.rerun()  # the whole page: its caption and the picker show the new branch


def _fork_own(mine: Own, stage: str, cursor: int, text: str, is_error: bool) -> None:
    """A branch of a copy: made and run on (Step on a copy runs nothing), shown at the step it was forked at.

    On the offline model it runs to its end. A real model's commands run only once someone approved them (the
    approval gate), and a copy has no place to: its branch stops where the model asks for a tool."""
    if mine.paused():  # the class's question opened meanwhile: no stepping away
        st.rerun()
    base = mine.base()
    try:
        branch = fork_tool_result(base, cursor, text, is_error) if stage == "run_tool" else fork_task(base, text)
        while not branch.done and (base.model.config.scripted or branch.pending_tool_use is None):
            branch.execute()
    except ForkRefused as exc:
        base.close()
        st.error(plain(t(exc.message, **exc.values)), icon=":material/error:")
        return
    except Exception as exc:  # a model's error (the student's own key refused, say): the copy stays as it was
        base.close()
        st.error(plain(explain(exc, lang())), icon=":material/error:")
        return
    branch.trace.goto(cursor)
    mine.adopt(branch)
    st.rerun()  # the whole page: it says the student stepped away, on a branch of their own
