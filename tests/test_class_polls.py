"""A follower's poll (loop/files/classes.py `Classes.state` with `fresh`): the pages on one server that poll a class
together read it once.

Thirty students on a server poll their class sixty times a second; each read is a transaction on the shared store
(a round trip to PostgreSQL with replicas). One read answers the polls of the next `FRESH` seconds, through the
process's one cache, and a page drawn after the class moved reads it afresh, so no page is shown an older step than
one it already took.
"""

from __future__ import annotations

import pytest

from loop.engine.trace import Trace
from loop.files.classes import Cache, Classes
from loop.files.runs import default_store, new_run_id, owner_key
from pages.views.classroom import FRESH


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A class in a fresh store, a cache whose clock is stopped, and the store's reads of the class counted."""
    monkeypatch.setenv("LOOPSCOPE_RUNS", str(tmp_path))
    now = [1000.0]
    cache = Cache(clock=lambda: now[0])
    reads = []
    row = Classes._row
    monkeypatch.setattr(Classes, "_row", lambda self, code: reads.append(code) or row(self, code))
    teacher, run_id = owner_key("teacher"), new_run_id()
    default_store().save(teacher, run_id, Trace(), writer="w")
    code = Classes(default_store(), cache=cache).start(teacher, run_id, 0, -1)
    return (lambda: Classes(default_store(), cache=cache)), code, teacher, run_id, reads, now


def test_the_polls_of_a_servers_pages_within_a_tenth_of_a_second_read_the_class_once(counted):
    classes, code, teacher, run_id, reads, now = counted
    states = [classes().state(code, fresh=FRESH) for _ in range(30)]  # thirty pages' polls, at once
    assert len(reads) == 1 and len({s.version for s in states}) == 1
    now[0] += FRESH  # the next round of polls reads it again
    classes().state(code, fresh=FRESH)
    assert len(reads) == 2


def test_a_page_drawn_after_the_class_moved_reads_it_afresh_and_the_polls_after_see_that_step(counted):
    classes, code, teacher, run_id, reads, now = counted
    before = classes().state(code, fresh=FRESH)
    classes().show(code, teacher, run_id, 0, 0)  # the teacher moves the class
    assert classes().state(code, fresh=FRESH).version == before.version  # within the tenth: not read yet
    drawn = classes().state(code)  # a page drawn now (the poll of another server saw it, or a new student)
    assert drawn.version == before.version + 1
    assert classes().state(code, fresh=FRESH).version == drawn.version  # never an older step than a page took
