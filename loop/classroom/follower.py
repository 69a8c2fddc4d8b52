"""A student following a class, as a state machine.

A follower's page holds a copy of the class's run of its own. Where that copy is, and what the page draws around
it, is one of six phases:

    FOLLOWING  on the class's step; the class moves the copy
    AWAY       on the student's own step (Back, Step, a fork or a break): the class moves on without it
    QUESTION   the class's question is open and this browser has not answered: the copy stays on the class's step
    ANSWERED   answered the open question: the student may step away, never onto the step the question is about
    REVEALED   the class shows the step its question was about: the answer, and why
    ENDED      the class has ended (its teacher ended it, or it expired): the copy, at its last step, is the student's

Four things move a follower: the class as read (`heard`), the student's own move of the copy (`moved`), a branch of
the student's own (`branched`), Back to the class (`back`), and the student's answer (`answered`). Each returns a
`Transition`: the phase before and after, whether the copy takes the class's step, whether the student's move is
undone or their branches dropped, what to draw again (nothing, the step, the whole page) and what to say (a message,
said in the student's language by the page). `screen()` says what the page draws in the phase it is in. Nothing here
knows Streamlit: the page only turns these into widgets and reruns (pages/views/following.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..files.classes import Answered, ClassState
from ..text.catalogs import N_


class Phase(Enum):
    FOLLOWING = "following"
    AWAY = "away"
    QUESTION = "question open"
    ANSWERED = "answered"
    REVEALED = "revealed"
    ENDED = "ended"


WITH_THE_CLASS = (Phase.FOLLOWING, Phase.QUESTION, Phase.ANSWERED, Phase.REVEALED)  # the class moves the copy


class Redraw(Enum):
    NOTHING = "nothing"
    STEP = "step"  # the step alone (the class's cursor or its steps moved, nothing around the step changed)
    PAGE = "page"  # the whole page: what is drawn around the step changed


# What the page says, in the student's language
FOLLOWS = N_("You follow the teacher: your page shows the teacher's step. Back and Step move your own copy; nothing "
             "runs.")
STEPPED_AWAY = N_("You stepped away: the class is at step {k}.")
ANSWER_FIRST = N_("Answer the class's question first: until you answer, your page stays on the class's step, and "
                  "First, Back and Step wait.")
MAY_STEP_AWAY = N_("You may step away meanwhile; the step the question is about shows once the teacher reveals the "
                   "answer.")
NOT_BEFORE_REVEAL = N_("The step the question is about shows when the teacher reveals the answer.")
PULLED_BACK = N_("The teacher asked the class a question: your page is back on the class's step.")
ENDED = N_("The class has ended. Your page keeps its last step: step through the run on your own, and keep it with "
           "“Save transcript”.")
TOO_LATE = N_("Too late: the teacher has closed this question.")
LATE = N_("Your answer is kept but not counted: your browser joined the class after this question opened.")
NOT_FOLLOWING = N_("Your answer was not taken: this browser does not follow the class (reload the page to join it).")


@dataclass(frozen=True)
class Transition:
    """What one event did to a follower, and what the page must do about it."""

    before: Phase
    after: Phase
    redraw: Redraw = Redraw.NOTHING
    take: bool = False  # the copy goes to the class's run and step (`Follower.put`, of `Follower.run_id`)
    undo: bool = False  # the student's move is undone: the copy goes back to `Follower.at`
    drop: bool = False  # the student's own branches are closed and dropped
    said: str | None = None  # a message (N_) shown once, in the student's language


@dataclass(frozen=True)
class Screen:
    """What the page draws around the step in a phase."""

    phase: Phase
    caption: str | None  # under the class's heading
    away: int | None  # AWAY: the class's step (0-based), said with Back to the class
    question: int | None  # QUESTION, ANSWERED: the open question's step, with its choices
    chosen: int | None  # this browser's answer to it
    verdict: int | None  # REVEALED: the step whose answer and why show
    locked: str | None  # why First, Back and Step do not move (QUESTION), or None
    hold: int | None  # the step the browser must not show ahead of the server (the question's, while it is open)
    note: str | None  # what the last transition said, until the phase changes
    watch: bool  # the page asks the server to wake it when the class moves (not once it ended)


@dataclass
class Follower:
    """One browser following the class `code` (see the module's docstring)."""

    code: str
    phase: Phase = Phase.FOLLOWING
    version: int | None = None  # the class's version last heard
    run_id: str | None = None  # the class's run and its steps, last heard
    steps: int = -1
    cursor: int = -1  # the class's step, last heard
    put: int = -1  # the step the class last put the copy on
    at: int = -1  # where the copy is, as last known (a move that is undone goes back here)
    question: int | None = None  # the class's question: open, or the one just revealed; None once it is over
    open: bool = False  # that question is open
    chosen: dict[int, int] = field(default_factory=dict)  # step -> this browser's answer to the class's question
    note: str | None = None

    # -- events --
    def heard(self, state: ClassState | None) -> Transition:
        """The class as read now (None: no such class any more)."""
        before = self.phase
        if before is Phase.ENDED:
            return Transition(before, before)
        if state is None or state.ended:  # the copy keeps the class's last step, and is the student's from now on
            take = before in WITH_THE_CLASS and state is not None
            if state is not None:
                self._hear(state)
            self.question, self.open = None, False
            return self._go(Transition(before, Phase.ENDED, Redraw.PAGE, take=take))
        new = state.version != self.version
        moved_run = state.run_id != self.run_id  # (more steps of the same run: the step takes them in place)
        self._hear(state)
        # What a phase that stays with the class redraws when the class only moved: its step, or the whole page for
        # another run (as the server's watcher decides which to wake: pages/views/wake.py `shape`)
        same = Transition(before, before, (Redraw.PAGE if moved_run else Redraw.STEP) if new else Redraw.NOTHING,
                          take=new and before in WITH_THE_CLASS)
        away = Transition(before, before, Redraw.PAGE if new else Redraw.NOTHING)  # the page says where the class is
        asking = state.question if state.question is not None and not state.revealed else None
        if asking is not None:
            if asking != self.question or not self.open:  # a new question: everyone answers it on the class's step
                self.question, self.open = asking, True
                after = Phase.ANSWERED if asking in self.chosen else Phase.QUESTION
                pulled = before is Phase.AWAY
                return self._go(Transition(before, after, Redraw.PAGE, take=True, drop=pulled,
                                           said=PULLED_BACK if pulled else None))
            return self._go(away if before is Phase.AWAY else same)  # (away: stepped away after answering)
        if self.open and ((state.revealed and state.question == self.question)
                          or (state.question is None and state.cursor == self.question)):  # the step it asked about
            self.open = False
            if before is Phase.AWAY:  # Back to the class then shows the answer, while the class is on it
                return self._go(Transition(before, before, Redraw.PAGE))
            return self._go(Transition(before, Phase.REVEALED, Redraw.PAGE, take=True))
        if self.question is not None and not self.open and state.cursor == self.question:  # still on the revealed step
            return self._go(away if before is Phase.AWAY else same)
        self.question, self.open = None, False  # any question is over: closed, or the class moved on after it
        if before in (Phase.AWAY, Phase.FOLLOWING):
            return self._go(away if before is Phase.AWAY else same)
        return self._go(Transition(before, Phase.FOLLOWING, Redraw.PAGE, take=True))

    def moved(self, cursor: int) -> Transition:
        """The student's own click moved the copy to `cursor` (First, Back, Step, the slider)."""
        before = self.phase
        if before is Phase.QUESTION:
            if cursor == self.put:
                return Transition(before, before)
            return self._go(Transition(before, before, Redraw.STEP, undo=True, said=ANSWER_FIRST))
        if self.open and self.question is not None and cursor >= self.question:  # answered, not revealed yet
            return self._go(Transition(before, before, Redraw.STEP, undo=True, said=NOT_BEFORE_REVEAL))
        self.at = cursor
        if before in WITH_THE_CLASS and cursor != self.put:
            return self._go(Transition(before, Phase.AWAY, Redraw.PAGE))
        return Transition(before, before)

    def may_branch(self) -> bool:
        """Whether a fork or a break of the student's own may be made now: not while the class's question is open
        (the branch would run past the step it asks about)."""
        return not self.open

    def branched(self) -> Transition:
        """A fork or a break of the student's own: a step away (once the class ended, the copy is theirs anyway)."""
        before = self.phase
        return self._go(Transition(before, before if before is Phase.ENDED else Phase.AWAY, Redraw.PAGE))

    def back(self) -> Transition:
        """Back to the class: the class's step, the student's branches dropped."""
        before = self.phase
        if before is not Phase.AWAY:
            return Transition(before, before)
        after = Phase.FOLLOWING
        if self.open and self.question is not None:
            after = Phase.ANSWERED if self.question in self.chosen else Phase.QUESTION
        elif self.question is not None and self.cursor == self.question:
            after = Phase.REVEALED
        return self._go(Transition(before, after, Redraw.PAGE, take=True, drop=True))

    def answered(self, step: int, choice: int, result: Answered) -> Transition:
        """The store's answer to this browser's choice `choice` of the question of `step`."""
        before = self.phase
        if result in (Answered.COUNTED, Answered.LATE):
            self.chosen[step] = choice
            after = Phase.ANSWERED if before is Phase.QUESTION and step == self.question else before
            return self._go(Transition(before, after, Redraw.PAGE, said=LATE if result is Answered.LATE else None))
        return self._go(Transition(before, before, Redraw.PAGE, said=TOO_LATE if result is Answered.CLOSED
                                   else NOT_FOLLOWING))

    # -- what the page draws --
    def screen(self) -> Screen:
        phase = self.phase
        open_question = self.question if self.open and phase in (Phase.QUESTION, Phase.ANSWERED) else None
        caption = {Phase.FOLLOWING: FOLLOWS, Phase.REVEALED: FOLLOWS, Phase.ANSWERED: MAY_STEP_AWAY,
                   Phase.ENDED: ENDED}.get(phase)
        return Screen(
            phase=phase, caption=caption,
            away=self.cursor if phase is Phase.AWAY else None,
            question=open_question,
            chosen=self.chosen.get(self.question) if self.question is not None else None,
            verdict=self.question if phase is Phase.REVEALED else None,
            locked=ANSWER_FIRST if phase is Phase.QUESTION else None,
            hold=self.question if self.open and phase is not Phase.ENDED else None,
            note=self.note,
            watch=phase is not Phase.ENDED)

    # -- inside --
    def _hear(self, state: ClassState) -> None:
        self.version, self.run_id, self.steps, self.cursor = state.version, state.run_id, state.steps, state.cursor

    def _go(self, transition: Transition) -> Transition:
        """Take `transition`: the phase, the copy's place when it takes the class's step, and what it said (kept until
        the phase changes again)."""
        self.phase = transition.after
        if transition.take:
            self.put = self.at = self.cursor
        if transition.after is not transition.before or transition.said is not None:
            self.note = transition.said
        return transition
