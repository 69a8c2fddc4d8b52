"""A student following a class (loop/classroom/follower.py), transition by transition, without Streamlit: what each
event does to the phase, to where the copy is, and what the page is told to draw and say."""

from __future__ import annotations

from loop.classroom.follower import (ANSWER_FIRST, ENDED, FOLLOWS, LATE, MAY_STEP_AWAY, NOT_BEFORE_REVEAL,
                                     NOT_FOLLOWING, PULLED_BACK, TOO_LATE, Follower, Phase, Redraw)
from loop.files.classes import Answered, ClassState


class Class:
    """The class as the store would answer, moved by the test as a teacher would."""

    def __init__(self):
        self.run_id, self.steps, self.cursor, self.version = "r1", 5, 4, 1
        self.question, self.revealed, self.ended = None, False, False

    def state(self) -> ClassState:
        return ClassState("ABCDEFGH", self.run_id, self.steps, self.cursor, self.version, self.question,
                          self.revealed, self.ended)

    def move(self, **changes) -> ClassState:
        for name, value in changes.items():
            setattr(self, name, value)
        self.version += 1
        return self.state()


def following() -> tuple[Class, Follower]:
    c, f = Class(), Follower("ABCDEFGH")
    first = f.heard(c.state())
    assert (first.after, first.take, f.put, f.at) == (Phase.FOLLOWING, True, 4, 4)
    return c, f


def asked(c: Class, f: Follower) -> None:
    """The teacher's question before step 6, asked at step 5 (cursor 4)."""
    done = f.heard(c.move(steps=6, question=5))
    assert done.after is Phase.QUESTION


def test_a_following_class_student_takes_each_move_of_the_class_by_the_step_alone():
    c, f = following()
    done = f.heard(c.move(cursor=3))  # the teacher's Back
    assert (done.before, done.after, done.redraw, done.take, f.put) == (Phase.FOLLOWING, Phase.FOLLOWING,
                                                                       Redraw.STEP, True, 3)
    done = f.heard(c.move(steps=6, cursor=5))  # a Step that executed a stage: the same run, longer
    assert (done.redraw, done.take, f.put, f.steps) == (Redraw.STEP, True, 5, 6)
    assert f.heard(c.state()).redraw is Redraw.NOTHING  # nothing new: nothing drawn
    done = f.heard(c.move(run_id="r2", steps=2, cursor=0))  # the teacher's New run: the whole page
    assert (done.redraw, done.take, f.run_id) == (Redraw.PAGE, True, "r2")
    screen = f.screen()
    assert (screen.caption, screen.away, screen.question, screen.locked, screen.watch) == (FOLLOWS, None, None, None,
                                                                                          True)


def test_a_class_student_who_moves_steps_away_and_the_class_then_moves_without_them():
    c, f = following()
    assert f.moved(4).after is Phase.FOLLOWING  # onto the class's own step: still following
    done = f.moved(2)
    assert (done.after, done.redraw, done.undo, f.at) == (Phase.AWAY, Redraw.PAGE, False, 2)
    done = f.heard(c.move(cursor=5, steps=6))
    assert (done.after, done.redraw, done.take) == (Phase.AWAY, Redraw.PAGE, False)  # says where the class is
    assert f.screen().away == 5 and f.screen().caption is None
    assert f.heard(c.state()).redraw is Redraw.NOTHING
    assert f.moved(0).after is Phase.AWAY and f.may_branch()
    done = f.back()  # Back to the class
    assert (done.after, done.take, done.drop, done.redraw, f.put) == (Phase.FOLLOWING, True, True, Redraw.PAGE, 5)
    assert f.back().after is Phase.FOLLOWING and not f.back().take  # (nothing to come back from)


def test_a_class_student_who_stepped_away_is_pulled_back_when_a_question_opens_and_told_so():
    c, f = following()
    f.moved(1)
    f.branched()  # on a branch of their own, too
    done = f.heard(c.move(steps=6, question=5))
    assert (done.before, done.after) == (Phase.AWAY, Phase.QUESTION)
    assert done.take and done.drop and done.redraw is Redraw.PAGE and f.put == 4
    assert done.said == PULLED_BACK and f.screen().note == PULLED_BACK


def test_while_the_class_question_is_open_an_unanswered_student_stays_on_the_class_step_and_is_told_why():
    c, f = following()
    asked(c, f)
    screen = f.screen()
    assert (screen.question, screen.hold, screen.locked, screen.chosen) == (5, 5, ANSWER_FIRST, None)
    for cursor in (3, 5):  # Back, or Step onto the step the question is about
        done = f.moved(cursor)
        assert (done.after, done.undo, done.said, done.redraw, f.at) == (Phase.QUESTION, True, ANSWER_FIRST,
                                                                         Redraw.STEP, 4)
    assert not f.may_branch()  # no fork or break either
    assert f.moved(4).after is Phase.QUESTION and not f.moved(4).undo


def test_a_class_student_who_answered_may_step_away_but_not_onto_the_step_the_question_is_about():
    c, f = following()
    asked(c, f)
    done = f.answered(5, 1, Answered.COUNTED)
    assert (done.after, done.redraw, f.screen().chosen, f.screen().caption) == (Phase.ANSWERED, Redraw.PAGE, 1,
                                                                                MAY_STEP_AWAY)
    assert f.screen().locked is None and f.screen().hold == 5
    assert f.answered(5, 0, Answered.COUNTED).after is Phase.ANSWERED and f.chosen == {5: 0}  # changed its mind
    done = f.moved(5)
    assert (done.after, done.undo, done.said) == (Phase.ANSWERED, True, NOT_BEFORE_REVEAL)
    done = f.moved(3)
    assert (done.after, done.redraw) == (Phase.AWAY, Redraw.PAGE)
    assert f.moved(5).undo and f.at == 3  # away too, not onto it before the reveal
    assert f.moved(2).after is Phase.AWAY and f.at == 2
    assert not f.may_branch()
    done = f.heard(c.move(steps=7))  # the question still open: the page says where the class is
    assert (done.after, done.take) == (Phase.AWAY, False)
    done = f.back()
    assert (done.after, done.take, f.put) == (Phase.ANSWERED, True, 4)


def test_a_late_or_closed_class_answer_is_said():
    c, f = following()
    asked(c, f)
    done = f.answered(5, 2, Answered.LATE)
    assert (done.after, done.said, f.screen().note) == (Phase.ANSWERED, LATE, LATE)
    assert f.answered(5, 2, Answered.CLOSED).said == TOO_LATE
    assert f.answered(5, 2, Answered.REFUSED).said == NOT_FOLLOWING
    c2, g = following()
    asked(c2, g)
    assert g.answered(5, 0, Answered.CLOSED).after is Phase.QUESTION  # not taken: still to answer


def test_the_class_reveal_shows_the_answer_then_the_question_is_over_and_the_student_steps_away_again():
    c, f = following()
    asked(c, f)
    f.answered(5, 0, Answered.COUNTED)
    done = f.heard(c.move(revealed=True))  # Reveal, before the class is shown the step
    assert (done.after, done.take) == (Phase.REVEALED, True)
    done = f.heard(c.move(question=None, revealed=False, cursor=5))  # and the step it asked about
    assert (done.after, done.take, f.put) == (Phase.REVEALED, True, 5)
    screen = f.screen()
    assert (screen.verdict, screen.chosen, screen.hold, screen.question) == (5, 0, None, None)
    assert f.may_branch()
    done = f.heard(c.move(cursor=5, steps=7))  # more steps recorded, still on it
    assert (done.after, done.redraw) == (Phase.REVEALED, Redraw.STEP)
    done = f.heard(c.move(cursor=6))  # the class moves on: the question is over
    assert (done.after, done.redraw, f.question) == (Phase.FOLLOWING, Redraw.PAGE, None)
    done = f.moved(2)  # and the student may step away, as before any question
    assert done.after is Phase.AWAY and not done.undo


def test_a_class_student_can_step_away_again_after_a_question_that_closed_without_a_reveal():
    c, f = following()
    asked(c, f)
    done = f.heard(c.move(question=None, cursor=2))  # the teacher went back instead of revealing
    assert (done.after, done.take, f.question, f.put) == (Phase.FOLLOWING, True, None, 2)
    done = f.moved(1)
    assert (done.after, done.undo) == (Phase.AWAY, False)
    assert f.heard(c.move(cursor=3)).redraw is Redraw.PAGE  # away: the page says where the class is now
    assert f.moved(0).after is Phase.AWAY


def test_a_class_student_away_at_the_reveal_comes_back_to_the_answer():
    c, f = following()
    asked(c, f)
    f.answered(5, 1, Answered.COUNTED)
    f.moved(3)
    done = f.heard(c.move(question=None, cursor=5))
    assert (done.after, done.take) == (Phase.AWAY, False)
    assert f.back().after is Phase.REVEALED and f.screen().verdict == 5


def test_when_the_class_ends_a_following_student_keeps_its_last_step_and_steps_alone():
    c, f = following()
    done = f.heard(c.move(cursor=2, ended=True))  # the teacher moved, then ended it, before this page heard
    assert (done.after, done.take, done.redraw, f.put) == (Phase.ENDED, True, Redraw.PAGE, 2)
    screen = f.screen()
    assert (screen.caption, screen.watch, screen.locked, screen.away) == (ENDED, False, None, None)
    assert f.heard(c.move()).redraw is Redraw.NOTHING and f.heard(None).after is Phase.ENDED
    for cursor in (0, 4, 1):  # the run is the student's: every move stays theirs, nothing is undone
        done = f.moved(cursor)
        assert (done.after, done.undo, done.redraw) == (Phase.ENDED, False, Redraw.NOTHING)
    assert f.may_branch() and f.branched().after is Phase.ENDED and f.back().after is Phase.ENDED


def test_when_the_class_ends_during_a_question_or_away_the_student_keeps_what_they_see():
    c, f = following()
    asked(c, f)
    done = f.heard(c.move(ended=True, question=None))
    assert (done.after, done.take, f.screen().question, f.screen().hold) == (Phase.ENDED, True, None, None)
    c2, g = following()
    g.moved(1)
    done = g.heard(None)  # the class is gone from the store (expired long ago): ended too
    assert (done.after, done.take, g.at) == (Phase.ENDED, False, 1)


def test_a_class_student_who_reloads_with_an_answer_given_is_not_asked_again():
    c, f = following()
    asked(c, f)
    f.answered(5, 2, Answered.COUNTED)
    f.heard(c.move(question=None, cursor=2))  # closed, then asked again
    assert f.heard(c.move(question=5, cursor=4)).after is Phase.ANSWERED
