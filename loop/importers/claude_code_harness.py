"""What Claude Code writes into a log that is neither the model's nor the person's, told apart from what is.

Its own messages in the history (isMeta context, a notice: a background task's end, an interruption, a local
command's output) are harness steps; what it wrote for its user and sent no model (`<synthetic>` words, an API
error) goes into no message: an API error is a failed call, the rest a harness step that adds nothing. Beside
the chain it records what it attached to a request (`attachment`) and the calls it is retrying (`api_error`); a
prompt typed while the model worked and put in beside a tool_result is put into the history where it went in.
"""

from __future__ import annotations

import re

from ..text.catalogs import N_
from .claude_code_beside import Queued
from .common import Segment, origin_of
from ..engine.rules import message_text
from .notes import Note

SYNTHETIC = "<synthetic>"  # the model Claude Code names on a message it wrote itself
META_WHY = N_("Claude Code added this message as context (isMeta); the person did not type it")
API_ERROR_WHY = N_("Claude Code wrote this API error for its user (isApiErrorMessage): the call failed, and no "
                   "request sent these words to the model")
SHOWN_WHY = N_("Claude Code showed this to its user (model <synthetic>); it is not in messages: no request sent it")
QUEUED_NOTE = ("typed while the model worked (a queue-operation record): it went into the next request beside the "
               "tool_results; the log holds no user record of its own for it")
NOTICE_WHY = N_("Claude Code put this notice into the history (a background task's end, an interruption, a local "
                "command's output); the person did not type it")
NOTICES = ("<task-notification>", "[Request interrupted by user", "<local-command-stdout>", "<local-command-stderr>",
           "<bash-stdout>", "<bash-stderr>")


def queue_in(segment: Segment, queued: Queued, at: float) -> None:
    """A prompt typed while the model worked, put into the history where it went in: a user message of its own."""
    index = len(segment.messages)
    segment.messages.append({"role": "user", "content": queued.text})
    segment.origins.append(queued.where)
    segment.times[index] = at
    if queued.text.lstrip().startswith(NOTICES):
        segment.harness[index] = NOTICE_WHY
    else:
        segment.notes[index] = QUEUED_NOTE


def shown(record: dict, content: object, why: str, where: Note) -> dict:
    """What Claude Code wrote for its user, as the event before the next message: a failed call when it is an API
    error, else a harness step that puts nothing into messages."""
    text = message_text({"content": content})
    if why == API_ERROR_WHY:
        found = re.search(r"\b([1-5]\d\d)\b", text)
        error = {"status": int(found.group(1)) if found else None,
                 "type": record.get("error") if isinstance(record.get("error"), str) else "api_error", "message": text}
        return {"stage": "retry", "detail": {"error": error, "gave_up": True, "stage": "call_model", "why": why,
                                             "request": None, "origin": origin_of([where], 0)}}
    return {"stage": "harness", "detail": {"role": "assistant", "why": why, "said": text, "in_messages": False,
                                           "origin": origin_of([where], 0)}}


def extra(record: dict, kind: object, line: int, place) -> tuple | None:
    """A record of the chain that holds no message but tells of the call after it: an attachment Claude Code
    rendered into the request, or an API error it is retrying."""
    if kind == "attachment" and isinstance(record.get("attachment"), dict):
        rendered = record.get("rendered") if isinstance(record.get("rendered"), list) else []
        text = "\n".join(str(r.get("content")) for r in rendered if isinstance(r, dict) and r.get("content"))
        if not text:
            return None
        role = record.get("renderedRole") if isinstance(record.get("renderedRole"), str) else "user"
        return ("attachment", {"type": str(record["attachment"].get("type")), "role": role, "text": text})
    if kind == "system" and record.get("subtype") == "api_error":
        error = record.get("error") if isinstance(record.get("error"), dict) else {}
        wait = record.get("retryInMs")
        facts = {"error": {"status": error.get("status"), "type": "api_error",
                           "message": str(error.get("message") or record.get("content") or "")},
                 "gave_up": False, "stage": "call_model", "why": RETRYING_WHY, "request": None,
                 "attempt": record.get("retryAttempt"), "attempts": record.get("maxRetries"),
                 "origin": origin_of([place(line)], 0)}
        if isinstance(wait, (int, float)) and not isinstance(wait, bool):
            facts["wait_s"] = wait / 1000
        return ("failure", facts)
    return None


RETRYING_WHY = N_("Claude Code's call failed (a system api_error record); it waits, then calls again")


def harness_s(record: dict) -> str | None:
    """Why a record's message is the harness's (a catalog message), or None when it is the model's or the person's.
    An API error (API_ERROR_WHY) or other words for the person (SHOWN_WHY) are in no request."""
    message = record.get("message") if isinstance(record.get("message"), dict) else {}
    if record.get("type") == "assistant" and (message.get("model") == SYNTHETIC or record.get("isApiErrorMessage")):
        return API_ERROR_WHY if record.get("isApiErrorMessage") is True else SHOWN_WHY
    if record.get("type") == "user" and record.get("isMeta") is True:
        return META_WHY
    if record.get("type") == "user" and not record.get("isCompactSummary") and notice(message.get("content")):
        return NOTICE_WHY
    return None


def notice(content: object) -> bool:
    """A user message that is one of Claude Code's notices (NOTICES), not the person's words nor tool_results."""
    if isinstance(content, str):
        return content.lstrip().startswith(NOTICES)
    if not isinstance(content, list) or not content:
        return False
    texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return len(texts) == len(content) and all(isinstance(t, str) and t.lstrip().startswith(NOTICES) for t in texts)
