"""The retry branch of the complete loop: a model call that failed on the way is called again, as a step.

The chapter's loop has no error handling: a failed call ends it. A production
harness tells the failures apart (the course's s11, first match wins):

- transient: no connection, a timeout, 429 (rate limited), 5xx and 529
  (overloaded). Wait `1 s × 2^attempt` (at most 30 s) plus 0-1 s of jitter,
  or what the server asked with `retry-after`, then call again; at most the
  profile's retries (3, profiles.py), then the loop ends with the reason;
- the prompt is too long (400 `prompt is too long: N tokens > M maximum`):
  compact, then call again (layer_resume.py);
- anything else (a bad key, a malformed request): no retry can help.

These retries happen in the loop, each a `retry` step the learner sees, so the
SDK's own are switched off in this profile (`max_retries=0`).
"""

from __future__ import annotations

import random
import re

import anthropic

from .waits import scale


BASE = 1.0  # seconds: the first wait, doubled each retry
CAP = 30.0
JITTER = 1.0  # at most this many seconds added at random, so clients that failed together do not retry together
LONGEST_WAIT = 60.0  # a retry-after longer than this ends the loop: a learner at a page will not wait that long
TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum")

# A retry step's `why`, in English as the trace keeps it (narrate_complete.py says it in the learner's language)
WHY_RETRY = "the call failed ({error}): attempt {attempt} of {attempts}; wait {wait} s, then call again"
WHY_GAVE_UP = "the call failed ({error}) {attempts} times: no retry is left, the loop ends"
WHY_TOO_LONG_WAIT = "the call failed ({error}) and the server asks to wait {wait} s, longer than {longest} s: the loop ends"


def status_of(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None) if isinstance(exc, anthropic.APIStatusError) else None


def transient(exc: BaseException) -> bool:
    """Is this a failure on the way, which a later call may not meet: no connection, a timeout, 429 or 5xx/529?"""
    if isinstance(exc, anthropic.APIConnectionError):  # a timeout is one too
        return True
    if isinstance(exc, anthropic.APIResponseValidationError):  # a stream cut before message_stop
        return str(exc).startswith("the stream ended")
    status = status_of(exc)
    return status is not None and (status == 429 or status >= 500)


def too_long(exc: BaseException) -> tuple[int, int] | None:
    """(tokens, maximum) when the API refused the prompt as too long; None otherwise."""
    if status_of(exc) != 400:
        return None
    found = TOO_LONG.search(error_facts(exc)["message"])
    return (int(found.group(1)), int(found.group(2))) if found else None


def error_facts(exc: BaseException) -> dict:
    """What the failure was, as the API said it: {"status", "type", "message"} (status None without an answer)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return {"status": status_of(exc), "type": str(error.get("type") or ""), "message": str(error.get("message") or "")}
    kind = ("timeout" if isinstance(exc, anthropic.APITimeoutError) else
            "connection" if isinstance(exc, anthropic.APIConnectionError) else type(exc).__name__)
    return {"status": status_of(exc), "type": kind, "message": str(exc)}


def request_of(exc: BaseException) -> dict | None:
    """The body the failed call sent, without `messages` (the trace keeps those once), if it was sent."""
    import json

    try:
        body = json.loads(exc.request.content)  # type: ignore[attr-defined]
    except Exception:  # no request was made, or not a JSON one
        return None
    return {k: v for k, v in body.items() if k != "messages"} if isinstance(body, dict) else None


def label(facts: dict) -> str:
    """`529 overloaded_error`, `timeout`: a failure in a few words."""
    return " ".join(str(p) for p in (facts.get("status"), facts.get("type")) if p) or "error"


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (`retry-after-ms`, or `retry-after` in seconds), if it said."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, per_second in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            seconds = float(headers.get(name)) / per_second
        except (TypeError, ValueError):
            continue
        if seconds >= 0:
            return seconds
    return None


def backoff(retry: int, rng: random.Random) -> tuple[float, float]:
    """(the rule's wait, the jitter) before retry number `retry` (0 for the first): 1 s × 2^retry, at most 30 s."""
    return min(CAP, BASE * 2 ** retry), rng.uniform(0, JITTER)


def plan(exc: BaseException, retries: int, rng: random.Random, limit: int) -> dict:
    """What the loop does after `exc`, its `retries` so far of at most `limit` (the profile's): the facts a
    `retry` step records.

    {"error": facts, "attempt": k (the call that failed, from 1), "attempts": 1 + limit,
    "gave_up": bool, and unless it gave up: "backoff_s", "jitter_s", "retry_after_s" (when the server
    said), "wait_s" (the seconds really waited), "scale" (when tests scale the waits)}.
    """
    facts = error_facts(exc)
    out: dict = {"error": facts, "attempt": retries + 1, "attempts": limit + 1}
    asked = retry_after(exc)
    if retries >= limit or (asked is not None and asked > LONGEST_WAIT):
        out["gave_up"] = True
        if asked is not None:
            out["retry_after_s"] = asked
        return out
    rule, jitter = backoff(retries, rng)
    wait = asked if asked is not None else rule + jitter
    out.update(gave_up=False, backoff_s=rule, jitter_s=round(jitter, 3), wait_s=round(wait * scale(), 3))
    if asked is not None:
        out["retry_after_s"] = asked
    if scale() != 1:
        out["scale"] = scale()
    return out


def why(planned: dict) -> str:
    """The step's `why`, in English (narrate.py says it again in any language)."""
    error = label(planned["error"])
    if not planned.get("gave_up"):
        return WHY_RETRY.format(error=error, attempt=planned["attempt"], attempts=planned["attempts"],
                                wait=f"{planned['wait_s']:g}")
    if planned.get("retry_after_s", 0) > LONGEST_WAIT:
        return WHY_TOO_LONG_WAIT.format(error=error, wait=f"{planned['retry_after_s']:g}", longest=f"{LONGEST_WAIT:g}")
    return WHY_GAVE_UP.format(error=error, attempts=planned["attempt"])
