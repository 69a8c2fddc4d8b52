"""The live run of this browser session, and the sidebar that sets up the next one.

Each session has its own Run in st.session_state and its own workspace (start()
makes a temporary folder). The API key is read from the field, else from
ANTHROPIC_API_KEY or .streamlit/secrets.toml; it is never drawn, logged or saved.
A key from the environment is not put in the password field either: that would
send it to the browser. The server's key is lent to a browser by loop/engine/keys.py's
rule: only to the server's own base URL, only if the operator allows it, and
within limits counted in the runs store (`lent_key`).

Streamlit forgets a widget's value on a page that does not draw it, so each
sidebar setting is also kept under `kept-<widget key>` and put back when Step
through draws the sidebar again (the pattern of Streamlit's "Widget behavior:
retain statefulness when changing pages"). A typed key is kept like the rest:
in this session's memory, and only ever sent back to the field it was typed in.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import replace
from pathlib import Path

import streamlit as st

from loop.engine import keys
from loop.engine.compact import THRESHOLD
from loop.engine.profiles import MINIMAL, NAMES, PROFILES
from loop.files.export import inline_code, plain
from loop.files.runs import StoreError
from loop.views.errors import explain
from loop.engine.model import SCRIPTED, ModelConfig
from loop.engine.runner import Run, start
from loop.engine.scenarios import SCENARIOS, scenario_for_task
from loop.tools.sandbox import UNSANDBOXED_VARIABLE, programs, unsandboxed_allowed
from loop.engine.toolsets import TOOLSETS

from .browser import store, this_browser
from .gate import REAL, TOGGLE, default_on, draw_toggle, model_changed, real_model
from .i18n import choice, lang, t
from .keep import KEPT, kept as _kept

RUN = "live-run"
CLEANUP = "live-run-cleanup"
FREE = "free task"
DEFAULT_SCENARIO = "two-tools"
DEFAULT_MODEL_ID = "claude-sonnet-4-5"


def _secret(name: str) -> str | None:
    """A value from secrets.toml when such a file exists; never an error when none does."""
    try:
        files = st.get_option("secrets.files")
    except Exception:
        files = []
    if not any(Path(f).is_file() for f in files or []):
        return None
    try:
        value = st.secrets.get(name)
    except Exception:  # a malformed secrets.toml must not break the page
        return None
    return str(value) if value else None


def default_key() -> tuple[str | None, str]:
    """(key, where it came from) when no key is typed in."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return os.environ["ANTHROPIC_API_KEY"], "ANTHROPIC_API_KEY"
    secret = _secret("ANTHROPIC_API_KEY")
    return (secret, "secrets.toml") if secret else (None, "")


def lent_key(base_url: str | None, typed: str | None) -> tuple[str | None, keys.Allowance | None]:
    """The key a real model's calls carry from this browser, and its allowance when the key is the server's.

    A typed key is the browser's own: it goes wherever the browser says, with no limits. The server's key
    goes only to the server's own base URL, when the operator lends it, counted for this browser; otherwise
    KeyRefused says why and nothing is sent. None when the server has no key either (a keyless server).
    """
    if typed:
        return typed, None
    server = default_key()[0]
    if not server:
        return None, None
    if not keys.is_server_url(base_url):
        raise keys.KeyRefused(keys.OWN_URL_OWN_KEY)
    if not keys.lending():
        raise keys.KeyRefused(keys.SERVER_KEY_OFF, setting=keys.SETTING)
    ledger = store()
    try:
        ledger.secret()  # spending is counted in the runs store: no store, no server key
    except (StoreError, OSError) as exc:
        raise keys.KeyRefused(keys.NO_LEDGER, error=str(exc)[:200]) from None
    owner = this_browser()
    if owner is None:
        raise keys.KeyRefused(keys.NO_LEDGER, error="-")
    return server, keys.Allowance(ledger, owner, keys.limits())


def _own_key_note() -> str:
    return t("A Base URL of your own needs an API key of your own: the server's key goes only to its own base URL.")


def _keep(run: Run) -> Run:
    """Make `run` this session's run. What it made (its workspace, its cgroups) goes when the run does:
    at the next New run, or when the session ends and its state is dropped. The run's tool box knows
    what is its own; nothing is guessed from a folder's name."""
    old = st.session_state.get(CLEANUP)
    if old is not None:
        old()  # closes the previous run's tool box now
    close = getattr(run.tools, "close", None)  # the box holds no reference to the run: the run can still go
    st.session_state[CLEANUP] = weakref.finalize(run, close) if callable(close) else None
    st.session_state[RUN] = run
    return run


def unsandboxed_refusal(config: ModelConfig) -> str | None:
    """Why a real model may not run commands on this server (no bubblewrap, and the operator did not opt in)."""
    if config.scripted or programs().bwrap or unsandboxed_allowed():
        return None
    return t("A real model's commands need bubblewrap, which cannot run on this server ({why}). On a shared server "
             "a model's commands could read other students' work and reach the network. Use the scripted model, or "
             "ask the operator to install bubblewrap (or to set {variable}=1 to accept the risk).",
             why=programs().why_not, variable=UNSANDBOXED_VARIABLE)


def live_run() -> Run:
    """This session's run; the first visit gets the default scenario on the offline model."""
    if RUN not in st.session_state:
        _keep(start(scenario=DEFAULT_SCENARIO, lang=lang()))
    return st.session_state[RUN]


def _new_run() -> None:
    s = st.session_state
    if not real_model():  # the offline model, unless a real one is chosen in so many words
        config = ModelConfig()
    else:
        base_url = (s.get("set-base-url") or "").strip() or None
        try:
            key, allowance = lent_key(base_url, s.get("set-api-key"))
        except keys.KeyRefused as exc:  # the server's key may not go there: nothing is started, nothing sent
            s["live-setup-error"] = explain(exc, lang())
            return
        config = ModelConfig(model=(s.get("set-model-id") or DEFAULT_MODEL_ID).strip(), api_key=key,
                             stream=bool(s.get("set-stream")), base_url=base_url, allowance=allowance)
    scenario = s.get("set-scenario", DEFAULT_SCENARIO)
    task = (s.get("set-task") or "").strip()
    if scenario == FREE and not task:
        s["live-setup-error"] = t("Type a task first, or pick a scenario.")
        return
    refusal = unsandboxed_refusal(config)
    if refusal:
        s["live-setup-error"] = refusal
        return
    if config.scripted and chosen_profile() != MINIMAL and s.get("set-stream"):  # early tool starts need a stream
        config = replace(config, stream=True)
    try:
        run = start(task if scenario == FREE else None, scenario=None if scenario == FREE else scenario,
                    config=config, tool_timeout=float(s.get("set-tool-timeout", 30)),
                    max_turns=int(s.get("set-max-turns", 20)), toolset=s.get("set-toolset") or "s01", lang=lang(),
                    compact_at=int(s["set-compact-at"]) if s.get("set-compact-at") else None,
                    profile=chosen_profile())
    except Exception as exc:  # a missing key, say: keep the current run and say what to do
        s["live-setup-error"] = explain(exc, lang())
        return
    s.pop("live-setup-error", None)
    s.pop("live-error", None)
    _keep(run)


def chosen_profile() -> str:
    """The loop profile the sidebar (or a link) chose: the chapter's minimal loop unless said otherwise."""
    value = st.session_state.get("set-profile")
    return value if value in PROFILES else MINIMAL


def follow(run: Run) -> None:
    """Set the sidebar to the run a link opened, so that it says what the page shows and New run restarts it.

    Called once, when the link opens: it overrides what this browser had chosen before (a teacher's link runs
    what the teacher saw), and what the learner chooses afterwards is theirs. A link's run is a built-in
    scenario on the offline model; every setting New run reads is taken from the run itself.
    """
    s = st.session_state
    if s.get("set-model", s.get(KEPT + "set-model")) == REAL:  # (kept only, after another page)
        s[TOGGLE] = s[KEPT + TOGGLE] = False  # the scripted model's gate, as choosing it in the sidebar sets it
    settings = run.settings
    chosen = {"set-model": SCRIPTED, "set-scenario": scenario_for_task(run.task).name, "set-profile": run.profile.name,
              "set-toolset": settings.toolset or "s01", "set-stream": bool(run.model.config.stream),
              "set-tool-timeout": int(settings.tool_timeout), "set-max-turns": int(settings.max_turns)}
    if settings.compact_at:
        chosen["set-compact-at"] = int(settings.compact_at)
    else:  # not asked for: the field, when drawn, shows its default and New run asks for none either
        s.pop("set-compact-at", None)
        s.pop(KEPT + "set-compact-at", None)
    for key, value in chosen.items():
        s[key] = s[KEPT + key] = value  # kept too: a setting not drawn now (Stream) must not fall back


def _scenario_changed() -> None:
    """A scenario made to show the complete loop selects it; the learner may still switch back to the minimal one."""
    chosen = SCENARIOS.get(st.session_state.get("set-scenario"))
    if chosen is not None and chosen.profile:
        st.session_state["set-profile"] = chosen.profile


def draw_sidebar() -> None:
    """Model, key, base URL, scenario or task, tool timeout, max turns, and New run."""
    now = lang()  # for the format_funcs, which may be called outside this run
    with st.sidebar:
        st.markdown(t("### Next run"))
        st.radio(t("Model"), [SCRIPTED, REAL], key=choice(_kept("set-model", SCRIPTED)), on_change=model_changed,
                 format_func=lambda m: t("An Anthropic model", now) if m == REAL else t("Scripted (offline, no key)", now))
        if real_model():
            st.text_input(t("Model id"), key=_kept("set-model-id", DEFAULT_MODEL_ID))
            _, source = default_key()
            source = source if keys.lending() else ""  # a key the server does not lend is not offered
            st.text_input(t("API key"), type="password", key=_kept("set-api-key", ""), autocomplete="off",
                          placeholder=t("using {source}", source=source) if source else "sk-ant-…",
                          help=t("Kept in this session only; never shown, logged or saved.")
                          + (t(" Left empty, the key from {source} is used.", source=source) if source else ""))
            if default_key()[0] and not source:
                st.caption(t("This server does not lend its API key: type an API key of your own."))
            st.text_input(t("Base URL"), key=_kept("set-base-url", os.environ.get("ANTHROPIC_BASE_URL", "")),
                          placeholder="https://api.anthropic.com",
                          help=t("Leave empty for Anthropic's API, or give an Anthropic-compatible server.")
                          + " " + _own_key_note())
            if source and not st.session_state.get("set-api-key") \
                    and not keys.is_server_url(st.session_state.get("set-base-url")):
                st.caption(_own_key_note())
        # The boxes show a name that fits; what it stands for is written out under them, where it can wrap.
        st.selectbox(t("Task"), [*SCENARIOS, FREE], key=choice(_kept("set-scenario", DEFAULT_SCENARIO)),
                     on_change=_scenario_changed, format_func=lambda n: t("A task of my own…", now) if n == FREE else n)
        if st.session_state.get("set-scenario") == FREE:
            st.text_area(t("Your task"), key=_kept("set-task", ""), placeholder=t("What Python version is installed?"))
        else:
            chosen = SCENARIOS[st.session_state.get("set-scenario", DEFAULT_SCENARIO)]
            st.caption(f"{t(chosen.about)} · “{plain(chosen.task_in(now))}”")
        st.radio(t("Loop"), list(PROFILES), key=choice(_kept("set-profile", MINIMAL)),
                 format_func=lambda p: t(NAMES[p], now),
                 help=t("The chapter's table, both columns: the minimal loop goes on only for a tool_result; the "
                        "complete loop also retries a failed call, continues an answer cut at max_tokens, compacts a "
                        "prompt that is too long, and runs safe tools at once."))
        if real_model() or chosen_profile() != MINIMAL:
            st.toggle(t("Stream the answer"), key=_kept("set-stream", False),
                      help=t("Show the model's text as it arrives (`ModelConfig(stream=True)`). In the complete loop a "
                             "tool then starts as soon as its block is complete."))
        with st.container(horizontal=True):  # one block, not three: the page redraws it on every click
            st.number_input(t("Tool timeout (s)"), 1, 120, key=_kept("set-tool-timeout", 30))
            st.number_input(t("Max turns"), 1, 100, key=_kept("set-max-turns", 20))
        st.selectbox(t("Toolset"), list(TOOLSETS), key=_kept("set-toolset", "s01"))
        st.caption(t(TOOLSETS[st.session_state.get("set-toolset", "s01")]))
        chosen = SCENARIOS.get(st.session_state.get("set-scenario", DEFAULT_SCENARIO))
        if chosen is not None and chosen.toolset:  # a scenario made for a toolset runs with it
            st.caption(t("This scenario runs with toolset {toolset}.", toolset=inline_code(chosen.toolset)))
        if (chosen.toolset if chosen is not None and chosen.toolset else st.session_state.get("set-toolset")) == "s06":
            default = chosen.compact_at if chosen is not None and chosen.compact_at else THRESHOLD
            st.number_input(t("Compact past (estimated tokens)"), 100, 10_000_000, step=100,
                            key=_kept("set-compact-at", default),
                            help=t("Auto-compact: when the history's estimated tokens (JSON length / 4) pass this, "
                                   "the loop summarises it before the next call."))
        _kept(TOGGLE, default_on())  # the approval gate's toggle, drawn by gate.py
        draw_toggle()
        st.button(t("New run"), key="new-run", type="primary", on_click=_new_run, width="stretch",
                  icon=":material/restart_alt:", help=t("Start again with these settings, in a fresh workspace."))
        if st.session_state.get("live-setup-error"):
            st.error(plain(st.session_state["live-setup-error"]), icon=":material/error:")
