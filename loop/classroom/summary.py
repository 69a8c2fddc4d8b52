"""What the teacher reads of the class's answers: each question with its words, its choices' words, the answers
counted for each and which was right, numbered as the screen numbers them (from 1), in the teacher's language.

The class's rows keep which question was asked (its step, on which of the teacher's runs) and the answers (a
choice's index, never who chose it); the words come from the run itself, as the students saw them
(loop/views/questions.py), said in the language asked for. The live counts on the teacher's page, the summary at
the end of the class and the answers' CSV are all made of `Tally`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Callable

from ..engine.trace import Trace
from ..files.classes import Asked, Counts
from ..text.catalogs import N_, say
from ..views.questions import Question, question_before

# The answers' CSV: its columns, in the teacher's language
COLUMNS = (N_("step"), N_("question"), N_("choice"), N_("choice's text"), N_("right"), N_("answers"),
           N_("late answers (not counted)"))
RIGHT = N_("yes")
UNKNOWN = N_("(the run this question was asked on is no longer saved)")


@dataclass(frozen=True)
class Choice:
    number: int  # as the screen numbers it: from 1
    text: str  # Markdown, as the question drew it
    answers: int  # counted
    late: int  # kept from browsers that came after the question opened, not counted
    right: bool


@dataclass(frozen=True)
class Tally:
    """One question of the class and its answers."""

    step: int  # the step it was asked before (0-based, as the trace counts)
    question: str  # Markdown; UNKNOWN (said) when the run is gone
    choices: tuple[Choice, ...]

    @property
    def before(self) -> int:
        """The step it was asked before, as the screen numbers steps (from 1)."""
        return self.step + 1

    @property
    def answers(self) -> int:
        return sum(c.answers for c in self.choices)

    @property
    def late(self) -> int:
        return sum(c.late for c in self.choices)


def tally(question: Question | None, step: int, counts: Counts, lang: str) -> Tally:
    """The answers `counts` to `question` (None: its words are not known any more), in `lang`."""
    if question is None:
        chosen = sorted(set(counts.chosen) | set(counts.late))
        return Tally(step, say(lang, UNKNOWN), tuple(Choice(n + 1, "", counts.chosen.get(n, 0), counts.late.get(n, 0),
                                                           False) for n in chosen))
    return Tally(step, question.question, tuple(
        Choice(n + 1, text, counts.chosen.get(n, 0), counts.late.get(n, 0), n == question.answer)
        for n, text in enumerate(question.choices)))


def tallies(asked: list[Asked], load: Callable[[str], Trace | None], lang: str) -> list[Tally]:
    """Every question the class was asked, in step order, its words from the teacher's run (`load(run_id)`)."""
    traces: dict[str, Trace | None] = {}
    found = []
    for one in asked:
        trace = None
        if one.run_id is not None:
            if one.run_id not in traces:
                traces[one.run_id] = load(one.run_id)
            trace = traces[one.run_id]
        question = question_before(trace, one.step, lang) if trace is not None else None
        found.append(tally(question, one.step, one.counts, lang))
    return found


def answers_csv(found: list[Tally], lang: str) -> str:
    """The class's answers as CSV, one row a choice of each question: never who answered."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([say(lang, column) for column in COLUMNS])
    for one in found:
        for choice in one.choices:
            writer.writerow([one.before, one.question, choice.number, choice.text,
                             say(lang, RIGHT) if choice.right else "", choice.answers, choice.late])
    return out.getvalue()
