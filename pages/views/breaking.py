"""Break it here: fork the run at a step with the loop broken one of the Mistakes lab's ways, and draw the broken
branch beside the correct one as the lab draws a broken loop.

The broken branch really runs (loop/engine/broken.py), against the offline model, until the API refuses a call:
what the page shows of it is read from its trace, so a broken branch saved with a run and replayed shows the same.
On Step through the branch joins the run's branches (the branch picker, Save); on Replay, the replayed trace's.
"""

from __future__ import annotations

import streamlit as st

from loop.engine.broken import OFFLINE, break_at, taken_on, why_not
from loop.engine.runner import Run
from loop.engine.trace import Trace
from loop.views.breaks import broken_view, calls_after, mistake_of, same_until
from loop.views.mistakes import ids_of
from loop.views.parts import screen_colours
from loop.engine.mistakes import MISTAKES
from loop.views.step import StepView

from .blocks import id_colours, plain
from .forks import adopt, branches, own
from .i18n import choice, lang, t
from .mistakes import draw_call, draw_lines
from .replay import REPLAY

AHEAD = "break-ahead"  # {(id of a trace, its length): the same run taken on to its end}: what can break
PARENTS = "broken-parents"  # {id of a broken branch's trace: the trace it was forked from}


def _ahead(trace: Trace, goes_on: bool) -> Trace:
    """The trace with what comes after its newest step, as the offline model answers it (loop/engine/broken.py
    `taken_on`), worked out once a trace and length.

    A run not yet at its end (`goes_on`) has no steps ahead to tell which mistakes can happen, nor the calls the
    correct loop makes after the one a broken branch was refused at; the broken branch runs against the offline
    model, so the run is taken on there too.
    """
    if not goes_on:
        return trace
    kept = st.session_state.setdefault(AHEAD, {})
    mark = (id(trace), len(trace))
    if mark not in kept:
        ahead = taken_on(trace)
        kept.clear()  # one run's at a time
        kept[mark] = ahead
    return kept[mark]


def _ask(key: str, cursor: int) -> None:
    st.session_state[f"{key}-break-asked"] = cursor  # acted on in the body, which then reruns the whole page


def _family(run: Run | None, key: str) -> list[Trace]:
    if run is not None:
        return [b.trace for b in branches(run)]
    mine = own(key)
    if mine is not None:
        return mine.family()
    replay = st.session_state.get(REPLAY) or {}
    root = replay.get("trace")
    return [root, *root.branches] if root is not None else []


def draw_break(trace: Trace, v: StepView, run: Run | None, key: str) -> None:
    """Under the views: on a broken branch, the break beside the correct branch; on any other, Break it here."""
    mine = own(key) if run is None and key != REPLAY else None
    if v.stage is None or (run is None and key != REPLAY and mine is None):
        return
    if mistake_of(trace):
        draw_broken(trace, key, _family(run, key))
        return
    if mine is not None and mine.paused():  # a copy while the class's question is open: no stepping away
        return
    cursor = v.index
    # Drawn only while open: a click of Step costs nothing, and what can break is worked out only when asked.
    expander = st.expander(t("Break it here"), icon=":material/heart_broken:", key=f"{key}-break-{cursor}",
                           on_change="rerun")
    with expander:
        if not expander.open:
            return
        _draw_offer(trace, cursor, run, key)


def _draw_offer(trace: Trace, cursor: int, run: Run | None, key: str) -> None:
    st.caption(t("A new branch starts here with the loop broken one way from this step on; it runs until the API "
                 "refuses a call. The current branch is kept and the branch picker switches back."))
    if "imported" in trace.meta:
        st.info(t("This session's tools cannot run here: the broken branch reuses the results the session "
                  "recorded for the same tool_use ids."), icon=":material/history:")
    elif not trace.meta.get("scripted"):
        st.info(t(OFFLINE, model=plain(trace.meta.get("model") or "?")), icon=":material/key_off:")
    if run is not None:
        goes_on = not run.done
    else:  # a copy of a run still going (a class's, mid-run): what its steps ahead would be, as for a live run
        goes_on = key != REPLAY and len(trace) > 0 and not trace.loop_ended
    why = why_not(_ahead(trace, goes_on), cursor)
    can = [name for name, reason in why.items() if reason is None]
    now = lang()
    if can:
        if st.session_state.get(f"{key}-break-pick-{cursor}") not in can:
            st.session_state[f"{key}-break-pick-{cursor}"] = can[0]
        st.radio(t("Mistake"), can, key=choice(f"{key}-break-pick-{cursor}"), format_func=lambda n: t(MISTAKES[n].title, now))
        st.button(t("Break the loop here"), key=f"{key}-break-go-{cursor}", type="primary",
                  icon=":material/heart_broken:", on_click=_ask, args=(key, cursor))
    else:
        st.info(t("No mistake can happen from this step."), icon=":material/info:")
    cannot = [(name, reason) for name, reason in why.items() if reason is not None]
    if cannot:
        st.caption(t("**Cannot happen from this step:**") + "\n"
                    + "\n".join(f"- {t(MISTAKES[name].title)}: {t(reason)}" for name, reason in cannot))
    if st.session_state.pop(f"{key}-break-asked", None) == cursor:
        _break(trace, cursor, st.session_state.get(f"{key}-break-pick-{cursor}"), run, key)


def _break(trace: Trace, cursor: int, mistake: str | None, run: Run | None, key: str = REPLAY) -> None:
    if mistake not in MISTAKES:
        return
    mine = own(key) if run is None and key != REPLAY else None
    if mine is not None:  # a copy: a branch of the student's own, on the offline model, in a workspace of its own
        if mine.paused():
            st.rerun()
        broken = break_at(trace, cursor, mistake)
        st.session_state.setdefault(PARENTS, {})[id(broken.trace)] = trace
        mine.adopt(broken.run)
        st.rerun()
    # A live run's branch shares its tools, as every branch does; a replay has none: the branch gets its own.
    broken = break_at(trace, cursor, mistake, tools=run.tools if run is not None else None)
    st.session_state.setdefault(PARENTS, {})[id(broken.trace)] = trace
    if run is not None:
        adopt(run, broken.run)
    else:
        broken.run.close()  # the branch has ended: only its trace is replayed
        replay = st.session_state[REPLAY]
        root = replay["trace"]
        replay["trace"] = root.with_branches([*root.branches, broken.trace])
        st.session_state["replay-branch"] = len(root.branches) + 1
    st.rerun()  # the whole page: the picker shows the new branch


def correct_of(trace: Trace, family: list[Trace]) -> Trace | None:
    """The branch a broken branch was forked from: kept when it was made, else one of the family with its steps."""
    parent = (st.session_state.get(PARENTS) or {}).get(id(trace))
    if parent is not None:
        return parent
    broken = broken_view(trace)
    at = broken.kept if broken is not None else 0
    return next((f for f in family if f is not trace and not mistake_of(f) and same_until(trace, f, at)), None)


def draw_broken(trace: Trace, key: str, family: list[Trace]) -> None:
    """A broken branch beside the correct one: where the API refused it, what its rule means, the lines that differ,
    and both branches call by call from the step it was broken at."""
    broken = broken_view(trace)
    m = MISTAKES[broken.mistake]
    with st.container(border=True, key=f"{key}-broken"):
        st.markdown("#### " + t("Broken here: {mistake}", mistake=t(m.title)))
        if broken.offline:
            st.caption(t("The broken branch ran against the offline model: no key is spent on a lesson."))
        if broken.status is not None:
            st.caption(t("Broken at step {step}; the API refused the call at step {k}: {status} {type}.",
                         step=broken.at + 1, k=broken.last + 1, status=int(broken.status), type=plain(broken.type)))
        elif broken.not_run:
            st.caption(t("Broken at step {step}; at step {k} the answer asks for a tool_use and nothing runs it.",
                         step=broken.at + 1, k=broken.last + 1))
        else:
            st.caption(t("Broken at step {step}; the broken loop went on to its end: no call was refused.",
                         step=broken.at + 1))
        st.success(t("**The fix:**") + " " + t(m.fix), icon=":material/build:")
        draw_lines(broken.mistake)
        correct = correct_of(trace, family)
        if correct is not None:  # the correct loop as far as it goes, not cut where the learner stopped stepping
            correct = _ahead(correct, not correct.loop_ended)
        wrong = calls_after(trace, broken.kept)
        right = calls_after(correct, broken.kept)[:max(len(wrong), 1)] if correct is not None else []
        a, b = st.columns(2)
        a.markdown(t("#### With the mistake"))
        b.markdown(t("#### The correct loop"))
        colours = screen_colours(ids_of(wrong + right))  # a wrong id never in a real id's colour
        for n in range(max(len(wrong), len(right))):
            a, b = st.columns(2, gap="medium", border=True)
            refused = n < len(wrong) and wrong[n].error is not None
            with a, id_colours(colours):
                draw_call(wrong[n] if n < len(wrong) else None, f"{key}-broken", refused, rule=m.rule,
                          wish=n == len(wrong) - 1 and broken.not_run, mistake=broken.mistake)
            with b, id_colours(colours):
                draw_call(right[n] if n < len(right) else None, f"{key}-correct", refused)
        here = {"lang": lang()} if lang() != "en" else {}
        st.page_link("pages/mistakes.py", label=t("This mistake in the Mistakes lab: {mistake}", mistake=t(m.title)),
                     icon=":material/bug_report:", query_params={**here, "mistake": broken.mistake})
