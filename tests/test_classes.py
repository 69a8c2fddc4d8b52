"""A class's channel in the runs store (loop/files/classes.py), on SQLite and on PostgreSQL.

The teacher's run is saved as the Step through page autosaves it; the class row says which run and step the
class sees. Followers know only the code: they never move the class nor reach another of the teacher's runs.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import sqlite3

import pytest

from loop.classroom.summary import answers_csv, tallies
from loop.files import classes as classes_module
from loop.files.classes import (CODE_LENGTH, CODE_LETTERS, EXPIRES, KEPT, PRUNED_DAYS, SEEN_EVERY, TABLES,
                                TABLES_VERSION, Answered, Asked, Classes, ClassState, Counts, Ended, Joined,
                                NotTeacher, Summary, max_followers)
from loop.files.runs import FILE, SCHEMA, RunsStore, owner_key
from loop.views.questions import question_before
from tests.postgres import postgres_server  # noqa: F401  (a fixture)
from tests.test_runs_store import FULL, prefix, store_at  # noqa: F401  (store_at: a fixture)

TEACHER = owner_key("browser:teacher")
STUDENT = owner_key("browser:student")
OTHER_STUDENT = owner_key("browser:student-2")
STRANGER = owner_key("browser:stranger")


class Clock:
    """Seconds since the epoch, moved by the test: no real clock in an assert."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def room(tmp_path, store_at):
    """(the store, the class's channel on it with a test's clock, the clock); the teacher's run r1 has 3 steps."""
    store = store_at(tmp_path)
    store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    clock = Clock()
    return store, Classes(store, clock=clock), clock


def test_a_class_is_started_shown_and_followed_by_its_code(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 2)
    assert len(code) == CODE_LENGTH == 8 and set(code) <= set(CODE_LETTERS)
    first = channel.state(code)
    assert first == ClassState(code, "r1", 3, 2, first.version, None, False, False)
    # the teacher steps on: the run gains a step (autosaved), then the class is shown it
    store.save(TEACHER, "r1", prefix(4), writer="teacher-tab")
    version = channel.show(code, TEACHER, "r1", 4, 3)
    assert version > first.version
    now = channel.state(code.lower())  # a student may type it in lowercase
    assert (now.run_id, now.steps, now.cursor, now.version) == ("r1", 4, 3, version)
    assert channel.show(code, TEACHER, "r1", 4, 3) == version  # nothing changed: nothing for followers to see
    # a follower reads the step it must show, and the teacher sees it follow
    followed = channel.trace(f" {code.lower()} ")
    assert followed.cursor == 3 and [s.stage for s in followed.steps] == [s.stage for s in FULL.steps[:4]]
    channel.seen(code, STUDENT, away=False)
    assert channel.attendance(code, TEACHER) == (1, 0)


def test_only_the_teacher_moves_the_class_and_a_follower_or_stranger_changes_nothing(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    channel.ask(code, TEACHER, 2)
    before = channel.state(code)
    for who in (STUDENT, STRANGER, "not-a-key", None):
        with pytest.raises(NotTeacher):
            channel.show(code, who, "r1", 3, 0)
        with pytest.raises(NotTeacher):
            channel.ask(code, who, 1)
        with pytest.raises(NotTeacher):
            channel.reveal(code, who)
        with pytest.raises(NotTeacher):
            channel.end(code, who)
        with pytest.raises(NotTeacher):
            channel.asked(code, who)
        with pytest.raises(NotTeacher):
            channel.attendance(code, who)
    for made_up in ("ZZZZZZZZ", "", "A' OR 1=1 --"):  # no such class: nobody is its teacher
        with pytest.raises(NotTeacher):
            channel.show(made_up, TEACHER, "r1", 3, 0)
    assert channel.state(code) == before
    # what a follower reads names the run and the step, never the teacher
    assert TEACHER not in repr(dataclasses.astuple(before))


def test_a_code_is_compared_exactly_and_a_made_up_one_finds_nothing(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 0)
    near = ("2" if code[0] != "2" else "3") + code[1:]
    for made_up in (near, code[:7], code + "A", "", None, 42, "0O1IL0O1", code.replace(code[0], "?")):
        assert channel.state(made_up) is None and channel.trace(made_up) is None
        assert channel.join(made_up, STUDENT) is Joined.GONE
        assert channel.answer(made_up, STUDENT, 0, 0) in (Answered.REFUSED, Answered.CLOSED)
    assert channel.state(code.lower()).code == code
    assert channel.state(f" {code[:4].lower()}-{code[4:]} ").code == code  # as a student may type it


def test_the_trace_by_code_is_the_class_run_never_another_run_of_the_teacher(room):
    store, channel, clock = room
    secret_run = prefix(6)
    secret_run.meta = dict(secret_run.meta, task="the teacher's private run")
    store.save(TEACHER, "private", secret_run, writer="teacher-tab")
    code = channel.start(TEACHER, "r1", 3, 1)
    followed = channel.trace(code)
    assert len(followed) == 3 and followed.meta["task"] == FULL.meta["task"] and followed.cursor == 1
    # followers' copies keep their own cursors: one stepping back moves no other
    followed.goto(0)
    assert channel.trace(code).cursor == 1 and followed.cursor == 0
    # the teacher moves the class to another run: only then do followers see it
    store.save(TEACHER, "r2", prefix(5), writer="teacher-tab")
    channel.show(code, TEACHER, "r2", 5, 4)
    assert (len(channel.trace(code)), channel.trace(code).cursor) == (5, 4)
    assert all(channel.trace(code).meta.get("task") != "the teacher's private run" for _ in range(2))
    # a run of that id in another browser's saved runs is never the class's
    store.save(STRANGER, "r3", secret_run, writer="stranger-tab")
    channel.show(code, TEACHER, "r3", 6, 0)
    assert channel.trace(code) is None


def test_sixty_followers_in_one_process_load_the_run_once_per_change(room, monkeypatch):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 0)
    loads = []
    real = RunsStore.load

    def counted(self, owner, run_id, **kw):
        loads.append(run_id)
        return real(self, owner, run_id, **kw)

    monkeypatch.setattr(RunsStore, "load", counted)
    followers = [Classes(store) for _ in range(60)]  # a page makes its own; the cache is the process's
    assert {len(f.trace(code)) for f in followers} == {3} and len(loads) == 1
    channel.show(code, TEACHER, "r1", 3, 2)  # the cursor alone moved: the run is as it was
    assert {f.trace(code).cursor for f in followers} == {2} and len(loads) == 1
    store.save(TEACHER, "r1", prefix(4), writer="teacher-tab")
    channel.show(code, TEACHER, "r1", 4, 3)
    assert {len(f.trace(code)) for f in followers} == {4} and len(loads) == 2


def test_a_reload_of_the_teacher_finds_the_class_and_a_new_class_ends_the_old(room):
    store, channel, clock = room
    assert channel.of_teacher(TEACHER) is None
    code = channel.start(TEACHER, "r1", 3, 2)
    assert Classes(store).of_teacher(TEACHER) == code  # the reloaded page's own channel
    assert channel.of_teacher(STUDENT) is None and channel.of_teacher("not-a-key") is None
    clock.now += 1
    newer = channel.start(TEACHER, "r1", 3, 0)
    assert newer != code and channel.of_teacher(TEACHER) == newer
    assert channel.state(code).ended and channel.trace(code) is None
    assert not channel.state(newer).ended and channel.trace(newer) is not None


def test_answers_are_taken_only_while_the_question_is_open_one_per_follower_and_counted(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    for follower in (STUDENT, OTHER_STUDENT, STRANGER):
        assert channel.join(code, follower) is Joined.FOLLOWS
    assert channel.answer(code, STUDENT, 2, 0) is Answered.CLOSED  # no question open
    version = channel.ask(code, TEACHER, 2, kind="continues")
    assert channel.state(code).question == 2 and channel.state(code).version == version
    assert channel.answer(code, STUDENT, 1, 0) is Answered.CLOSED  # not the open question
    assert channel.answer(code, STUDENT, 2, 0) is Answered.COUNTED
    assert channel.answer(code.lower(), STUDENT, 2, 1) is Answered.COUNTED  # changed its mind: the last counts, once
    assert channel.answer(code, OTHER_STUDENT, 2, 1) is Answered.COUNTED
    for hostile in (-1, 99, "1", None, True, 1.5):
        assert channel.answer(code, STRANGER, 2, hostile) is Answered.REFUSED
    assert channel.answer(code, "not-a-key", 2, 0) is Answered.REFUSED
    assert channel.answer(code, owner_key("browser:never-followed"), 2, 0) is Answered.REFUSED
    assert channel.counts(code, 2) == Counts({1: 2})
    revealed = channel.reveal(code, TEACHER)
    assert channel.state(code).revealed and revealed > version
    assert channel.answer(code, STRANGER, 2, 0) is Answered.CLOSED  # the answer is out: no more answers
    assert channel.counts(code, 2) == Counts({1: 2})
    channel.show(code, TEACHER, "r1", 3, 2)  # the step asked about is shown: the question closes
    assert channel.state(code).question is None and not channel.state(code).revealed
    assert channel.answer(code, STRANGER, 2, 0) is Answered.CLOSED


def test_an_answer_counts_only_from_a_browser_that_followed_before_the_question_opened(room):
    """20 made-up browsers that turn up once the question is open cannot stuff its count: their answers are kept,
    marked late, and the teacher sees them apart."""
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    channel.join(code, STUDENT)
    channel.seen(code, OTHER_STUDENT, away=False)  # a heartbeat before the question: following too
    channel.ask(code, TEACHER, 2)
    latecomers = [owner_key(f"browser:late-{n}") for n in range(20)]
    for late in latecomers:
        assert channel.join(code, late) is Joined.FOLLOWS
        assert channel.answer(code, late, 2, 2) is Answered.LATE
    assert channel.answer(code, STUDENT, 2, 0) is Answered.COUNTED
    assert channel.answer(code, OTHER_STUDENT, 2, 1) is Answered.COUNTED
    counted = channel.counts(code, 2)
    assert counted == Counts({0: 1, 1: 1}, {2: 20}) and counted.total == 2 and counted.late_total == 20
    channel.ask(code, TEACHER, 1)  # the next question: the latecomers were there before it, and count
    assert channel.answer(code, latecomers[0], 1, 0) is Answered.COUNTED


def test_a_class_holds_a_bounded_number_of_followers_and_a_place_frees_when_one_leaves(room, monkeypatch):
    store, channel, clock = room
    monkeypatch.delenv("LOOPSCOPE_CLASS_MAX_FOLLOWERS", raising=False)
    assert max_followers() == 300
    for asked, limit in (("50", 200), ("1000", 1000), ("many", 300)):  # never under 200: a lecture must get in
        monkeypatch.setenv("LOOPSCOPE_CLASS_MAX_FOLLOWERS", asked)
        assert max_followers() == limit
    monkeypatch.setattr(classes_module, "max_followers", lambda: 2)
    code = channel.start(TEACHER, "r1", 3, 1)
    assert channel.join(code, STUDENT) is Joined.FOLLOWS
    assert channel.join(code, OTHER_STUDENT) is Joined.FOLLOWS
    assert channel.join(code, STRANGER) is Joined.FULL
    assert channel.join(code, STUDENT) is Joined.FOLLOWS  # one already in stays in
    clock.now += 10
    channel.seen(code, STUDENT, away=False)
    clock.now += 10  # OTHER_STUDENT went quiet 20 s ago: its place is free
    assert channel.join(code, STRANGER) is Joined.FOLLOWS


def test_a_class_nobody_ended_ends_twelve_hours_after_its_teachers_last_action(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    channel.join(code, STUDENT)
    clock.now += EXPIRES - 60
    channel.show(code, TEACHER, "r1", 3, 2)  # the teacher's move: twelve more hours from now
    clock.now += EXPIRES - 60
    assert not channel.state(code).ended and channel.of_teacher(TEACHER) == code
    channel.ask(code, TEACHER, 2)
    clock.now += EXPIRES  # nobody acted since
    state = channel.state(code)
    assert state.ended and state.cursor == 2  # its students read it as ended, at its last step
    assert channel.trace(code) is None and channel.trace(code, ended_too=True).cursor == 2
    assert channel.of_teacher(TEACHER) is None
    assert channel.join(code, OTHER_STUDENT) is Joined.GONE
    assert channel.answer(code, STUDENT, 2, 0) is Answered.CLOSED
    for move in (lambda: channel.show(code, TEACHER, "r1", 3, 0), lambda: channel.ask(code, TEACHER, 1),
                 lambda: channel.reveal(code, TEACHER)):
        with pytest.raises(Ended):
            move()
    assert channel.end(code, TEACHER).steps_shown == [1, 2]  # the teacher coming back still gets the summary
    clock.now += KEPT + 1
    assert channel.state(code) is None


def test_the_end_gives_the_summary_and_the_code_stops_working(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 0)
    channel.seen(code, STUDENT, away=False)
    channel.seen(code, OTHER_STUDENT, away=True)
    channel.show(code, TEACHER, "r1", 3, 2)
    channel.show(code, TEACHER, "r1", 3, 1)
    channel.show(code, TEACHER, "r1", 3, 2)  # shown again: once in the summary
    channel.ask(code, TEACHER, 2, kind="continues")
    channel.answer(code, STUDENT, 2, 1)
    channel.answer(code, OTHER_STUDENT, 2, 0)
    channel.ask(code, TEACHER, 1, kind="turn_count_after")  # asked, never answered
    before = channel.state(code).version
    summary = channel.end(code, TEACHER)
    assert summary == Summary(code, [0, 2, 1], [Asked(1, "r1", "turn_count_after", Counts({})),
                                                Asked(2, "r1", "continues", Counts({0: 1, 1: 1}))], 2)
    state = channel.state(code)
    assert state.ended and state.version > before and state.question is None
    assert channel.trace(code) is None
    assert channel.answer(code, STUDENT, 1, 0) is Answered.CLOSED
    with pytest.raises(Ended):  # nothing moves an ended class
        channel.show(code, TEACHER, "r1", 3, 0)
    assert channel.state(code).version == state.version
    assert channel.of_teacher(TEACHER) is None
    assert channel.end(code, TEACHER) == summary  # asked again: the same summary
    clock.now += KEPT + 1
    assert channel.state(code) is None


@pytest.mark.parametrize("lang, words", [("en", ("step", "question", "yes")), ("ja", ("ステップ", "質問", "はい"))])
def test_the_answers_csv_has_the_questions_words_the_right_answer_and_the_screens_numbers_and_no_names(
        room, lang, words):
    store, channel, clock = room
    store.save(TEACHER, "r2", prefix(len(FULL)), writer="teacher-tab")  # the whole of two-tools
    code = channel.start(TEACHER, "r2", len(FULL), 3)
    for student in (STUDENT, OTHER_STUDENT, STRANGER):
        channel.join(code, student)
    channel.ask(code, TEACHER, 4, kind="tool_result_id")
    for student, choice in ((STUDENT, 0), (OTHER_STUDENT, 0), (STRANGER, 2)):
        channel.answer(code, student, 4, choice)
    channel.ask(code, TEACHER, 3, kind="continues")
    load = lambda run_id: store.load(TEACHER, run_id)[0]  # noqa: E731  (the teacher's page loads its own runs)
    found = tallies(channel.asked(code, TEACHER), load, lang)
    exported = answers_csv(found, lang)
    rows = list(csv.reader(io.StringIO(exported)))
    assert rows[0][0] == words[0] and rows[0][1] == words[1] and len(rows[0]) == 7
    expected = []
    for step, counted in ((3, {}), (4, {0: 2, 2: 1})):
        q = question_before(FULL, step, lang)
        assert q is not None and q.lang == lang
        expected += [[str(step + 1), q.question, str(n + 1), choice, words[2] if n == q.answer else "",
                      str(counted.get(n, 0)), "0"] for n, choice in enumerate(q.choices)]
    assert rows[1:] == expected  # the screen's numbering, the words the students read, which was right
    assert not any(key in exported for key in (STUDENT, OTHER_STUDENT, STRANGER, TEACHER, "continues",
                                               "tool_result_id"))
    channel.end(code, TEACHER)
    assert answers_csv(tallies(channel.asked(code, TEACHER), load, lang), lang) == exported  # kept after the end
    gone = answers_csv(tallies(channel.asked(code, TEACHER), lambda run_id: None, lang), lang)
    assert len(list(csv.reader(io.StringIO(gone)))) > 1  # the run deleted since: the counts stay, said so


def test_attendance_counts_following_and_away_within_the_window(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    channel.seen(code, STUDENT, away=False)
    channel.seen(code, OTHER_STUDENT, away=False)
    channel.seen(code, STRANGER, away=True)
    assert channel.attendance(code, TEACHER) == (2, 1)
    clock.now += 10
    channel.seen(code, OTHER_STUDENT, away=True)  # stepped away: said at once
    assert channel.attendance(code, TEACHER) == (1, 2)
    assert channel.attendance(code, TEACHER, within=5) == (0, 1)  # only the one heard from lately
    clock.now += 10
    assert channel.attendance(code, TEACHER) == (0, 1)  # the others went quiet 20 s ago
    channel.seen(code, "not-a-key", away=False)
    channel.seen("ZZZZZZ", STUDENT, away=False)
    assert channel.attendance(code, TEACHER) == (0, 1)


def test_a_heartbeat_is_written_once_every_few_seconds_unless_the_follower_stepped_away(room, monkeypatch):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    writes = []
    real = RunsStore.transaction

    def counted(self, write=False, synced=True):
        writes.append(write)
        return real(self, write, synced=synced)

    monkeypatch.setattr(RunsStore, "transaction", counted)
    channel.seen(code, STUDENT, away=False)
    clock.now += SEEN_EVERY / 2
    channel.seen(code, STUDENT, away=False)  # within the few seconds: nothing written
    assert writes == [True]
    channel.seen(code, STUDENT, away=True)  # stepped away: written at once
    clock.now += SEEN_EVERY
    channel.seen(code, STUDENT, away=True)
    assert writes == [True, True, True]
    writes.clear()
    channel.state(code)
    assert writes == [False]  # a follower's poll writes nothing


def rows(store, code: str) -> dict[str, int]:
    """How many rows the store keeps for the class `code`, by table."""
    with store.transaction() as db:
        return {table: int(db.execute(f"SELECT count(*) FROM {table} WHERE code=?", (code,)).fetchone()[0])
                for table in ("classes", "class_followers", "class_answers", "class_questions", "class_shown")}


def test_heartbeats_keep_one_row_a_follower_however_long_the_class(room):
    store, channel, clock = room
    code = channel.start(TEACHER, "r1", 3, 1)
    for beat in range(200):  # a lesson's worth of heartbeats from two followers, some stepping away and back
        clock.now += SEEN_EVERY + 1
        channel.seen(code, STUDENT, away=False)
        channel.seen(code, OTHER_STUDENT, away=beat % 3 == 0)
    assert rows(store, code)["class_followers"] == 2
    assert channel.attendance(code, TEACHER) == (2, 0)


def test_a_class_ended_long_ago_is_removed_with_its_rows_when_a_class_starts_and_a_recent_one_stays(room):
    store, channel, clock = room
    store.save(STRANGER, "r9", prefix(3), writer="other-tab")

    def taught(teacher: str, run_id: str) -> str:
        code = channel.start(teacher, run_id, 3, 0)
        channel.show(code, teacher, run_id, 3, 2)
        channel.seen(code, STUDENT, away=False)
        channel.ask(code, teacher, 2, kind="continues")
        channel.answer(code, STUDENT, 2, 1)
        return code

    old = taught(TEACHER, "r1")
    summary = channel.end(old, TEACHER)
    left_open = taught(STRANGER, "r9")  # its teacher never came back to end it: it ended 12 hours later
    clock.now += (PRUNED_DAYS - 1) * 86400
    recent = taught(TEACHER, "r1")
    channel.end(recent, TEACHER)
    assert channel.end(old, TEACHER) == summary  # ended 29 days ago: its summary is still there
    assert rows(store, old) == {"classes": 1, "class_followers": 1, "class_answers": 1, "class_questions": 1,
                                "class_shown": 2}
    clock.now += 2 * 86400  # 31 days after the first two, 2 after the recent one
    newest = channel.start(TEACHER, "r1", 3, 0)
    for gone in (old, left_open):
        assert rows(store, gone) == dict.fromkeys(rows(store, gone), 0)
        with pytest.raises(NotTeacher):
            channel.end(gone, TEACHER)
    assert rows(store, recent)["class_answers"] == 1
    assert channel.end(recent, TEACHER).questions == [Asked(2, "r1", "continues", Counts({1: 1}))]
    assert channel.state(newest).cursor == 0


def test_two_store_objects_on_one_database_see_each_other_writes(tmp_path, store_at):
    teacher_side = Classes(store_at(tmp_path))
    teacher_side.store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    student_side = Classes(store_at(tmp_path))
    code = teacher_side.start(TEACHER, "r1", 3, 0)
    assert student_side.state(code).cursor == 0
    teacher_side.show(code, TEACHER, "r1", 3, 2)
    assert student_side.state(code).cursor == 2 and student_side.trace(code).cursor == 2
    assert student_side.join(code, STUDENT) is Joined.FOLLOWS
    teacher_side.ask(code, TEACHER, 2)
    assert student_side.answer(code, STUDENT, 2, 1) is Answered.COUNTED
    assert teacher_side.counts(code, 2) == Counts({1: 1})
    student_side.seen(code, STUDENT, away=False)
    assert teacher_side.attendance(code, TEACHER) == (1, 0)


def test_a_forked_child_follows_the_class_its_parent_moves(tmp_path, store_at):
    """A replica forked from the server (or a worker process): its own connection, the parent's writes seen."""
    parent = Classes(store_at(tmp_path))
    parent.store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    code = parent.start(TEACHER, "r1", 3, 0)
    assert parent.state(code).cursor == 0  # the parent's connection is open before the fork
    parent.show(code, TEACHER, "r1", 3, 1)
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, then leave without running the parent's cleanup
        status = 1
        try:
            os.close(reading)
            child = Classes(store_at(tmp_path))
            seen = child.state(code)
            ok = seen.cursor == 1 and child.trace(code).cursor == 1
            os.write(writing, b"ok" if ok else repr(seen).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    said = os.read(reading, 1000)
    os.close(reading)
    assert os.waitpid(pid, 0)[1] == 0 and said == b"ok"
    assert parent.state(code).cursor == 1  # the parent's connection still serves it


def test_the_class_tables_are_made_by_the_classes_and_a_store_without_them_keeps_its_runs(tmp_path):
    store = RunsStore(tmp_path)
    store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    store.mark_passed(TEACHER, "write-back")
    with store.transaction() as db:  # the runs store alone makes none of them
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'class%'").fetchone()[0] == 0
    store.close()
    again = RunsStore(tmp_path)
    channel = Classes(again)
    code = channel.start(TEACHER, "r1", 3, 1)
    assert channel.trace(code).cursor == 1 and again.passed(TEACHER) == {"write-back"}
    again.close()
    with sqlite3.connect(tmp_path / FILE) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA == 4
        assert db.execute("SELECT value FROM server WHERE name='schema:classes'").fetchone()[0] == \
            str(TABLES_VERSION).encode()


def test_class_tables_an_older_loopscope_made_gain_their_new_columns_and_keep_their_class(tmp_path, store_at):
    store = store_at(tmp_path)
    store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    clock = Clock()
    with store.transaction(write=True) as db:  # as the store's schema 4 made them, with a class open in them
        for statement in TABLES:
            db.execute(store.database.ddl(statement))
        db.execute("INSERT INTO classes (code, teacher, run_id, steps, cursor, version, question, revealed, started, "
                   "ended) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   ("ABCDEFGH", TEACHER, "r1", 3, 1, 4, None, 0, clock.now - 3600, None))
        db.execute("INSERT INTO class_followers (code, follower, seen, away) VALUES (?, ?, ?, ?)",
                   ("ABCDEFGH", STUDENT, clock.now - 60, 0))
    channel = Classes(store, clock=clock)
    assert channel.state("ABCDEFGH") == ClassState("ABCDEFGH", "r1", 3, 1, 4, None, False, False)
    assert channel.of_teacher(TEACHER) == "ABCDEFGH"
    channel.ask("ABCDEFGH", TEACHER, 2)
    assert channel.answer("ABCDEFGH", STUDENT, 2, 0) is Answered.COUNTED  # a follower from before: counted
    clock.now += EXPIRES
    assert channel.state("ABCDEFGH").ended  # twelve hours after its last action, as any class


def test_moving_the_class_is_not_waited_for_on_the_disk_and_an_answer_is(tmp_path):
    """As the runs store's `move`: a click that moves the class commits with synchronous=NORMAL (1), so the
    teacher's click does not wait for the disk; an answer, kept for the teacher, waits (FULL, 2)."""
    store = RunsStore(tmp_path)
    store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    channel = Classes(store)
    code = channel.start(TEACHER, "r1", 3, 0)
    channel.join(code, STUDENT)
    db = store._connection()
    committed: list[int] = []

    def seen(statement: str) -> None:
        if statement.strip().upper().startswith("COMMIT"):
            db.set_trace_callback(None)
            committed.append(db.execute("PRAGMA synchronous").fetchone()[0])
            db.set_trace_callback(seen)

    db.set_trace_callback(seen)
    try:
        channel.show(code, TEACHER, "r1", 3, 1)
        channel.ask(code, TEACHER, 2)
        channel.answer(code, STUDENT, 2, 0)
    finally:
        db.set_trace_callback(None)
    assert committed == [1, 2, 2]


def test_a_class_answering_at_once_from_several_processes_counts_every_answer(tmp_path, store_at):
    """Four processes (replicas), five students each, answer the same question at the same moment."""
    teacher_side = Classes(store_at(tmp_path))
    teacher_side.store.save(TEACHER, "r1", prefix(3), writer="teacher-tab")
    code = teacher_side.start(TEACHER, "r1", 3, 1)
    students = [owner_key(f"browser:{replica}-{k}") for replica in range(4) for k in range(5)]
    teacher_side.seen_many(code, [(student, False) for student in students])  # all following before the question
    teacher_side.ask(code, TEACHER, 2)
    teacher_side.store.close()  # the children open their own
    go_read, go_write = os.pipe()
    children = []
    for replica in range(4):
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(go_write)
                os.read(go_read, 1)  # all start together
                channel = Classes(store_at(tmp_path))
                ok = all(channel.answer(code, owner_key(f"browser:{replica}-{k}"), 2, k % 3) is Answered.COUNTED
                         for k in range(5))
                status = 0 if ok else 2
            finally:
                os._exit(status)
        children.append(pid)
    os.close(go_read)
    os.write(go_write, b"gogo")
    os.close(go_write)
    assert [os.waitpid(pid, 0)[1] for pid in children] == [0, 0, 0, 0]
    assert teacher_side.counts(code, 2) == Counts({0: 8, 1: 8, 2: 4})
