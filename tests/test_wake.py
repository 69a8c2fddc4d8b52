"""The server wakes a class's follower pages (pages/views/wake.py) and writes their heartbeats together
(Classes.seen_many): one read of a class a round for all its pages, a page woken once for each move of the class,
again when it was busy, dropped when its browser went away or its class ended."""

from __future__ import annotations

from types import SimpleNamespace

from loop.files.classes import SEEN_EVERY
from pages.views import internals, wake
from tests.test_classes import OTHER_STUDENT, STRANGER, STUDENT, TEACHER, room  # noqa: F401  (room: a fixture)
from tests.postgres import postgres_server  # noqa: F401  (a fixture)
from tests.test_runs_store import store_at  # noqa: F401  (a fixture)


class Class:
    """A class's states as the store would answer them, and the watcher's calls, counted."""

    def __init__(self):
        self.version, self.ended, self.reads, self.woken, self.beats, self.gone = 1, False, [], [], [], set()
        self.now = 0.0
        self.fragments = {}  # session -> the fragment its last wake reran (None: the whole page)

    def read(self, code):
        self.reads.append(code)
        return SimpleNamespace(version=self.version, ended=self.ended)

    def watcher(self) -> wake.Watcher:
        return wake.Watcher(self.read, lambda code, followers: self.beats.append((code, sorted(followers))),
                            self.wake, lambda sid: sid not in self.gone, lambda: self.now, threaded=False)

    def wake(self, sid, fragment):
        self.woken.append(sid)
        self.fragments[sid] = fragment


def test_a_round_reads_the_class_once_and_wakes_only_the_pages_behind_it_once_a_move():
    c = Class()
    w = c.watcher()
    for n in range(30):
        w.register(f"s{n}", "ABCDEF", 1, STUDENT, False)
    w.once()
    assert c.reads == ["ABCDEF"] and c.woken == []  # the class stands still: no page runs
    c.version = 2
    w.register("s0", "ABCDEF", 2, STUDENT, False)  # a page drawn after the move (a late student)
    w.once()
    assert sorted(c.woken) == sorted(f"s{n}" for n in range(1, 30)) and len(c.reads) == 2
    c.woken.clear()
    w.once()
    assert c.woken == []  # not woken again for the same move
    w.woke("s1", "busy")  # its script was running: it is woken once that run is over
    w.once()
    assert c.woken == ["s1"]


def test_a_page_whose_browser_went_away_or_whose_class_ended_is_dropped():
    c = Class()
    w = c.watcher()
    w.register("here", "ABCDEF", 1, STUDENT, False)
    w.register("gone", "ABCDEF", 1, OTHER_STUDENT, False)
    c.version = 2
    w.once()
    w.woke("gone", "gone")
    assert set(w.pages) == {"here"}
    w.register("here", "ABCDEF", 2, STUDENT, False)
    c.ended = True
    w.once()
    assert c.woken[-1] == "here"  # the page says the class ended
    w.woke("here", "woken")
    assert w.pages == {}


def test_heartbeats_go_every_few_seconds_one_call_a_class_for_its_open_pages():
    c = Class()
    w = c.watcher()
    c.now = 100.0
    w.register("a", "ABCDEF", 1, STUDENT, False)
    w.register("b", "ABCDEF", 1, OTHER_STUDENT, True)
    w.register("c", "GHJKMN", 1, STRANGER, False)
    w.register("d", "GHJKMN", 1, None, False)  # no browser id: no heartbeat
    c.gone.add("c")
    w.once()
    assert c.beats == [("ABCDEF", sorted([(STUDENT, False), (OTHER_STUDENT, True)]))]
    assert "c" not in w.pages  # its browser went away
    w.once()
    assert len(c.beats) == 1  # not again before BEAT seconds
    c.now += wake.BEAT
    w.once()
    assert len(c.beats) == 2


def test_many_heartbeats_are_written_in_one_transaction_and_counted_as_seen_writes_them(room, monkeypatch):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    transactions = []
    opened = type(store).transaction
    monkeypatch.setattr(type(store), "transaction",
                        lambda self, *a, **k: transactions.append(k.get("write", a[0] if a else False))
                        or opened(self, *a, **k))
    channel.seen_many(code, [(STUDENT, False), (OTHER_STUDENT, False), (STRANGER, True), ("not-a-key", False)])
    assert transactions == [True]
    assert channel.attendance(code, TEACHER) == (2, 1)
    transactions.clear()
    clock.now += 1
    channel.seen_many(code, [(STUDENT, False), (OTHER_STUDENT, False)])  # written lately, nothing changed
    assert transactions == []
    channel.seen_many(code, [(STUDENT, True)])  # stepped away: written at once
    assert channel.attendance(code, TEACHER) == (1, 2)
    clock.now += SEEN_EVERY
    channel.seen_many(code, [(STUDENT, True), (OTHER_STUDENT, False)])
    clock.now += 10  # STRANGER's heartbeat is 16 s old now, the others 10 s
    assert channel.attendance(code, TEACHER) == (1, 1)
    channel.end(code, TEACHER)
    clock.now += SEEN_EVERY
    channel.seen_many(code, [(STUDENT, False)])  # the class ended: nothing is written
    with store.transaction() as db:
        assert db.execute("SELECT max(seen) FROM class_followers WHERE code=?", (code,)).fetchone()[0] \
            == clock.now - SEEN_EVERY - 10


def test_a_following_page_s_step_alone_is_woken_for_a_cursor_move_and_the_whole_page_for_anything_else():
    c = Class()
    run = ("run-1", 5, None, False)  # the class's run, its steps and its question: all but its cursor
    c.read = lambda code: SimpleNamespace(version=c.version, ended=c.ended, run_id=run[0], steps=run[1],
                                          question=run[2], revealed=run[3])
    w = c.watcher()
    drawn = wake.shape(c.read("ABCDEF"))
    w.register("following", "ABCDEF", 1, STUDENT, False, drawn)
    w.register("away", "ABCDEF", 1, STUDENT, True, drawn)
    w.register("new", "ABCDEF", 1, STUDENT, False, drawn)  # its step not drawn yet: no fragment known
    w.inside("following", "step-fragment")
    w.inside("away", "step-fragment")
    c.version = 2  # the teacher's Back: the cursor alone moved
    w.once()
    assert c.fragments == {"following": "step-fragment", "away": None, "new": None}
    w.drew("following", 2)  # the step, rerun alone, drew the move
    c.fragments.clear()
    run = ("run-1", 6, None, False)  # the teacher's Step executed a stage: one more step, drawn by the step too
    c.version = 3
    w.once()
    assert c.fragments["following"] == "step-fragment"
    w.drew("following", 3)
    run = ("run-1", 6, 5, False)  # a question: the page asks it around the step
    c.version = 4
    c.fragments.clear()
    w.once()
    assert c.fragments["following"] is None
    w.register("following", "ABCDEF", 4, STUDENT, False, wake.shape(c.read("ABCDEF")))  # (its fragment stays)
    c.version = 5
    c.fragments.clear()
    w.once()
    assert c.fragments["following"] == "step-fragment"
    c.ended = True
    c.fragments.clear()
    w.once()
    assert set(c.fragments.values()) == {None}  # the end of the class: every whole page


def test_a_page_whose_session_lacks_what_waking_it_needs_is_not_registered_but_left_to_its_timer(monkeypatch):
    """A Streamlit whose sessions keep their last request elsewhere (here: no `_client_state`) cannot be asked to
    rerun a page: the page is told it cannot be woken (following.py then reads its class every few seconds), and
    what is missing is named."""
    from streamlit.runtime import Runtime, scriptrunner

    session = SimpleNamespace(_event_loop=None, _scriptrunner=None, request_rerun=lambda state: None,
                              has_fragment=lambda fragment: False)
    sessions = SimpleNamespace(get_active_session_info=lambda sid: SimpleNamespace(session=session))
    monkeypatch.setattr(Runtime, "_instance", SimpleNamespace(_session_mgr=sessions))
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx",
                        lambda *a, **k: SimpleNamespace(session_id="s1", fragment_ids_this_run=set()))
    assert internals.session_id() is None
    assert internals.unmet() == ["AppSession._client_state"]
    session._client_state = SimpleNamespace(fragment_id="")
    assert internals.unmet() == [] and internals.session_id() == "s1"
    sessions.get_active_session_info = lambda sid: None  # its browser went away: nothing to wake, nothing missing
    assert internals.session_id() is None and internals.unmet() == []
    del sessions.get_active_session_info  # a session manager of another kind
    assert internals.session_id() is None
    assert internals.unmet() == ["SessionManager.get_active_session_info(session_id).session"]


def test_a_wake_that_fails_is_tried_again_at_the_next_round_not_given_up(monkeypatch):
    """Asking a session to rerun can raise (a script thread that cannot start): the page is then told "busy", so the
    watcher wakes it again at its next round, rather than counting it woken and leaving it on the old step."""
    from streamlit.runtime import Runtime

    def refuse(state):
        raise RuntimeError("can't start new thread")

    session = SimpleNamespace(_event_loop=SimpleNamespace(call_soon_threadsafe=lambda callback: callback()),
                              _scriptrunner=None, _client_state=SimpleNamespace(fragment_id=""),
                              request_rerun=refuse, has_fragment=lambda fragment: False)
    sessions = SimpleNamespace(get_active_session_info=lambda sid: SimpleNamespace(session=session))
    monkeypatch.setattr(Runtime, "_instance", SimpleNamespace(_session_mgr=sessions))
    answers = []
    internals.rerun("s1", lambda sid, answer: answers.append((sid, answer)))
    assert answers == [("s1", "busy")]
    session.request_rerun = lambda state: None  # the next round's wake goes through
    internals.rerun("s1", lambda sid, answer: answers.append((sid, answer)))
    assert answers[-1] == ("s1", "woken")
