"""Refresh loses nothing: the live run is journalled after every step, and "Saved runs" brings one back.

Runs are kept per browser, not per server: in a classroom every browser talks to
one server, and no student should see another's runs. A browser is known by a
random id in the page's URL (`?session=…`), made on its first visit and put back
into the URL on every page (Streamlit clears query parameters when the page
changes). No cookie is used: Streamlit can read cookies (st.context.cookies) but
not set them. A reload keeps the URL, so it keeps the id; the runs live in
`<runs folder>/<id>/`. The runs folder is `runs/` beside app.py, or LOOPSCOPE_RUNS.

What is saved is the trace, the cursor and the run's settings, never the API key:
a run on a real model asks for it again when it is resumed.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from dataclasses import asdict, replace
from pathlib import Path

import streamlit as st

from loop.errors import explain
from loop.fork import continue_from
from loop.model import Model, ModelConfig
from loop.runner import Run, Settings, new_workspace
from loop.runs import RunsFolder, new_run_id
from loop.scripted import MODEL_NAME
from loop.tools import default_toolbox

from .i18n import lang, t
from .settings import RUN, _keep, default_key

SESSION = "session"  # the query parameter, and the session_state key that keeps it between pages
SAVED = "live-run-saved"  # (the Run object, its run id, the cursor and the step count last saved)
ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
COPY_LIMIT = 50 * 2**20  # bytes of an old workspace copied into a resumed run's new one


def runs_root() -> Path:
    return Path(os.environ.get("LOOPSCOPE_RUNS") or Path(__file__).resolve().parents[2] / "runs")


def browser_session() -> str:
    """This browser's id: from the URL, else a new random one; always put back into the URL."""
    sid = st.session_state.get(SESSION)
    if sid is None:
        given = st.query_params.get(SESSION)
        sid = given if given and ID.match(given) else secrets.token_urlsafe(16)
        st.session_state[SESSION] = sid
    if st.query_params.get(SESSION) != sid:
        st.query_params[SESSION] = sid
    return sid


def folder() -> RunsFolder:
    """The runs of this browser, one RunsFolder per session (it remembers what each journal holds)."""
    sid = browser_session()
    kept = st.session_state.get("runs-folder")
    if kept is None or kept[0] != sid:
        kept = (sid, RunsFolder(runs_root() / sid))
        st.session_state["runs-folder"] = kept
    return kept[1]


def settings_of(run: Run) -> dict:
    """What it takes to go on with `run` later; never the key."""
    config = {k: v for k, v in asdict(run.model.config).items() if k != "api_key"}
    return {"config": config, **asdict(run.settings), "toolset": run.settings.toolset or "s01",
            "workspace": str(run.workspace)}


def autosave(run: Run) -> None:
    """Journal the steps `run` has that are not saved yet, and the cursor when it moved. Cheap when nothing did."""
    saved = st.session_state.get(SAVED)
    if saved is None or saved[0] is not run:  # a new run (New run, a fork, a resume) gets its own journal
        linked = len(run.trace) > 0 and _from_link(run)
        saved = (run, None, run.trace.cursor, len(run.trace) if linked else 0)
    _, run_id, cursor, steps = saved
    if run_id is None:  # no journal yet: start one at the first step the learner takes
        if not len(run.trace) or len(run.trace) == steps:
            st.session_state[SAVED] = (run, None, run.trace.cursor, steps)
            return
        run_id, steps = new_run_id(), -1
    try:
        if len(run.trace) != steps:
            folder().save_step(run_id, run.trace, settings_of(run))
        elif run.trace.cursor != cursor:
            folder().save_cursor(run_id, run.trace.cursor)
    except OSError as exc:  # a full disk must not stop the lesson; say so once
        st.toast(t("This run could not be saved: {error}", error=exc), icon=":material/warning:")
    st.session_state[SAVED] = (run, run_id, run.trace.cursor, len(run.trace))


def _from_link(run: Run) -> bool:
    """A built-in scenario on the offline model that a permalink (or the reload of one) opened at step K.

    The link rebuilds it, so it is journalled only once the learner goes further: a reload must
    not add one more copy of the same run to Saved runs each time.
    """
    return (run.model.config.scripted and not run.trace.meta.get("forked_from")
            and st.query_params.get("scenario") is not None and run.task in _scenario_tasks())


def _scenario_tasks() -> set[str]:
    from loop.scripted import SCENARIOS

    return {s.task for s in SCENARIOS.values()}


def current_run_id() -> str | None:
    saved = st.session_state.get(SAVED)
    return saved[1] if saved and saved[0] is st.session_state.get(RUN) else None


def resume(run_id: str, api_key: str | None = None) -> Run:
    """The saved run, live again: the same trace and cursor, going on from its last step with its settings."""
    trace, settings = folder().load(run_id)
    known = ModelConfig.__dataclass_fields__
    config = ModelConfig(**{k: v for k, v in (settings.get("config") or {}).items() if k in known and k != "api_key"})
    if not config.scripted:
        config = replace(config, api_key=api_key or st.session_state.get("set-api-key") or default_key()[0])
    workspace = new_workspace()
    old = Path(str(settings.get("workspace") or ""))
    if str(old) != "." and old.is_dir() and _size(old) <= COPY_LIMIT:  # the files the commands wrote, if still there
        shutil.copytree(old, workspace, dirs_exist_ok=True, symlinks=True)
    kept = Settings(max_turns=int(settings.get("max_turns") or trace.meta.get("max_turns") or 20),
                    tool_timeout=float(settings.get("tool_timeout", 30.0)), toolset=settings.get("toolset", "s01"))
    tools = default_toolbox(workspace, kept.tool_timeout, kept.toolset)
    cursor = trace.cursor
    if len(trace):
        run = continue_from(trace, len(trace) - 1, Model(config), tools, kept)
    else:
        run = Run(trace.meta.get("task", ""), Model(config), tools, settings=kept)
    run.trace.goto(cursor)
    return run


def _size(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
            if total > COPY_LIMIT:
                break
    return total


def _resume() -> None:
    s = st.session_state
    run_id = s.get("saved-run")
    if not run_id:
        return
    try:
        run = resume(run_id, (s.get("resume-api-key") or "").strip() or None)
    except Exception as exc:  # a journal that cannot be read, a missing key
        s["saved-runs-error"] = t("The run {run_id} cannot be resumed: {error}", run_id=run_id, error=explain(exc))
        return
    s.pop("saved-runs-error", None)
    s.pop("live-error", None)
    s.pop("resume-api-key", None)
    _keep(run)
    folder().reopen(run_id)  # the resumed run goes on writing the same journal
    s[SAVED] = (run, run_id, run.trace.cursor, len(run.trace))  # go on writing the same journal
    s["saved-runs-note"] = t("Resumed: {n} steps, at step {k}. The workspace is new (`{workspace}`); files the "
                             "commands wrote earlier were copied when still there.",
                             n=len(run.trace), k=run.trace.cursor + 1, workspace=run.workspace)


def _delete() -> None:
    s = st.session_state
    run_id = s.get("saved-run")
    if run_id:
        folder().delete(run_id)
        s.pop("saved-run", None)
        s["saved-runs-note"] = t("Deleted the saved run {run_id}.", run_id=run_id)


def _label(saved, now: str) -> str:
    """A saved run in one line, in the language `now` (a format_func may be called outside the script run)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved.modified))
    ended = t("ended: {reason}", now, reason=saved.ended) if saved.ended else t("not ended", now)
    steps = t("{n} steps", now, n=saved.steps)
    return f"{saved.task[:60]} · {saved.model} · {steps} · {ended} · {when}"


def draw_saved_runs(run: Run) -> None:
    """The runs this browser saved, newest first: Resume one (same trace and cursor, live) or Delete it."""
    this = current_run_id()
    runs = [r for r in folder().list() if r.id != this]
    expanded = bool(runs) and not len(run.trace)  # a reload lands on a fresh run: offer the saved ones
    note = st.session_state.pop("saved-runs-note", None)
    if note:  # outside the expander: a resumed run closes it
        st.success(note, icon=":material/check:")
    now = lang()
    with st.expander(t("Saved runs · {n}", n=len(runs)), icon=":material/folder_open:", expanded=expanded):
        st.caption(t("Every step of a live run is saved on this server for this browser only (the link's "
                     "`session` keeps it; share the link and you share the runs). The API key is never saved."))
        if st.session_state.get("saved-runs-error"):
            st.error(st.session_state["saved-runs-error"], icon=":material/error:")
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
        st.selectbox(t("Saved run"), list(by_id), key="saved-run", format_func=lambda i: _label(by_id[i], now))
        chosen = by_id[st.session_state["saved-run"]]
        if chosen.model != MODEL_NAME and not (st.session_state.get("set-api-key") or default_key()[0]):
            st.text_input(t("API key for this run"), type="password", key="resume-api-key", autocomplete="off",
                          help=t("The key is never saved with a run: give it again to go on calling the model."))
        a, b = st.columns(2)
        a.button(t("Resume"), key="resume-run", type="primary", icon=":material/restore:", on_click=_resume,
                 width="stretch", help=t("Bring this run back, live: the same trace and cursor; Step goes on."))
        b.button(t("Delete"), key="delete-run", icon=":material/delete:", on_click=_delete, width="stretch")
