"""The first rule a learner's loop broke, named by the Mistakes lab's name, where it broke.

Named from what the requests show, never from the API's words: the 400 for a missing append and the one
for a wrong id read alike ("unexpected `tool_use_id`"), but request k+1 against request k and response k
tells them apart. The call that shows a mistake is the one the API refused; a loop that ends with a
`tool_use` unanswered is named at its last call.

    named(recording)   # Named("wrong-id", call=1, line=14, error={status, type, message}) or None
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.rules import blocks, tool_results, tool_uses
from ..text.catalogs import N_, Note
from . import recording as rec
from .recording import Exchange, Recording

# Beside the Mistakes lab's names (loop/views/mistakes.py MISTAKES): how else a run of a learner's loop breaks.
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
    "no-loop": N_("call {call}: its answer asked for a tool_use, and the loop returned without running it"),
    "no-assistant-append": N_("call {call}: the request does not hold the assistant response of call {before}"),
    "no-write-back": N_("call {call}: the tool_use of call {before} is not answered by tool_results in the next "
                        "message"),
    "wrong-id": N_("call {call}: the tool_results written back do not carry the ids of call {before}'s tool_use"),
    "text-first": N_("call {call}: the message written back begins with text, not with the tool_results"),
    "results-as-assistant": N_("call {call}: the tool_results were written back as an assistant message"),
    "max-tokens-go-on": N_("call {call}: the answer of call {before} was cut at max_tokens, and the loop went on "
                           "as if it were tool_use"),
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

    name: str  # a Mistakes lab name, or NEVER_ENDS, EXCEPTION, SYNTAX_ERROR, TIMEOUT, KILLED, UNNAMED, NEVER_CALLED
    call: int | None  # the exchange it shows at (index in Recording.exchanges), None when no call shows it
    line: int | None  # the learner's line: that call's, or the exception's or syntax error's
    error: dict | None = None  # the API's {status, type, message} when it refused the call
    note: Note | None = None  # what happened, in a sentence, in any language
    file: str | None = None  # the learner's file of `line`, when it is not the one run

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
        """A name the Mistakes lab has a page for."""
        from ..views.mistakes import MISTAKES  # the lab's names, kept in one place

        return self.name in MISTAKES

    def render(self, lang: str = "en") -> str:
        return self.note.render(lang) if self.note is not None else ""


def _said(name: str, call: int | None, **values: object) -> Note:
    shown = {"call": call + 1} if call is not None else {}
    if call is not None and call > 0:
        shown["before"] = call
    return Note(SAID[name], **shown, **{k: v for k, v in values.items() if v is not None})


def named(recording: Recording) -> Named | None:
    """The first rule `recording`'s loop broke, or None when it ended by itself with every rule kept."""
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
        if response.get("stop_reason") == "tool_use" and tool_uses(response):
            # Statement 1: the answer asked for a tool_use and the loop returned. Nothing ran it: no loop; ran
            # but never written back: the results stayed with the learner.
            name = "no-write-back" if last.tool_runs else "no-loop"
            k = len(calls) - 1
            note = _said(name, k) if name == "no-loop" else Note(RAN_AND_RETURNED, call=k + 1)
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
    """What the loop did with response k-1 before it sent `sent` (request k), as a Mistakes lab name."""
    response = before.as_messages()[1] or {}
    if response.get("stop_reason") == "max_tokens" and not tool_uses(response):
        return "max-tokens-go-on"  # only tool_use goes on; a cut answer ends the loop
    asked = [b.get("id") for b in tool_uses(response)]
    kept = _find_response(sent, response)
    if kept is None:
        return "no-assistant-append"
    after = sent[kept + 1] if kept + 1 < len(sent) and isinstance(sent[kept + 1], dict) else None
    if after is None:
        return "no-write-back"
    if after.get("role") == "assistant":
        return "results-as-assistant" if tool_results(after) else "no-write-back"
    answered = [b.get("tool_use_id") for b in tool_results(after)]
    if not answered:
        return "no-write-back"
    if asked and not set(asked) <= set(answered):
        return "wrong-id"
    first = next(iter(blocks(after)), None)
    if not (isinstance(first, dict) and first.get("type") == "tool_result"):
        return "text-first"
    return UNNAMED


def _find_response(sent: list, response: dict) -> int | None:
    """The index of the assistant message in `sent` that is `response` (the last one with its blocks), or None."""
    wanted = _shape(response)
    for i in range(len(sent) - 1, -1, -1):
        message = sent[i]
        if isinstance(message, dict) and message.get("role") == "assistant" and _shape(message) == wanted:
            return i
    return None


def _shape(message: dict) -> list:
    """A message's blocks by what identifies them (the SDK may add empty keys when it sends a block back)."""
    out = []
    for b in blocks(message):
        if not isinstance(b, dict):
            out.append(repr(b))
        elif b.get("type") == "tool_use":
            out.append(("tool_use", b.get("id")))
        else:
            out.append((b.get("type"), b.get("text")))
    return out
