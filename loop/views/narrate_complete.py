"""The one-line narration of the complete loop's steps (narrate.py says the chapter's): a retry and its wait, a
prompt refused as too long, a recovery after max_tokens, tools run at once or started early."""

from __future__ import annotations

import math

from ..text.lines import short
from ..text.catalogs import say
from ..engine.details import CallModelDetail, RetryDetail, RunToolDetail, WriteBackDetail
from ..engine.layer_mistake import WHY_REFUSED
from ..engine.recovery import CONTINUE


def number(value: object, default=0.0):
    """A number a step recorded, or `default` for anything else: a transcript from elsewhere may hold any JSON
    value in a step's detail, and a page shows it without stopping."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    try:
        return float(value) if math.isfinite(value) else default
    except OverflowError:  # an integer too long for a float
        return default


def seconds(ms: object) -> str:
    """Milliseconds as seconds, to a tenth when over one (2.0 s, 0.41 s)."""
    value = number(ms) / 1000
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def error_label(error: object) -> str:
    facts = error if isinstance(error, dict) else {}
    return " ".join(str(p) for p in (facts.get("status"), facts.get("type")) if p) or "error"


def wait_words(d: RetryDetail, lang: str) -> str:
    """How the wait was worked out: the server's retry-after, or 1 s × 2^k plus jitter (and a test's scale)."""
    if number(d.retry_after_s, None) is not None:
        how = say(lang, "retry-after: {s} s", s=f"{number(d.retry_after_s):g}")
    else:
        how = say(lang, "{base} s × 2^{k} + jitter {jitter} s", base="1", k=f"{number(d.attempt, 1) - 1:g}",
                  jitter=f"{number(d.jitter_s):.2f}")
    if number(d.scale):
        how = "(" + how + ") " + say(lang, "× {scale} for tests", scale=f"{number(d.scale):g}")
    return how


def retry_line(step, lang: str) -> str:
    d = step.detail
    error = error_label(d.error)
    if d.attempt is None and d.attempts is None:  # an imported agent's failed call: the log tells no attempts
        words = d.error.get("message") if isinstance(d.error, dict) else None
        said = f"{error}: {short(str(words), 100)}" if words else error
        if d.gave_up:
            return say(lang, "the call failed ({error}); the agent gave up on it, the loop ends", error=said)
        return say(lang, "the call failed ({error}); the agent calls again", error=said)
    if d.gave_up:
        return say(lang, "the call failed ({error}) on attempt {k} of {n}: no retry is left, the loop ends",
                   error=error, k=d.attempt, n=d.attempts)
    return say(lang, "the call failed ({error}) on attempt {k} of {n}: wait {wait} s ({how}), then call again",
               error=error, k=d.attempt, n=d.attempts, wait=f"{number(d.wait_s):.2f}",
               how=wait_words(d, lang))


def refused_line(step, lang: str) -> str:
    d = step.detail
    if d.mistake:  # a broken loop's request (engine/layer_mistake.py), not a prompt too long
        error = d.error or {}
        return say(lang, WHY_REFUSED, status=error.get("status"), type=error.get("type"))
    if step.ended:
        return say(lang, "the API refused the prompt as too long ({tokens} tokens > {maximum} maximum) even after a "
                         "compaction: the loop ends", tokens=d.tokens, maximum=d.maximum)
    return say(lang, "the API refused the prompt as too long ({tokens} tokens > {maximum} maximum): compact, then call "
                     "again; the budget is now {budget} tokens", tokens=d.tokens, maximum=d.maximum,
               budget=d.budget)


def recover_line(step, lang: str) -> str:
    d = step.detail
    return say(lang, "messages ← user: \"{message}\" ({k} of {limit} in a row); turn_count={turn}, "
                     "transition_reason={reason}", message=CONTINUE, k=d.k, limit=d.limit,
               turn=step.turn_count, reason=step.transition_reason)


LINES = {"retry": retry_line, "refused": refused_line, "recover": recover_line}


def reason(step) -> str:
    """` · transition_reason=retry`: the complete loop's reason to go on, on the step that set it."""
    if step.stage == "recover" or step.transition_reason not in ("retry", "compact_resume"):
        return ""  # recover's line says it already
    if step.stage == "compact" and step.detail.kind != "resume":
        return ""
    return f" · transition_reason={step.transition_reason}"


def call_extras(d: CallModelDetail, lang: str, planned: object = None) -> str:
    """What a call of the complete loop adds to its line: the attempt it took, the tools it started early.

    The wait is the one the retry step before it planned (`planned`), said with the same figure as there: the
    time measured since the failure also holds the script's own time (and a learner's pause before Step). A
    skipped wait says the time measured, shorter than the one planned."""
    out = ""
    if number(d.attempt, 1) > 1:
        waited = d.waited_s if d.skipped or number(planned, None) is None else planned
        out += " · " + say(lang, "attempt {k}, after waiting {s} s", k=d.attempt, s=f"{number(waited):.2f}")
        if d.skipped:
            out += " " + say(lang, "(the wait was skipped)")
    if d.early_start and isinstance(d.early_start, list):
        out += " · " + say(lang, "{n} tool(s) started while the answer streamed", n=len(d.early_start))
    return out


def tool_extras(d: RunToolDetail, lang: str) -> str:
    out = ""
    if isinstance(d.parallel, dict):
        out += " · " + say(lang, "ran at once with {n} other(s); waited {s} s for it", n=d.parallel.get("with"),
                           s=seconds(d.parallel.get("waited_ms")))
    if isinstance(d.early, dict):
        out += " · " + say(lang, "started {s} s before the answer ended: {saved} s saved",
                           s=seconds(d.early.get("started_before_end_ms")), saved=seconds(d.early.get("saved_ms")))
    return out


def batch_extras(d: WriteBackDetail, lang: str) -> str:
    batch = d.parallel
    if not isinstance(batch, dict):
        return ""
    out = " · " + say(lang, "{n} tools: wall time {wall} s beside a sum of {sum} s", n=batch.get("tools"),
                      wall=seconds(batch.get("wall_ms")), sum=seconds(batch.get("sum_ms")))
    if batch.get("early_saved_ms") is not None:
        out += " · " + say(lang, "early start saved {s} s", s=seconds(batch["early_saved_ms"]))
    return out
