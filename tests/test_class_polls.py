"""A follower's poll (pages/views/classroom.py): the pages on one server that poll a class together read it once.

Thirty students on a server poll their class sixty times a second; each read is a transaction on the shared store
(a round trip to PostgreSQL with replicas). One read answers the polls of the next `FRESH` seconds, and a page drawn
after the class moved reads it afresh, so no page is shown an older step than one it already took.
"""

from __future__ import annotations

import pytest

from loop.files.classes import Classes
from loop.files.runs import RunsStore, default_store, new_run_id, owner_key
from loop.engine.trace import Trace
from pages.views import classroom


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A class in a fresh store, this module's clock stopped, and the store's reads of the class counted."""
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))
    monkeypatch.setattr(classroom, "_states", {})
    now = [1000.0]
    monkeypatch.setattr(classroom, "_clock", lambda: now[0])
    reads = []
    state = Classes.state
    monkeypatch.setattr(Classes, "state", lambda self, code: reads.append(code) or state(self, code))
    teacher, run_id = owner_key("teacher"), new_run_id()
    default_store().save(teacher, run_id, Trace(), writer="w")
    code = Classes(default_store()).start(teacher, run_id, 0, -1)
    return code, teacher, run_id, reads, now


def test_the_polls_of_a_servers_pages_within_a_tenth_of_a_second_read_the_class_once(counted):
    code, teacher, run_id, reads, now = counted
    states = [classroom.polled_state(code) for _ in range(30)]  # thirty pages' polls, at once
    assert len(reads) == 1 and len({s.version for s in states}) == 1
    now[0] += classroom.FRESH  # the next round of polls reads it again
    classroom.polled_state(code)
    assert len(reads) == 2


def test_a_page_drawn_after_the_class_moved_reads_it_afresh_and_the_polls_after_see_that_step(counted):
    code, teacher, run_id, reads, now = counted
    before = classroom.polled_state(code)
    Classes(default_store()).show(code, teacher, run_id, 0, 0)  # the teacher moves the class
    assert classroom.polled_state(code).version == before.version  # within the tenth: the polls have not read it yet
    drawn = classroom.read_state(code)  # a page drawn now (the poll of another server saw it, or a new student)
    assert drawn.version == before.version + 1
    assert classroom.polled_state(code).version == drawn.version  # never an older step than a page already took
