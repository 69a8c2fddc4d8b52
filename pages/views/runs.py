"""Refresh loses nothing: the live run is saved after every step, and "Saved runs" brings one back.

Runs are kept per browser, not per server: in a classroom every browser talks to
one server, and no student should see another's runs. A browser is known by an
id the server issues and signs (loop/files/browser_id.py), kept in a cookie that this
page sets on the first visit (`loopscope_browser`; Streamlit reads cookies with
st.context.cookies, and a few lines of our own JavaScript set it, see
browser.py `_draw_cookie`). The address bar holds no part of it, so a copied link hands
over nothing; `?session=` in an old link is dropped and grants nothing. A reload,
a closed tab or a server restart keeps the cookie, so it keeps the runs; clearing
the site's data starts afresh. The runs live in the runs store
(loop/files/runs.py): `runs/runs.sqlite3` beside app.py, or in LOOPSCOPE_RUNS.

What is saved is the trace, the cursor and the run's settings, never the API key:
a run on a real model asks for it again when it is resumed. The settings include
the approval gate, so Resume brings it back as it was.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

import streamlit as st

from loop.views.errors import explain
from loop.engine.fork import continue_from
from loop.engine.keys import lending
from loop.engine.model import Model, ModelConfig
from loop.engine.runner import Run, Settings, new_workspace
from loop.files.runs import StoreError, StoreFull, TakenOver, new_run_id
from loop.engine.scripted import MODEL_NAME
from loop.engine.toolsets import default_toolbox

from .blocks import in_code, plain
from .gate import TOGGLE, as_saved, gate_on
from .i18n import choice, lang, t
from .browser import store, this_browser
from .settings import RUN, _keep, default_key, lent_key, unsandboxed_refusal

OFFERED = "saved-runs-offered"  # this session has drawn Saved runs once (opened, if there were any)
SAVED = "live-run-saved"  # (the Run object, its run id, the cursor and the step count last saved, this tab's writer id)
COPY_LIMIT = 50 * 2**20  # bytes of an old workspace copied into a resumed run's new one


def settings_of(run: Run) -> dict:
    """What it takes to go on with `run` later, the approval gate included; never the key or its allowance."""
    config = {f.name: getattr(run.model.config, f.name) for f in fields(run.model.config)
              if f.name not in ("api_key", "allowance")}
    return {"config": config, **asdict(run.settings), "toolset": run.settings.toolset or "s01",
            "workspace": str(run.workspace), "approve": gate_on()}


def autosave(run: Run) -> None:
    """Save the steps `run` has that are not saved yet, and the cursor when it moved, in one transaction.

    Called as soon as a click has changed the trace, before the page shows it: a step the
    page shows is a step saved. Cheap when nothing changed.
    """
    s = st.session_state
    owner = this_browser()
    saved = s.get(SAVED)
    if saved is None or saved[0] is not run:  # a new run (New run, a fork, a resume) is saved as a new one
        linked = len(run.trace) > 0 and _from_link(run)
        saved = (run, None, run.trace.cursor, len(run.trace) if linked else 0, secrets.token_urlsafe(12))
    _, run_id, cursor, steps, writer = saved
    if owner is None or (run.trace.cursor == cursor and len(run.trace) == steps):
        s[SAVED] = saved
        return
    if run_id is None:  # not saved yet: start at the first step the learner takes
        if not len(run.trace) or len(run.trace) == steps:
            s[SAVED] = (run, None, run.trace.cursor, steps, writer)
            return
        run_id = new_run_id()
    try:
        try:
            if run_id == saved[1] and len(run.trace) == steps:  # a click that only moved the cursor
                try:
                    store().move(owner, run_id, run.trace.cursor, writer=writer)
                except KeyError:  # gone from the store meanwhile (deleted in another tab): saved whole again
                    store().save(owner, run_id, run.trace, settings_of(run), writer=writer)
            else:
                store().save(owner, run_id, run.trace, settings_of(run), writer=writer)
        except TakenOver:  # Resume in another tab took this run over: this tab's steps become a run of their own
            run_id = new_run_id()
            store().save(owner, run_id, run.trace, settings_of(run), writer=writer)
            st.toast(t("This run was resumed in another tab, which saves it from now on. This tab's steps are "
                       "saved as a new run."), icon=":material/call_split:")
    except (StoreError, OSError) as exc:  # a full disk must not stop the lesson; say so, and try again next click
        said = exc.note.render(lang(), data=plain) if isinstance(exc, StoreFull) else plain(exc)  # what to do
        st.toast(t("This run could not be saved: {error}", error=said), icon=":material/warning:")
        s[SAVED] = saved  # nothing was written: the next click tries again
        return
    s[SAVED] = (run, run_id, run.trace.cursor, len(run.trace), writer)


def _from_link(run: Run) -> bool:
    """A built-in scenario on the offline model that a permalink (or the reload of one) opened at step K.

    The link rebuilds it, so it is journalled only once the learner goes further: a reload must
    not add one more copy of the same run to Saved runs each time.
    """
    return (run.model.config.scripted and not run.trace.meta.get("forked_from")
            and st.query_params.get("scenario") is not None and run.task in _scenario_tasks())


def _scenario_tasks() -> set[str]:
    from loop.text.catalogs import languages
    from loop.engine.scenarios import SCENARIOS

    return {s.task_in(lang) for s in SCENARIOS.values() for lang in languages()}


def current_run_id() -> str | None:
    saved = st.session_state.get(SAVED)
    return saved[1] if saved and saved[0] is st.session_state.get(RUN) else None


def resume(run_id: str, writer: str, api_key: str | None = None) -> Run:
    """The saved run, live again: the same trace and cursor, going on from its last step with its settings.

    `writer` (this tab) takes the run over: a tab that was writing it goes on under a new run id.
    """
    trace, settings = store().load(this_browser(), run_id, writer=writer)
    return _live(trace, settings, api_key)


def _live(trace, settings: dict, api_key: str | None = None) -> Run:
    known = ModelConfig.__dataclass_fields__
    config = ModelConfig(**{k: v for k, v in (settings.get("config") or {}).items()
                            if k in known and k not in ("api_key", "allowance")})
    if not config.scripted:  # the same rule as New run: the server's key only to its own base URL, within limits
        key, allowance = lent_key(config.base_url, api_key or st.session_state.get("set-api-key"))
        config = replace(config, api_key=key, allowance=allowance)
    refusal = unsandboxed_refusal(config)  # a real model's commands need bubblewrap here (settings.py)
    if refusal:
        raise ValueError(refusal)
    workspace = new_workspace()
    old = Path(str(settings.get("workspace") or ""))
    if str(old) != ".":  # the files the commands wrote, if still there, given to the user commands run as
        workspace.copy_from(old, COPY_LIMIT)
    kept = Settings(max_turns=int(settings.get("max_turns") or trace.meta.get("max_turns") or 20),
                    tool_timeout=float(settings.get("tool_timeout", 30.0)), toolset=settings.get("toolset", "s01"),
                    lang=str(settings.get("lang") or trace.meta.get("lang") or "en"),
                    compact_at=_count(settings.get("compact_at")),
                    profile=_profile(settings.get("profile") or trace.meta.get("profile")),
                    budget=_count(settings.get("budget")))
    tools = default_toolbox(workspace, kept.tool_timeout, kept.toolset)
    cursor = trace.cursor
    if len(trace):
        run = continue_from(trace, len(trace) - 1, Model(config), tools, kept)
    else:
        run = Run(trace.meta.get("task", ""), Model(config), tools, settings=kept)
    run.trace.goto(cursor)
    st.session_state[TOGGLE] = as_saved(settings, config.scripted)  # the gate as it was
    return run


def _profile(value: object) -> str:
    """A saved run's loop profile (the chapter's minimal loop for anything else)."""
    from loop.engine.profiles import MINIMAL, PROFILES

    return value if isinstance(value, str) and value in PROFILES else MINIMAL


def _count(value: object) -> int | None:
    """A saved threshold, or None for one that is no count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _resume() -> None:
    s = st.session_state
    run_id = s.get("saved-run")
    if not run_id or this_browser() is None:
        return
    writer = secrets.token_urlsafe(12)  # this tab, from now on the one that writes the run
    try:
        run = resume(run_id, writer, (s.get("resume-api-key") or "").strip() or None)
    except Exception as exc:  # a run that cannot be read, a missing key, a locked store
        s["saved-runs-error"] = t("The run {run_id} cannot be resumed: {error}", run_id=run_id, error=explain(exc, lang()))
        return
    s.pop("saved-runs-error", None)
    s.pop("live-error", None)
    s.pop("resume-api-key", None)
    _keep(run)
    s[SAVED] = (run, run_id, run.trace.cursor, len(run.trace), writer)  # go on writing the same run
    s["saved-runs-note"] = t("Resumed: {n} steps, at step {k}. The workspace is new (`{workspace}`); files the "
                             "commands wrote earlier were copied when still there.",
                             n=len(run.trace), k=run.trace.cursor + 1, workspace=in_code(run.workspace))


def _delete() -> None:
    s = st.session_state
    run_id = s.get("saved-run")
    owner = this_browser()
    if run_id and owner is not None:
        try:
            store().delete(owner, run_id)
        except (StoreError, ValueError) as exc:
            s["saved-runs-error"] = t("The run {run_id} cannot be deleted: {error}", run_id=run_id, error=exc)
            return
        s.pop("saved-run", None)
        s["saved-runs-note"] = t("Deleted the saved run {run_id}.", run_id=plain(run_id))


def _label(saved, now: str) -> str:
    """A saved run in one line, in the language `now` (a format_func may be called outside the script run)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved.modified))
    ended = t("ended: {reason}", now, reason=saved.ended) if saved.ended else t("not ended", now)
    steps = t("{n} steps", now, n=saved.steps)
    return f"{saved.task[:60]} · {saved.model} · {steps} · {ended} · {when}"


def draw_saved_runs(run: Run) -> None:
    """The runs this browser saved, newest first: Resume one (same trace and cursor, live) or Delete it."""
    this = current_run_id()
    owner = this_browser()
    try:
        runs = [r for r in store().list(owner) if r.id != this] if owner is not None else []
    except StoreError as exc:
        runs = []
        st.session_state["saved-runs-error"] = t("Saved runs are not available on this server: {error}", error=exc)
    # A reload lands on a fresh run: the session's first page offers the saved ones. Not after New run: the
    # learner asked for the fresh run, and an open list would push its steps below the fold.
    first = not st.session_state.get(OFFERED)
    st.session_state[OFFERED] = True
    expanded = first and bool(runs) and not len(run.trace)
    note = st.session_state.pop("saved-runs-note", None)
    if note:  # outside the expander: a resumed run closes it
        st.success(note, icon=":material/check:")
    now = lang()
    with st.expander(t("Saved runs · {n}", n=len(runs)), icon=":material/folder_open:", expanded=expanded):
        st.caption(t("Every step of a live run is saved on this server for this browser only, which a cookie "
                     "remembers; the address bar holds no part of it, so a copied link shares the step, never "
                     "these runs. The API key is never saved."))
        st.caption(t("Clearing this site's data (cookies) in the browser, or a private window, starts with no "
                     "saved runs: this browser can no longer reach the runs it saved before."))
        if st.session_state.get("saved-runs-error"):
            st.error(plain(st.session_state["saved-runs-error"]), icon=":material/error:")
        if not runs:
            st.caption(t("No other saved runs yet.") if this else t("No saved runs yet: Step, and this run is saved."))
            return
        st.dataframe([{"task": r.task, "model": r.model, "steps": r.steps, "ended": r.ended or "",
                       "saved": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.modified))} for r in runs],
                     hide_index=True, key="saved-runs-table",
                     column_config={"task": st.column_config.Column(t("task")), "model": st.column_config.Column(t("model")),
                                    "steps": st.column_config.Column(t("steps")),
                                    "ended": st.column_config.Column(t("ended")),
                                    "saved": st.column_config.Column(t("saved"))})
        by_id = {r.id: r for r in runs}
        if st.session_state.get("saved-run") not in by_id:
            st.session_state["saved-run"] = runs[0].id
        st.selectbox(t("Saved run"), list(by_id), key=choice("saved-run"), format_func=lambda i: _label(by_id[i], now))
        chosen = by_id[st.session_state["saved-run"]]
        if chosen.model != MODEL_NAME and not (st.session_state.get("set-api-key") or (default_key()[0] and lending())):
            st.text_input(t("API key for this run"), type="password", key="resume-api-key", autocomplete="off",
                          help=t("The key is never saved with a run: give it again to go on calling the model."))
        a, b = st.columns(2)
        a.button(t("Resume"), key="resume-run", type="primary", icon=":material/restore:", on_click=_resume,
                 width="stretch", help=t("Bring this run back, live: the same trace and cursor; Step goes on."))
        b.button(t("Delete"), key="delete-run", icon=":material/delete:", on_click=_delete, width="stretch")
