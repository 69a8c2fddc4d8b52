"""Permalinks, as Python Tutor has them: the URL names the run and the step, and follows the cursor.

`?scenario=NAME&step=K` on Step through runs the built-in scenario on the
offline model up to step K (never a real model: a link must not spend anyone's
key); `?sample=NAME&step=K` on Replay opens a built-in sample at step K; `lang`
is kept by i18n. `&profile=complete` runs the scenario in the complete loop
(profiles.py); without it a link runs the minimal loop, the chapter's.
`&predict=on` turns Predict, then step on (predict.py), `&present=on` presenter
mode (presenter.py; Step through and Your loop only). Nothing else goes into
the URL: a copied link is always safe to share. A scenario link,
when it opens, sets the sidebar to the run it opened, so New run restarts it.

`?code=…&scenario=NAME&step=K` on Your loop holds the learner's source itself,
zlib-compressed and URL-safe base64 (`code_param`), as Python Tutor's links hold
the code: opening it runs that code once in the sandbox, on the scenario, up to
step K. `source_of` reads it back, bounded, so a link cannot cost the server more
than a source of `CODE_MOST` bytes would.
"""

from __future__ import annotations

import base64
import binascii
import zlib

import streamlit as st

from loop.views.errors import explain
from loop.engine.profiles import COMPLETE, MINIMAL, PROFILES
from loop.engine.runner import Run, start
from loop.engine.scenarios import SCENARIOS, scenario_for_task
from loop.engine.trace import Trace

from .i18n import lang
from .predict import on as predict_on
from .presenter import presenting
from .settings import follow

SEEN = "permalink-seen"  # the link last opened or written: a link is opened once, not at every rerun
CODE_MOST = 64 * 1024  # bytes of a learner's source a link may hold, once decompressed


class BadCode(ValueError):
    """A link's `code` that is not a learner's source: not URL-safe base64 of zlib, not UTF-8, or too large."""

    def __init__(self, too_large: bool = False):
        super().__init__("too large" if too_large else "unreadable")
        self.too_large = too_large


def code_param(source: str) -> str:
    """A learner's source as a link holds it: zlib-compressed, URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(zlib.compress(source.encode("utf-8"), 9)).rstrip(b"=").decode("ascii")


def source_of(param: str) -> str:
    """The source a link's `code` holds; BadCode when it holds none.

    At most CODE_MOST + 1 bytes are ever inflated: a small link that would inflate to gigabytes costs nothing."""
    if len(param) > 2 * CODE_MOST:  # more than any source of CODE_MOST bytes compresses to
        raise BadCode(too_large=True)
    text = param.strip().replace("-", "+").replace("_", "/")
    try:
        data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        inflate = zlib.decompressobj()
        source = inflate.decompress(data, CODE_MOST + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise BadCode() from None
    if len(source) > CODE_MOST or inflate.unconsumed_tail:
        raise BadCode(too_large=True)
    if not inflate.eof or inflate.unused_data:  # cut short, or something after the stream
        raise BadCode()
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError:
        raise BadCode() from None


def learners_link(trace: Trace) -> tuple[str, str] | None:
    """(code, scenario) of the link that rebuilds a learner's run (Your loop's), from the trace's meta."""
    yours = trace.meta.get("yours")
    if not isinstance(yours, dict):
        return None
    source, scenario = yours.get("source"), yours.get("scenario")
    if not isinstance(source, str) or not isinstance(scenario, str) or len(source.encode("utf-8")) > CODE_MOST:
        return None
    if yours.get("files"):  # a project's run: a link carries one file, which would not run alone
        return None
    return code_param(source), scenario


def _wanted(name_param: str) -> tuple[str, int] | None:
    name, step = st.query_params.get(name_param), st.query_params.get("step", "")
    if not name:
        return None
    try:
        k = max(0, int(step)) if step else 0
    except ValueError:
        k = 0
    return name, k


def scenario_of(run: Run) -> str | None:
    """The built-in scenario a run on the offline model plays, if it plays one."""
    if not run.model.config.scripted:
        return None
    found = scenario_for_task(run.task)
    return found.name if found else None


def linked_profile() -> str:
    """The loop profile the URL names (`?profile=complete`), or the minimal loop."""
    value = st.query_params.get("profile")
    return value if value in PROFILES else MINIMAL


def _go(run: Run, k: int) -> None:
    """Put the cursor on step k (1-based), executing stages as far as needed (a retry's wait is not waited again:
    the link rebuilds a run whose waits are over)."""
    try:
        while len(run.trace) < k and not run.done:
            run.skip_wait()
            run.execute()
    except Exception as exc:  # an API error on the way (the minimal loop does not retry a 529): said as a Step
        stage = run.next_stage()  # would say it, on the step it stopped at; the steps before it are kept
        st.session_state["live-error"] = {"stage": stage, "message": explain(exc, lang(), run.model.config.api_key)}
    run.trace.goto(min(k, len(run.trace)) - 1)


def open_scenario_link(current: Run | None, keep) -> None:
    """On Step through: open `?scenario=NAME&step=K` once; `keep(run)` makes a new run the session's.

    Call it before the sidebar is drawn: it sets the sidebar's settings to the run it opens."""
    wanted = _wanted("scenario")
    if wanted is not None:
        wanted = (*wanted, linked_profile())
    if wanted is None or wanted == st.session_state.get(SEEN) or wanted[0] not in SCENARIOS:
        return
    st.session_state[SEEN] = wanted
    name, k, profile = wanted
    run = current
    if run is None or scenario_of(run) != name or run.profile.name != profile:
        run = keep(start(scenario=name, lang=lang(), profile=profile))
    follow(run)  # the sidebar says what the link runs, and New run restarts it
    _go(run, k)


def open_sample_link(names: list[str], open_sample) -> None:
    """On Replay: open `?sample=NAME&step=K` once; `open_sample()` opens the sample chosen."""
    wanted = _wanted("sample")
    if wanted is None or wanted == st.session_state.get(SEEN) or wanted[0] not in names:
        return
    st.session_state[SEEN] = wanted
    name, k = wanted
    replay = st.session_state.get("replay")
    if not replay or replay.get("name") != f"{name}.json" or replay.get("source") != "sample":
        st.session_state["replay-sample"] = name
        open_sample()
        replay = st.session_state.get("replay")
    if replay:
        replay["trace"].goto(k - 1)


def keep_url(trace: Trace, key: str, run: Run | None) -> None:
    """Write the run and the cursor into the URL, so a copied link opens this very view."""
    if key == "yours":
        _keep_learners_url(trace)
        return
    # The query read once, and written only where it changes: a cursor move changes `step`, nothing else.
    url = st.query_params.to_dict()
    _drop(url, "code")  # only Your loop's links hold a learner's code
    if key == "live":
        param, name = "scenario", scenario_of(run) if run is not None else None
    else:
        # Only Replay's own sample has a link; another page's run (Your loop's) has none
        replay = (st.session_state.get("replay") or {}) if key == "replay" else {}
        param = "sample"
        name = replay["name"].rsplit(".", 1)[0] if replay.get("source") == "sample" else None
    step = str(trace.cursor + 1)
    _drop(url, "sample" if param == "scenario" else "scenario")
    if predict_on():  # ?predict=on: a link opens with the questions on
        _put(url, "predict", "on")
    else:
        _drop(url, "predict")
    if key == "live" and presenting():  # ?present=on: a link opens on the projector's view (not Replay's: it has none)
        _put(url, "present", "on")
    else:
        _drop(url, "present")
    if name is None:  # a free task, a real model, an uploaded file: no link can rebuild it
        _drop(url, param, "step", "profile")
        return
    complete = trace.meta.get("profile") == COMPLETE
    if complete:
        _put(url, "profile", COMPLETE)
    else:
        _drop(url, "profile")
    _put(url, param, name)
    seen = st.session_state.get(SEEN)
    if seen is not None and seen[1] != trace.cursor + 1:
        # The query as read is the page's when it was clicked: a run of a click since (Back, then Step before the
        # page heard of the Back) may have written another step into it.
        url.pop("step", None)
    _put(url, "step", step)
    st.session_state[SEEN] = (name, trace.cursor + 1) + ((COMPLETE if complete else MINIMAL,) if key == "live" else ())


def _drop(url: dict[str, str], *params: str) -> None:
    """Take `params` out of the URL (`url`: its query as read), those it holds only."""
    for p in params:
        if p in url:
            del url[p]
            st.query_params.pop(p, None)


def _put(url: dict[str, str], param: str, value: str) -> None:
    """`param=value` in the URL (`url`: its query as read), unless it says so already."""
    if url.get(param) != value:
        url[param] = value
        st.query_params[param] = value


def _keep_learners_url(trace: Trace) -> None:
    """Your loop's link: the learner's code as run, its scenario and the step; nothing else."""
    for p in ("sample", "profile", "predict"):
        st.query_params.pop(p, None)
    if presenting():
        st.query_params["present"] = "on"
    else:
        st.query_params.pop("present", None)
    link = learners_link(trace)
    if link is None:  # a source too large for a link: none is written
        for p in ("code", "scenario", "step"):
            st.query_params.pop(p, None)
        return
    code, scenario = link
    step = str(trace.cursor + 1)
    for p, value in (("code", code), ("scenario", scenario), ("step", step)):
        if st.query_params.get(p) != value:
            st.query_params[p] = value
    st.session_state[SEEN] = ("yours", code, scenario, trace.cursor + 1)
