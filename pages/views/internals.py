"""Every use the app makes of Streamlit's private parts, here and nowhere else in pages/ or app.py, behind one gate.

Streamlit publishes no way to do three things the app does, for a class and for the speed of a click:

- waking: the server reruns a follower's page, or its step alone, when the class moves, as Streamlit reruns a
  session whose source file changed (wake.py keeps the pages and decides; `session_id`, `fragment_id`, `live` and
  `rerun` here reach the sessions);
- bursts: the messages a run sends while the server's event loop has not taken the ones before are handed to it
  with one wake (delivery.py says why; `deliver_in_bursts` here puts them between Streamlit's script threads and
  its loop);
- no delay: Nagle's algorithm off on the server's connections (sockets.py says why; `no_delay` here finds them).

The gate: each is on only on the Streamlit these were read in, `PINNED` (requirements.txt pins it), and while what
it relies on is there (`INTERNALS`: a class's methods are looked at when the use starts, an attribute that only a
live session has each time a page asks to be woken). A use turned off is said once in the server's log, with why
and what the app does instead, which is what Streamlit alone does (`INSTEAD`): nothing is lost but speed.
tests/test_streamlit_internals.py lists each internal relied on and fails naming one that is missing. After an
upgrade of Streamlit: run it, mend here what it names, and set `PINNED`; no other file changes.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import streamlit

from .delivery import Burst
from .sockets import no_delay as _no_delay_on

_LOGGER = logging.getLogger(__name__)

PINNED = "1.67.0"  # the Streamlit whose private parts this module was written against

WAKING, BURSTS, NO_DELAY = "waking", "bursts", "no delay"
INSTEAD = {  # what the app does with a use turned off
    WAKING: "a follower's page reads its class every few seconds instead of being woken when the class moves",
    BURSTS: "each message of a run wakes the server's event loop on its own",
    NO_DELAY: "a small message may wait up to 40 ms for the browser's delayed acknowledgement",
}


# -- what is relied on ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Live:
    """What a script run on a real server shows of Streamlit's insides (None where it is not there)."""

    ctx: object | None = None  # the run's ScriptRunContext
    runtime: object | None = None  # Runtime.instance()
    sessions: object | None = None  # its session manager
    info: object | None = None  # the session manager's ActiveSessionInfo of this run's session
    session: object | None = None  # this run's AppSession


@dataclass(frozen=True)
class Internal:
    """One private part of Streamlit a use relies on.

    `cls()` looks at what a class shows (None: nothing to look at there); `obj(live)` at what only a live object
    shows, and is None when the object that would hold it is not there to look at."""

    name: str
    uses: tuple[str, ...]
    cls: Callable[[], bool] | None = None
    obj: Callable[[Live], bool | None] | None = None

    def there(self, live: Live | None = None, classes: bool = True) -> bool | None:
        """True: there; False: missing; None: not looked at (only a live session would show it). `classes=False`:
        what the classes show taken as the gate found it."""
        try:
            if classes and self.cls is not None and not self.cls():
                return False
            seen = self.obj(live) if self.obj is not None and live is not None else None
        except Exception:  # moved, renamed, or not what it was
            return False
        return seen if seen is not None else (True if self.cls is not None else None)


# The arguments of AppSession._on_scriptrunner_event (and of its handler on the loop), in their order
EVENT_ARGS = ("self", "sender", "event", "forward_msg", "exception", "client_state", "page_script_hash",
              "fragment_ids_this_run", "pages", "run_descriptor")


def _app_session():
    from streamlit.runtime.app_session import AppSession

    return AppSession


def _method(name: str, args: tuple[str, ...] | None = None) -> Callable[[], bool]:
    def found() -> bool:
        method = getattr(_app_session(), name, None)
        return callable(method) and (args is None or tuple(inspect.signature(method).parameters) == args)
    return found


def _on_session(name: str) -> Callable[[Live], bool | None]:  # an attribute each AppSession sets on itself
    return lambda live: None if live.session is None else hasattr(live.session, name)


def _runtime() -> bool:
    from streamlit.runtime import Runtime

    return callable(getattr(Runtime, "instance", None)) and callable(getattr(Runtime, "exists", None))


def _run_context() -> bool:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return callable(get_script_run_ctx)


def _session_info() -> bool:
    import dataclasses

    from streamlit.runtime.session_manager import ActiveSessionInfo, SessionManager

    return (callable(getattr(SessionManager, "get_active_session_info", None))
            and "session" in {f.name for f in dataclasses.fields(ActiveSessionInfo)})


def _client_state_fragment() -> bool:
    from streamlit.proto.ClientState_pb2 import ClientState

    return "fragment_id" in ClientState.DESCRIPTOR.fields_by_name


def _thread_state() -> bool:
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    return callable(getattr(ThreadState, "get", None))


def _thread_fragment(live: Live) -> bool | None:
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    try:
        state = ThreadState.get()
    except RuntimeError:  # not on a script's thread: nothing to read it from
        return None
    return hasattr(state, "fragment_id")


def _server_sockets(live: Live) -> bool:
    return any(sock.family.name.startswith("AF_INET") for sock in _served())


INTERNALS: tuple[Internal, ...] = (
    Internal("Runtime.instance()", (WAKING,), cls=_runtime),
    Internal("get_script_run_ctx().session_id", (WAKING,), cls=_run_context,
             obj=lambda live: None if live.ctx is None else hasattr(live.ctx, "session_id")),
    Internal("Runtime._session_mgr", (WAKING,),
             obj=lambda live: None if live.runtime is None else live.sessions is not None),
    Internal("SessionManager.get_active_session_info(session_id).session", (WAKING,), cls=_session_info,
             obj=lambda live: None if live.sessions is None else (
                 callable(getattr(live.sessions, "get_active_session_info", None))
                 and (live.info is None or live.session is not None))),  # (no info: the page's browser went away)
    Internal("AppSession._event_loop", (WAKING, BURSTS), obj=_on_session("_event_loop")),
    Internal("AppSession._scriptrunner", (WAKING,), obj=_on_session("_scriptrunner")),
    Internal("AppSession._client_state", (WAKING,), obj=_on_session("_client_state")),
    Internal("AppSession.request_rerun(client_state)", (WAKING,), cls=_method("request_rerun")),
    Internal("AppSession.has_fragment(fragment_id)", (WAKING,), cls=_method("has_fragment")),
    Internal("ClientState.fragment_id", (WAKING,), cls=_client_state_fragment,
             obj=lambda live: None if not hasattr(live.session, "_client_state")
             else hasattr(live.session._client_state, "fragment_id")),
    Internal("ThreadState.get().fragment_id", (WAKING,), cls=_thread_state, obj=_thread_fragment),
    Internal("AppSession._on_scriptrunner_event(" + ", ".join(EVENT_ARGS) + ")", (BURSTS,),
             cls=_method("_on_scriptrunner_event", EVENT_ARGS)),
    Internal("AppSession._handle_scriptrunner_event_on_event_loop (the same arguments)", (BURSTS,),
             cls=_method("_handle_scriptrunner_event_on_event_loop", EVENT_ARGS)),
    Internal("AppSession._call_soon_on_event_loop(callback)", (BURSTS,), cls=_method("_call_soon_on_event_loop")),
    Internal("the server's sockets, held by asyncio's servers and transports (gc.get_objects())", (NO_DELAY,),
             obj=_server_sockets),
)

_RELIED = {use: tuple(i for i in INTERNALS if use in i.uses) for use in INSTEAD}  # each use's, in INTERNALS' order


def lacking(live: Live | None, *uses: str, classes: bool = True) -> list[str]:
    """The internals that `uses` (all of them if none is given) rely on and this Streamlit lacks, by name. What a
    live session shows is looked at when `live` is given; what a class shows, unless `classes` is False."""
    relied = INTERNALS if not uses else [i for use in uses for i in _RELIED[use]]
    return list(dict.fromkeys(i.name for i in relied if i.there(live, classes) is False))


def live_now() -> Live:
    """What this script run shows (call it in a script run; outside one, or in AppTest, less is there)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    runtime = Runtime.instance() if Runtime.exists() else None
    sessions = getattr(runtime, "_session_mgr", None)  # (AppTest's Runtime is a mock without one)
    get = getattr(sessions, "get_active_session_info", None)
    info = get(ctx.session_id) if callable(get) and ctx is not None else None
    return Live(ctx, runtime, sessions, info, getattr(info, "session", None))


def found(live: Live) -> dict[str, bool | None]:
    """Each internal relied on, by name: there (True), missing (False), not looked at (None)."""
    return {i.name: i.there(live) for i in INTERNALS}


# -- the gate -----------------------------------------------------------------------------------------------------

_off: dict[str, str] | None = None  # the uses turned off in this process, each with why (decided at the first ask)
_gate_lock = threading.Lock()
_said: set[str] = set()  # the uses the server's log said are off


def off() -> dict[str, str]:
    """The uses turned off in this process, each with why: all of them on a Streamlit other than `PINNED`, and one
    whose internals a class of this Streamlit lacks. Said in the server's log once."""
    global _off
    if _off is None:
        with _gate_lock:
            if _off is None:
                if streamlit.__version__ != PINNED:
                    why = {use: f"Streamlit is {streamlit.__version__}, not {PINNED}" for use in INSTEAD}
                else:
                    why = {use: "Streamlit lacks " + ", ".join(missing)
                           for use in INSTEAD if (missing := lacking(None, use))}
                for use, reason in why.items():
                    _say(use, reason)
                _off = why
    return _off


def _usable(use: str) -> bool:
    """Whether `use` may start now: the gate lets it, and the classes it relies on are as they were."""
    if use in off():
        return False
    missing = lacking(None, use)
    if missing:
        _say(use, "Streamlit lacks " + ", ".join(missing))
    return not missing


def _say(use: str, why: str) -> None:
    if use not in _said:
        _said.add(use)
        _LOGGER.warning("Streamlit's private parts: %s turned off (%s); %s", use, why, INSTEAD[use])


# -- waking: which session is this page, and how a session is asked to rerun ---------------------------------------

def session_id() -> str | None:
    """This page's Streamlit session, if this server can wake it (None outside a script run, or in AppTest, or when
    waking is off or lacks one of its internals: see `unmet`)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or unmet():
        return None
    return ctx.session_id if _session(ctx.session_id) is not None else None  # (None: its browser went away)


def unmet() -> list[str]:
    """What keeps this page from being woken, each by name ([]: it can be; called in a script run): the gate, or
    the internals waking relies on that this server lacks. Without them a follower's page reads its class every few
    seconds (following.py `_watch`): all of them are checked here, so that a page is never left neither woken nor
    reading."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    gate = off()
    if WAKING in gate:
        return [gate[WAKING]]
    ctx = get_script_run_ctx()
    if ctx is None:
        return ["get_script_run_ctx()"]
    if not Runtime.exists():
        return ["Runtime.instance()"]
    runtime = Runtime.instance()
    missing = lacking(live_now(), WAKING, classes=False)  # (the gate looked at the classes: `off`)
    if missing and type(runtime) is Runtime:  # (AppTest's Runtime is a mock: no server to wake it, nothing to say)
        _say(WAKING, "Streamlit lacks " + ", ".join(missing))
    return missing


def fragment_id() -> str | None:
    """The fragment running now, if any (None also when waking is off)."""
    if WAKING in off():
        return None
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    try:
        return ThreadState.get().fragment_id
    except (AttributeError, RuntimeError):
        return None


def _session(session_id: str):
    """The open session `session_id` of this server, or None (gone, no server: AppTest has no Runtime, or waking
    off): `Runtime.instance()._session_mgr.get_active_session_info(id).session`, an AppSession."""
    if WAKING in off():
        return None
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    sessions = getattr(Runtime.instance(), "_session_mgr", None)  # (AppTest's Runtime is a mock without one)
    get = getattr(sessions, "get_active_session_info", None)
    return getattr(get(session_id), "session", None) if callable(get) else None


def live(session_id: str) -> bool:
    """Whether the page `session_id` is still open on this server."""
    return _session(session_id) is not None


def rerun(session_id: str, done: Callable[[str, str], None], fragment: str | None = None) -> None:
    """Ask the session to rerun, as Streamlit does when a source file changed (`AppSession._on_source_file_changed`
    calls `self.request_rerun(self._client_state)`): the last run's query string (class=, step=) and page, and the
    widgets' values kept in the session's state. It runs on the server's event loop (`AppSession._event_loop`,
    the loop the session was made on), where the session's state may be touched; `done(session_id, answer)` is
    called there with "woken", "busy" (a script of the session is running: it is not stopped) or "gone".

    With `fragment`, only that fragment reruns (as a click in it does), if the session still holds it; else the page.
    """
    session = _session(session_id)
    if session is None:
        done(session_id, "gone")
        return

    def on_loop() -> None:
        if _session(session_id) is not session:
            done(session_id, "gone")
        elif session._scriptrunner is not None:  # running: a rerun request would stop it
            done(session_id, "busy")
        else:
            state = session._client_state
            if fragment is not None and session.has_fragment(fragment):
                state = type(state)()
                state.CopyFrom(session._client_state)
                state.fragment_id = fragment
            try:
                session.request_rerun(state)
            except Exception:  # not woken: tried again at the watcher's next round, not left behind for good
                _LOGGER.exception("a follower's page could not be woken")
                done(session_id, "busy")
                return
            done(session_id, "woken")

    try:
        session._event_loop.call_soon_threadsafe(on_loop)
    except RuntimeError:  # the loop is closed: the server is stopping
        done(session_id, "gone")


# -- bursts: one wake of the event loop for the events a script thread emitted meanwhile -----------------------

_bursts_done = threading.Event()
_bursts_lock = threading.Lock()
_BURST = "_loopscope_burst"  # a session's events not handled yet (an attribute of the AppSession)
_replaced: list = []  # Streamlit's functions replaced here (see _one_wake)


def deliver_in_bursts() -> list[str]:
    """Put the bursts (delivery.py) between Streamlit's script threads and its event loop, once a process. Returns
    what was installed this call (["wake"]; empty when already done, or when the gate keeps them off)."""
    if _bursts_done.is_set():
        return []
    with _bursts_lock:
        if _bursts_done.is_set():
            return []
        installed = ["wake"] if _usable(BURSTS) and _one_wake() else []
        _bursts_done.set()
        return installed


def _one_wake() -> bool:
    AppSession = _app_session()
    # The ScriptRunners already running hold Streamlit's function by a weak reference (their signal keeps a
    # WeakMethod): kept alive here, their events still reach their sessions, the way they did.
    _replaced.append(AppSession._on_scriptrunner_event)
    AppSession._on_scriptrunner_event = on_scriptrunner_event
    return True


def on_scriptrunner_event(self, sender, event, forward_msg=None, exception=None, client_state=None,
                          page_script_hash=None, fragment_ids_this_run=None, pages=None, run_descriptor=None) -> None:
    """AppSession._on_scriptrunner_event, called from a script thread (or the loop): the event joins the session's
    burst; the first event of a burst asks the loop for the one callback that will handle them all."""
    burst = self.__dict__.get(_BURST)
    if burst is None:
        burst = self.__dict__.setdefault(_BURST, Burst())  # (atomic: two threads get the same one)
    burst.join((sender, event, forward_msg, exception, client_state, page_script_hash, fragment_ids_this_run, pages,
                run_descriptor),
               ask=lambda: self._call_soon_on_event_loop(lambda: _handle(self, burst)),
               closed=self._event_loop.is_closed)  # (Streamlit drops an event for a closed loop, and so does the burst)


def _handle(session, burst: Burst) -> None:
    """On the event loop: the burst's events, each handled as Streamlit does; a failure reported as the loop
    reports a failed callback."""
    burst.handle(lambda item: session._handle_scriptrunner_event_on_event_loop(*item),
                 lambda exc: session._event_loop.call_exception_handler({
                     "message": "Exception in callback AppSession._handle_scriptrunner_event_on_event_loop",
                     "exception": exc,
                 }))


# -- no delay: the server's sockets, found where asyncio keeps them --------------------------------------------

_no_delay_done = threading.Event()
_no_delay_lock = threading.Lock()


def no_delay() -> int:
    """Turn Nagle's algorithm off on this process's TCP sockets that asyncio serves, listening or connected, once
    a process (the first run of the app; sockets.py says why). Returns how many sockets it set."""
    if _no_delay_done.is_set():
        return 0
    with _no_delay_lock:
        if _no_delay_done.is_set():
            return 0
        n = sum(_no_delay_on(sock) for sock in _served()) if _usable(NO_DELAY) else 0
        _no_delay_done.set()
        return n


def _served():
    """The sockets of asyncio's servers (the listening ones) and transports (the connections), as asyncio keeps
    them: a plain socket object is not tracked by the collector, its server and transport objects are."""
    import asyncio
    import gc
    import weakref

    for obj in gc.get_objects():
        if type(obj) in weakref.ProxyTypes:  # (isinstance on a dead proxy raises ReferenceError)
            continue
        if isinstance(obj, asyncio.AbstractServer):
            yield from getattr(obj, "sockets", None) or ()
        elif isinstance(obj, asyncio.Transport):
            sock = obj.get_extra_info("socket")
            if sock is not None:
                yield sock
