"""A run's messages reach the server's loop in bursts (pages/views/delivery.py): all of them, in the order the script
sent them, with one wake of the loop for the events a script thread emitted meanwhile."""

from __future__ import annotations

import asyncio
import re
import sys
import threading

import pytest
from streamlit.runtime.app_session import AppSession

import pages.views.internals as internals
from tests.browser import serve_app
from tests.wire import Wire


class Session:
    """What of an AppSession the delivery uses: its loop, how it asks the loop for a callback, and its handler,
    which here notes each event and, as Streamlit's, ignores those of a ScriptRunner that is no longer current."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._event_loop, self.current = loop, None
        self.handled: list[tuple] = []
        self.wakes = 0

    def _call_soon_on_event_loop(self, callback) -> None:
        self.wakes += 1
        self._event_loop.call_soon_threadsafe(callback)

    def _handle_scriptrunner_event_on_event_loop(self, sender, event, forward_msg=None, *rest) -> None:
        assert threading.current_thread() is LOOP_THREAD[0]
        if sender is self.current:
            self.handled.append((sender, event, forward_msg))


LOOP_THREAD: list[threading.Thread] = []


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    LOOP_THREAD[:] = [thread]
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def _settled(loop) -> None:
    """Until the loop has run every callback asked of it so far (and those they asked for)."""
    for _ in range(3):
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(timeout=30)


def test_events_emitted_while_the_loop_is_busy_are_handled_in_one_wake_in_their_order(loop):
    session = Session(loop)
    session.current = "runner"
    busy, free = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (busy.set(), free.wait(30)))  # the loop is sending another page's answer
    busy.wait(30)
    for i in range(30):
        internals.on_scriptrunner_event(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg=i)
    free.set()
    _settled(loop)
    assert [msg for _, _, msg in session.handled] == list(range(30))
    assert session.wakes == 1


def test_events_of_two_script_threads_arrive_all_in_the_order_they_were_emitted_and_a_stale_runner_s_are_ignored(
        loop):
    session = Session(loop)
    session.current = "new"
    emitted: list[tuple] = []
    order = threading.Lock()  # the order the two threads emitted in, as the loop must handle them
    start = threading.Barrier(2)

    def script(sender: str) -> None:
        start.wait(30)
        for i in range(2000):
            with order:
                emitted.append((sender, "ENQUEUE_FORWARD_MSG", i))
                internals.on_scriptrunner_event(session, sender, "ENQUEUE_FORWARD_MSG", forward_msg=i)

    threads = [threading.Thread(target=script, args=(sender,)) for sender in ("stale", "new")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _settled(loop)
    assert session.handled == [e for e in emitted if e[0] == "new"]  # all of the current runner's, in order
    assert session.wakes < len(emitted)

    # The runner changes between two bursts: the old one's late events are ignored, as Streamlit does
    internals.on_scriptrunner_event(session, "new", "SHUTDOWN")
    _settled(loop)
    session.current = "newer"
    internals.on_scriptrunner_event(session, "new", "ENQUEUE_FORWARD_MSG", forward_msg="late")
    internals.on_scriptrunner_event(session, "newer", "SCRIPT_STARTED")
    _settled(loop)
    assert session.handled[-2:] == [("new", "SHUTDOWN", None), ("newer", "SCRIPT_STARTED", None)]


def test_an_event_whose_handling_fails_is_reported_and_the_ones_after_it_are_still_handled(loop):
    session = Session(loop)
    session.current = "runner"
    reported = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context["exception"]))
    handle = session._handle_scriptrunner_event_on_event_loop

    def fails_on_1(sender, event, forward_msg=None, *rest):
        if forward_msg == 1:
            raise ValueError("one")
        handle(sender, event, forward_msg)

    session._handle_scriptrunner_event_on_event_loop = fails_on_1
    busy, free = threading.Event(), threading.Event()
    loop.call_soon_threadsafe(lambda: (busy.set(), free.wait(30)))
    busy.wait(30)
    for i in range(3):
        internals.on_scriptrunner_event(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg=i)
    free.set()
    _settled(loop)
    assert [msg for _, _, msg in session.handled] == [0, 2]
    assert [str(e) for e in reported] == ["one"]


# -- a real server: every message of each run, in order ------------------------------------------------------

APP = """
import streamlit as st
from pages.views.internals import deliver_in_bursts

deliver_in_bursts()
st.session_state["run"] = st.session_state.get("run", 0) + 1
for i in range(300):
    st.text(f"run {st.session_state['run']} message {i}")
st.button("again", key="again")
"""


def test_every_message_of_a_run_reaches_the_browser_in_the_order_the_script_sent_it(tmp_path):
    app = tmp_path / "many.py"
    app.write_text(APP)

    async def main(url: str) -> list[list[tuple[int, int]]]:
        wire = Wire(url)
        await wire.open()
        runs = [_texts(wire)]
        for _ in range(4):  # the first run installed the delivery: these go through it
            await wire.rerun("again")
            runs.append(_texts(wire))
        await wire.close()
        return runs

    with serve_app(app=app) as url:
        runs = asyncio.run(asyncio.wait_for(main(url), 60))  # (a run whose messages were lost never finishes)
    assert runs == [[(run, i) for i in range(300)] for run in range(1, 6)]


def _texts(wire: Wire) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for raw in wire.text for m in re.finditer(rb"run (\d+) message (\d+)", raw)]


# -- other versions of Streamlit: nothing installed ----------------------------------------------------------

@pytest.fixture
def fresh(monkeypatch):
    """This process as before the app's first run: nothing installed (and put back as it was afterwards)."""
    monkeypatch.setattr(AppSession, "_on_scriptrunner_event", AppSession._on_scriptrunner_event)
    monkeypatch.setattr(internals, "_bursts_done", threading.Event())
    monkeypatch.setattr(internals, "_off", None)  # (the gate decided afresh here, and as before afterwards)
    monkeypatch.setattr(internals, "_said", set())
    return monkeypatch


def test_when_streamlit_s_internals_are_not_the_expected_ones_nothing_is_installed(fresh):
    def other(self, sender, event, forward_msg=None, exception=None, client_state=None, page_script_hash=None,
              fragment_ids_this_run=None, pages=None, run_descriptor=None, something_new=None):
        pass

    fresh.setattr(AppSession, "_on_scriptrunner_event", other)  # another signature
    assert internals.deliver_in_bursts() == []
    assert AppSession._on_scriptrunner_event is other
    fresh.setattr(internals, "_bursts_done", threading.Event())
    fresh.setitem(sys.modules, "streamlit.runtime.app_session", None)  # moved elsewhere
    assert internals.deliver_in_bursts() == []
    assert internals.deliver_in_bursts() == []  # once a process


def test_installed_once_a_process_on_streamlit_1_67(fresh):
    assert internals.deliver_in_bursts() == ["wake"]
    assert AppSession._on_scriptrunner_event is internals.on_scriptrunner_event
    assert internals.deliver_in_bursts() == []


def test_a_callback_the_loop_queues_while_an_event_is_handed_over_still_comes_after_that_event(loop):
    """Streamlit queues the message of a failed browser request on the loop right after the events it emits, and it
    must reach the page after them (a new run clears what came before). An event joins a burst only once the burst's
    callback is in the loop's queue: the loop, asked meanwhile, queues its own after it."""
    session = Session(loop)
    session.current = "runner"
    order: list = []
    session._handle_scriptrunner_event_on_event_loop = lambda sender, event, forward_msg=None, *rest: \
        order.append(forward_msg)
    schedule = session._call_soon_on_event_loop
    joined = threading.Thread(target=lambda: (
        internals.on_scriptrunner_event(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg="joined"),
        loop.call_soon_threadsafe(lambda: order.append("the error's message"))))

    def handing_over(callback) -> None:  # a thread that takes the GIL in the middle of the first handing over
        if joined.ident is None:
            joined.start()
            joined.join(0.2)  # (the joiner waits for the handing over, or is done: either way, it is after it)
        # (When the loop has taken the first burst before the joiner's event came, that event starts a burst of its
        # own and asks for its callback here; its message must still come before the error's.)
        schedule(callback)

    session._call_soon_on_event_loop = handing_over
    internals.on_scriptrunner_event(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg="first")
    joined.join(30)
    _settled(loop)
    assert order == ["first", "joined", "the error's message"]


def test_an_event_for_a_closed_loop_is_dropped_as_streamlit_drops_it_and_the_next_one_asks_again():
    class Closed(Session):
        def _call_soon_on_event_loop(self, callback) -> None:  # Streamlit's: a closed loop drops the callback
            self.wakes += 1

    loop = asyncio.new_event_loop()
    loop.close()
    session = Closed(loop)
    for i in range(3):
        internals.on_scriptrunner_event(session, "runner", "ENQUEUE_FORWARD_MSG", forward_msg=i)
    assert session.wakes == 3  # each asked for its own callback: none waits behind one that will never run
    assert session.__dict__[internals._BURST].events == []
