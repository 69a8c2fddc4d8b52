"""The first rule a learner's loop broke, named by the Mistakes lab's name, where it broke.

Named from what the requests show, never from the API's words: the 400 for a missing append and the one
for a wrong id read alike ("unexpected `tool_use_id`"), but request k+1 against request k and response k
tells them apart (loop/engine/mistakes.py `recognize`, where each mistake is defined). The call that shows a
mistake is the one the API refused; a loop that ends with a `tool_use` unanswered is named at its last call.

    named(recording)   # Named(mistakes.WRONG_ID, call=1, line=31, error={status, type, message}, made=Made(…)) or None
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.mistakes import MISTAKES, NO_LOOP, find_response, recognize, recognize_end, shape
from ..text.catalogs import N_, Note
from . import recording as rec
from .lines import Made, made
from .recording import Exchange, Recording

# Beside the seven mistakes' names (loop/engine/mistakes.py MISTAKES): how else a run of a learner's loop breaks.
NEVER_ENDS = "too-many-calls"
EXCEPTION = "exception"
SYNTAX_ERROR = "syntax-error"
TIMEOUT = "timeout"
KILLED = "killed"
UNNAMED = "refused"  # the API refused a request in a way none of the lab's mistakes makes
NEVER_CALLED = "never-called"  # it returned (or only printed) without one call: no rule was kept, none was tested
MISSING_MODULE = "missing-module"  # it imports a module the sandbox does not have: the environment's, not a rule's
STOPPED = (NEVER_ENDS, TIMEOUT, KILLED)  # stopped from outside, at a limit

SAID = {
    **{name: mistake.shows for name, mistake in MISTAKES.items()},  # how the requests show each mistake
    NEVER_ENDS: N_("a loop that never ends: stopped after {call} model calls"),
    EXCEPTION: N_("your code raised an exception at line {line}: {message}"),
    SYNTAX_ERROR: N_("your code does not compile: line {line}, column {column}: {message}"),
    TIMEOUT: N_("stopped after {seconds} seconds: {message}"),
    KILLED: N_("the sandbox stopped your code: {message}"),
    UNNAMED: N_("call {call}: the API refused the request"),
    NEVER_CALLED: N_("your loop never called the model"),
}
# The loop ran the tools of its last answer, then returned: their tool_results never went back to the model.
RAN_AND_RETURNED = N_("call {call}: the loop ran its tools, then returned without writing the tool_results back")


@dataclass(frozen=True)
class Named:
    """The first broken rule: its name, the call it shows at, the API's error and the learner's line."""

    name: str  # a mistake's name (MISTAKES), or NEVER_ENDS, EXCEPTION, SYNTAX_ERROR, TIMEOUT, KILLED, UNNAMED, NEVER_CALLED
    call: int | None  # the exchange it shows at (index in Recording.exchanges), None when no call shows it
    line: int | None  # the learner's line: that call's, or the exception's or syntax error's
    error: dict | None = None  # the API's {status, type, message} when it refused the call
    note: Note | None = None  # what happened, in a sentence, in any language
    file: str | None = None  # the learner's file of `line`, when it is not the one run
    made: Made | None = None  # a mistake's: the line of theirs that made the message the rule is about (lines.py)

    @property
    def is_rule(self) -> bool:
        """A rule of the API the loop broke (a Mistakes lab name, or a refusal none of them makes), not the
        environment's problem, an exception or a limit."""
        return self.is_mistake or self.name == UNNAMED

    @property
    def stopped(self) -> bool:
        """Stopped from outside, at a limit (calls, time, the sandbox's bounds)."""
        return self.name in STOPPED

    @property
    def is_mistake(self) -> bool:
        """One of the seven mistakes (the Mistakes lab has a page for each)."""
        return self.name in MISTAKES

    def render(self, lang: str = "en") -> str:
        return self.note.render(lang) if self.note is not None else ""


def _said(name: str, call: int | None, **values: object) -> Note:
    shown = {"call": call + 1} if call is not None else {}
    if call is not None and call > 0:
        shown["before"] = call
    return Note(SAID[name], **shown, **{k: v for k, v in values.items() if v is not None})


def named(recording: Recording) -> Named | None:
    """The first rule `recording`'s loop broke, or None when it ended by itself with every rule kept. A mistake is
    named at the line of theirs that made the message the rule is about, when their program told it (lines.py);
    else at the call's line."""
    found = _named(recording)
    if found is None or not found.is_mistake:
        return found
    where = made(recording, found.name, found.call)
    if where is None:
        return found
    return replace(found, made=where, line=where.line, file=where.file)


def _named(recording: Recording) -> Named | None:
    calls = recording.exchanges
    outcome = recording.outcome
    if outcome == rec.SYNTAX_ERROR:
        return Named(SYNTAX_ERROR, None, recording.error_line, None,
                     Note(SAID[SYNTAX_ERROR], line=recording.error_line or 0, column=recording.error_column or 0,
                          message=recording.message or ""))
    if outcome == rec.MISSING_MODULE and recording.said:
        return Named(MISSING_MODULE, None, recording.error_line, None, Note.from_json(recording.said))
    refused = next((k for k, e in enumerate(calls) if e.error is not None and e.error.get("status") == 400), None)
    if refused is not None:
        return _refused(calls, refused)
    if outcome == rec.EXCEPTION:
        return Named(EXCEPTION, len(calls) - 1 if calls else None, recording.error_line, None,
                     Note(SAID[EXCEPTION], line=recording.error_line or 0, message=recording.message or ""))
    if refused is None and outcome == rec.REFUSED and calls and calls[-1].error is not None:
        return _refused(calls, len(calls) - 1)
    if outcome == rec.TOO_MANY_CALLS:
        return Named(NEVER_ENDS, len(calls) - 1, calls[-1].line if calls else None, None,
                     Note(SAID[NEVER_ENDS], call=len(calls)))
    if outcome == rec.TIMEOUT:
        return Named(TIMEOUT, len(calls) - 1 if calls else None, calls[-1].line if calls else None, None,
                     Note(SAID[TIMEOUT], seconds=round(recording.seconds) or rec.MAX_SECONDS,
                          message=recording.message or ""))
    if outcome == rec.KILLED:
        said = Note.from_json(recording.said) if recording.said else recording.message or ""
        return Named(KILLED, len(calls) - 1 if calls else None, calls[-1].line if calls else None, None,
                     Note(SAID[KILLED], message=said))
    if not calls:  # ended by itself without a single call: it did none of the chapter's loop
        return Named(NEVER_CALLED, None, None, None, Note(SAID[NEVER_CALLED]))
    if calls[-1].response is not None:
        last = calls[-1]
        response = last.as_messages()[1] or {}  # an OpenAI chat completion read in the Messages API's form
        # Statement 1: the answer asked for a tool_use and the loop returned. Nothing ran it: no loop; ran
        # but never written back: the results stayed with the learner.
        name = recognize_end(response, bool(last.tool_runs))
        if name is not None:
            k = len(calls) - 1
            note = _said(name, k) if name == NO_LOOP else Note(RAN_AND_RETURNED, call=k + 1)
            return Named(name, k, last.line, None, note)
    return None


def _refused(calls: list[Exchange], k: int) -> Named:
    """The mistake the refused request k shows, read against request k-1 and its response."""
    request = calls[k].as_messages()[0]
    sent = request.get("messages") if isinstance(request, dict) else None
    sent = sent if isinstance(sent, list) else []
    name = UNNAMED
    if k > 0 and calls[k - 1].response is not None:
        name = _between(calls[k - 1], sent)
    return Named(name, k, calls[k].line, calls[k].error, _said(name, k))


def _between(before: Exchange, sent: list) -> str:
    """What the loop did with response k-1 before it sent `sent` (request k), as a mistake's name (or UNNAMED)."""
    return recognize(before.as_messages()[1] or {}, sent) or UNNAMED  # an OpenAI completion in the Messages API's form


# What exercises.py and reading.py read a request's messages with, where the mistakes are defined.
_find_response = find_response
_shape = shape
