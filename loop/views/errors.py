"""Plain words for what can go wrong when calling the model: what happened, what to do, in the learner's language."""

from __future__ import annotations

import anthropic

from ..engine.capped import TOO_LARGE, ResponseTooLarge
from ..text.catalogs import N_, say, size_words
from ..engine.keys import KeyRefused
from ..engine.model import NEEDS_KEY, NO_ID, InvalidResponse, MissingKey
from ..text.redact import redact

ADVICE = {
    400: N_("The request was refused as invalid (400). The API says:"),
    401: N_("The API key was refused (401 authentication error). Check the key, then retry."),
    403: N_("This key may not use this model or feature (403 permission error). Check the key's permissions, or "
            "choose another model."),
    404: N_("Not found (404): check the model id and the base URL."),
    413: N_("The request is too large (413): the history has outgrown what the API accepts."),
    429: N_("Rate limited (429): too many requests. Wait a little, then retry."),
    500: N_("The API had an internal error (500). Retry in a moment."),
    529: N_("The API is overloaded (529). Retry in a moment."),
}


def explain(exc: BaseException, lang: str = "en", key: str | None = None) -> str:
    """One or two sentences a learner can act on, in `lang`. Never includes a key, even one the server quoted:
    the key the failed request carried is hidden whatever its shape, and so is `key` (the session's).

    What the API itself said is quoted as it said it.
    """
    return redact(_explain(exc, lang), [key, *sent_keys(exc)])


def sent_keys(exc: BaseException) -> list[str]:
    """The keys the failed request carried in its headers (Authorization: Bearer …, x-api-key)."""
    request = getattr(exc, "request", None)
    try:
        headers = request.headers if request is not None else {}
        found = [headers.get("x-api-key"), headers.get("authorization")]
    except Exception:  # no request was made (e.g. a missing key): nothing was sent
        return []
    return [value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value for value in found if value]


def _explain(exc: BaseException, lang: str) -> str:
    if isinstance(exc, KeyRefused):  # the server's key, not sent: where it may not go, or past a limit
        return say(lang, exc.message, **exc.values)
    if isinstance(exc, MissingKey):
        return say(lang, NEEDS_KEY, model=repr(exc.model))
    if isinstance(exc, InvalidResponse):
        return say(lang, NO_ID, n=exc.n, missing=exc.missing)
    if isinstance(exc, ResponseTooLarge):
        return say(lang, TOO_LARGE, size=size_words(exc.limit))
    if isinstance(exc, anthropic.APITimeoutError):
        return say(lang, "The model did not answer in time (timeout). Try again, or raise the timeout.")
    if isinstance(exc, anthropic.APIConnectionError):
        return say(lang, "Could not reach the model's server (no connection). Check the base URL and the network, "
                         "or use the scripted model, which needs neither.")
    if isinstance(exc, anthropic.APIStatusError):
        detail = _api_message(exc)
        status = exc.status_code
        advice = say(lang, ADVICE[status]) if status in ADVICE else \
            say(lang, "The API answered with HTTP {status}.", status=status)
        wait = _retry_after(exc.response)
        if wait is not None and (status == 429 or status >= 500):
            advice += " " + say(lang, "The server asked to wait {seconds} s (retry-after).", seconds=f"{wait:g}")
        return f"{advice} {detail}".strip()
    if isinstance(exc, anthropic.APIResponseValidationError):
        if str(exc).startswith("the stream ended"):
            return say(lang, "The server's answer is not a valid Messages API response: the stream ended before "
                             "message_stop, so the answer is incomplete (the connection was cut, or the server does "
                             "not stream Messages API events). Retry; if it keeps happening, check the base URL and "
                             "the network.")
        return say(lang, "The server's answer is not a valid Messages API response: {error}. Check that the base URL "
                         "points at an Anthropic-compatible server, then retry.", error=exc)
    return f"{type(exc).__name__}: {exc}"


def _api_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return ""


def _retry_after(response) -> float | None:
    """Seconds the server asked to wait, from `retry-after-ms` or `retry-after` (seconds), if either is a number."""
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            return float(headers.get(name)) / scale
        except (TypeError, ValueError):
            continue
    return None
