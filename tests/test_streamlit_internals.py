"""Every private part of Streamlit the app relies on (pages/views/internals.py), listed here one by one: on the
Streamlit this project pins each is there, looked at in a real server's script run; a missing one is named, and
only the use that relies on it is turned off. On another Streamlit the gate turns every use off, says so in the
server's log, and the app still works as Streamlit alone does (a page with the gate off: here in AppTest, and a
class followed over a real server in tests/test_follow_fallback.py). An upgrade of Streamlit that moves one of
these fails here, naming it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import threading
from pathlib import Path

import pytest
import streamlit
from streamlit.runtime.app_session import AppSession

from pages.views import internals
from tests.apptest import app
from tests.browser import ROOT, serve_app
from tests.wire import Wire

# Each internal the app relies on, by the name internals.py gives it
RELIED_ON = [
    # waking a follower's page when its class moves (wake.py)
    "Runtime.instance()",
    "get_script_run_ctx().session_id",
    "Runtime._session_mgr",
    "SessionManager.get_active_session_info(session_id).session",
    "AppSession._event_loop",
    "AppSession._scriptrunner",
    "AppSession._client_state",
    "AppSession.request_rerun(client_state)",
    "AppSession.has_fragment(fragment_id)",
    "ClientState.fragment_id",
    "ThreadState.get().fragment_id",
    # a run's messages handed to the server's loop in bursts (delivery.py)
    "AppSession._on_scriptrunner_event(self, sender, event, forward_msg, exception, client_state, page_script_hash, "
    "fragment_ids_this_run, pages, run_descriptor)",
    "AppSession._handle_scriptrunner_event_on_event_loop (the same arguments)",
    "AppSession._call_soon_on_event_loop(callback)",
    # Nagle's algorithm off on the server's connections (sockets.py)
    "the server's sockets, held by asyncio's servers and transports (gc.get_objects())",
]


def test_this_list_is_every_internal_the_app_relies_on():
    assert [i.name for i in internals.INTERNALS] == RELIED_ON


def test_the_streamlit_pinned_is_the_one_the_gate_lets_through():
    pinned = re.search(r"^streamlit==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned and pinned.group(1) == internals.PINNED == streamlit.__version__


# -- looked at in a real server -----------------------------------------------------------------------------------

# A page that says what this server's Streamlit shows of each internal, what keeps a page from being woken, and
# whether the bursts are installed (app.py installs them at its first run; this page does as app.py does).
PROBE = '''\
import json

import streamlit as st
from streamlit.runtime.app_session import AppSession

from pages.views import internals

internals.deliver_in_bursts()
st.text("off: " + json.dumps(internals.off()))
st.text("found: " + json.dumps(internals.found(internals.live_now())))
st.text("unmet: [" + (", ".join(internals.unmet()) or "none") + "]")
st.text(f"bursts: {AppSession._on_scriptrunner_event is internals.on_scriptrunner_event}")
'''

# Fault injection, the server's only: a Streamlit whose runtime does not show its sessions where internals.py reads
# them (`Runtime.instance()._session_mgr`), as a release that renamed it would. Streamlit's own code reaches its
# session manager through `self`, and the other callers of `Runtime.instance()` read public attributes only, so the
# server works as before: only waking is gone.
NO_SESSION_MANAGER = '''\
from streamlit.runtime.runtime import Runtime


class _WithoutSessions:
    def __init__(self, runtime):
        object.__setattr__(self, "_runtime", runtime)

    def __getattr__(self, name):
        if name == "_session_mgr":
            raise AttributeError(name)
        return getattr(self._runtime, name)


_instance = Runtime.instance.__func__
Runtime.instance = classmethod(lambda cls: _WithoutSessions(_instance(cls)))
'''


def _probe(tmp_path: Path, fault: str | None = None) -> dict:
    """What the probe page says on a real server (with `fault`, a sitecustomize.py, in place): the uses the gate
    turned off, each internal's finding, what keeps the page from being woken, whether the bursts are installed."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    env = {}
    if fault is not None:
        folder = tmp_path / "fault"
        folder.mkdir()
        (folder / "sitecustomize.py").write_text(fault)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))

    async def said(url: str) -> dict[str, str]:
        page = Wire(url)
        await page.open()
        await page.close()
        assert not page.errors, page.errors
        return dict(line.split(": ", 1) for line in _texts(page))

    with serve_app(app=probe, env=env) as url:
        said = asyncio.run(asyncio.wait_for(said(url), timeout=60))
    return {"off": json.loads(said["off"]), "found": json.loads(said["found"]), "unmet": said["unmet"].strip("[]"),
            "bursts": said["bursts"]}


def _texts(page: Wire) -> list[str]:
    """The st.text elements the page was sent, in order."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    texts = []
    for raw in page.text:
        delta = ForwardMsg.FromString(raw).delta
        if delta.WhichOneof("type") == "new_element" and delta.new_element.WhichOneof("type") == "text":
            texts.append(delta.new_element.text.body)
    return texts


def test_on_the_pinned_streamlit_each_internal_relied_on_is_there(tmp_path):
    said = _probe(tmp_path)
    missing = [name for name in RELIED_ON if said["found"].get(name) is not True]
    assert not missing, f"Streamlit {streamlit.__version__} lacks {missing}: mend pages/views/internals.py"
    assert said["off"] == {}, "the gate turned these off (requirements.txt and internals.PINNED name one Streamlit)"
    assert said["unmet"] == "none" and said["bursts"] == "True"


def test_a_missing_internal_is_named_and_only_the_use_relying_on_it_is_turned_off(tmp_path):
    said = _probe(tmp_path, NO_SESSION_MANAGER)
    assert [name for name in RELIED_ON if said["found"].get(name) is False] == ["Runtime._session_mgr"]
    assert said["unmet"] == "Runtime._session_mgr"  # the page is not woken: it reads its class on its own timer
    assert said["bursts"] == "True"  # what does not rely on it is still on


# -- on another Streamlit -----------------------------------------------------------------------------------------

@pytest.fixture
def another_streamlit(monkeypatch):
    """This process as on a Streamlit other than the pinned one, before the app's first run (and put back)."""
    monkeypatch.setattr(internals, "PINNED", "0.0.0")
    monkeypatch.setattr(internals, "_off", None)
    monkeypatch.setattr(internals, "_said", set())
    monkeypatch.setattr(internals, "_bursts_done", threading.Event())
    monkeypatch.setattr(internals, "_no_delay_done", threading.Event())
    monkeypatch.setattr(AppSession, "_on_scriptrunner_event", AppSession._on_scriptrunner_event)
    return monkeypatch


def test_on_another_streamlit_every_use_is_turned_off_and_the_log_says_which_and_what_instead(another_streamlit,
                                                                                               caplog):
    streamlits = AppSession._on_scriptrunner_event

    async def serving() -> tuple[int, int]:
        listening = socket.socket(family=socket.AF_INET)  # as Streamlit makes it: Nagle on
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        listening.setblocking(False)
        server = await asyncio.start_server(lambda reader, writer: None, sock=listening)
        try:
            return internals.no_delay(), listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            server.close()
            await server.wait_closed()

    with caplog.at_level(logging.WARNING, logger=internals.__name__):
        assert internals.deliver_in_bursts() == []
        assert asyncio.run(serving()) == (0, 0)  # no socket set: Nagle left as Streamlit leaves it
    assert AppSession._on_scriptrunner_event is streamlits  # Streamlit's own, untouched
    said = [r.getMessage() for r in caplog.records]
    for use in (internals.WAKING, internals.BURSTS, internals.NO_DELAY):
        assert [m for m in said if f" {use} turned off (Streamlit is {streamlit.__version__}, not 0.0.0)" in m
                and internals.INSTEAD[use] in m], (use, said)
    assert len(said) == 3  # once each
    internals.off()
    assert internals.fragment_id() is None and not internals.live("any") and internals.unmet() == [
        f"Streamlit is {streamlit.__version__}, not 0.0.0"]
    assert len(caplog.records) == 3


def test_a_page_with_the_gate_off_still_works(another_streamlit):
    at = app(scenario="two-tools", lang="ja")  # its first run: the bursts and Nagle left off
    assert set(internals.off()) == {internals.WAKING, internals.BURSTS, internals.NO_DELAY}
    for _ in range(3):
        at.button(key="live-step").click().run()
        assert not at.exception
    at.button(key="live-back").click().run()
    assert not at.exception
    assert any(m.value.startswith("### ステップ 2 / 3") for m in at.markdown), [m.value for m in at.markdown][:5]
