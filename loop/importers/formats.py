"""Which format a file is, told by its shape (never by its name), and the reader that turns it into a history.

    loopscope            Loopscope's transcript (transcript.py)
    loopscope-journal    a run saved in the runs folder (runs.py), one step a line
    claude-code          a Claude Code session log (.jsonl), its `-p` stream-json, or a web export of its records
                         ({"loglines": [...]}), see claude_code.py
    codex-rollout        an OpenAI Codex CLI rollout (~/.codex/sessions/.../rollout-*.jsonl), see codex.py
    anthropic-messages   a bare `messages` list
    anthropic-request    a request body {model, system, messages, tools, max_tokens}
    anthropic-responses  a list of response Message objects
    openai-chat          OpenAI chat completions messages, or a request body holding them
    course-trace         the course's recorded traces (learn-claude-code), see course.py

A file of another agent's own format that is no history of this loop (a Gemini CLI session, an Agent TARS event
stream) is refused with its name (others.py), not read as the format it resembles.
"""

from __future__ import annotations

from ..files import transcript
from ..text.catalogs import N_
from . import anthropic_api, claude_code, codex, course, openai_chat, others
from .common import Parsed, describe_json
from .failed import ImportFailed
from .finish import Imported, Thread, finish
from .notes import Note, Notes
from .own import is_journal, read_journal, read_transcript
from .reading import decode, parse

KNOWN_FORMATS = N_("a Loopscope transcript, a Claude Code session log (.jsonl), an OpenAI Codex CLI rollout (.jsonl), "
                   "an Anthropic messages list, request body or list of responses, OpenAI chat messages or a request "
                   "body, or a learn-claude-code trace")


def read_data(data: bytes, name: str, thread: str | None) -> Imported:
    """One file's bytes, whatever format they are in (the caller checked their size)."""
    text = decode(data)
    if not text or text.isspace():
        raise ImportFailed(N_("the file is empty"))
    notes = Notes()
    value, records = parse(text, notes)
    threads: list[Thread] = []
    chosen = None
    if records is not None:
        if is_journal(records):
            return read_journal(records, notes)
        if codex.looks_like(records):
            fmt, parsed = "codex-rollout", codex.read(records, notes)
        elif any(claude_code.looks_like(r) for _, r in records):
            fmt = "claude-code"
            parsed, threads, chosen = read_claude_code(records, notes, thread)
            thread = None
        elif all(isinstance(r, dict) and "role" in r for _, r in records):
            value = [r for _, r in records]  # one message a line: read as a list
            fmt, parsed = by_shape(value, notes)
        else:
            stranger = others.named([r for _, r in records])
            if stranger is not None:
                raise ImportFailed(stranger)
            raise ImportFailed(N_("JSON Lines, but not a log of any known format: the first line holds {what}. "
                                  "Loopscope reads {formats}"), what=describe_json(records[0][1]),
                               formats=Note(KNOWN_FORMATS))
    else:
        if isinstance(value, dict) and value.get("format") == transcript.FORMAT:
            return read_transcript(value, notes)
        lines = claude_code.exported(value)
        if lines is not None:  # a log of one line, or a web export of a log's records
            fmt = "claude-code"
            parsed, threads, chosen = read_claude_code(lines, notes, thread)
            thread = None
        else:
            fmt, parsed = by_shape(value, notes)
    if thread is not None:
        notes.warn(N_("thread {thread} was asked for, but only Claude Code logs have threads; it is ignored"),
                   thread=repr(thread))
    return finish(parsed, fmt, notes, name, threads, chosen)


def read_claude_code(records: list, notes: Notes, thread: str | None,
                     place=None) -> tuple[Parsed, list[Thread], str]:
    """A Claude Code log's records (see claude_code.read), its threads listed."""
    try:
        parsed, listing, chosen = claude_code.read(records, notes, thread, **({"place": place} if place else {}))
    except claude_code.UnknownThread as exc:
        raise ImportFailed(exc.note) from None
    return parsed, [Thread(*t) for t in listing], chosen


def by_shape(value: object, notes: Notes) -> tuple[str, Parsed]:
    """A JSON value (not a Loopscope transcript, not a Claude Code log) by its shape."""
    stranger = others.named(value)
    if stranger is not None:  # another agent's own format, which no reader below would read rightly
        raise ImportFailed(stranger)
    if course.looks_like(value):
        return "course-trace", course.read(value, notes)
    if _wrapped_request(value):  # {provider, request, baseURL}: a recorder's envelope around the body sent
        fmt, parsed = by_shape(value["request"], notes)
        answered = _answer(value.get("response"), fmt, parsed, notes)
        around = {k: v for k, v in value.items() if k != "request" and not (k == "response" and answered)}
        if around:
            parsed.meta["recorded_with"] = around
            notes.warn(N_("a recorded request: the body under request is imported; the fields around it ({fields}) "
                          "are kept in the transcript (`recorded_with`)"), fields=", ".join(around))
        return fmt, parsed
    if others.is_mini_swe(value):  # its messages, and its run's facts (info) beside them: no request body
        parsed = openai_chat.read_messages(value["messages"], notes)
        parsed.meta["mini_swe_agent"] = {k: v for k, v in value.items() if k != "messages"}
        others.say_text_calls(value, parsed, notes)
        return "openai-chat", parsed
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        tools = value.get("tools") if isinstance(value.get("tools"), list) else []
        if openai_chat.looks_like(value["messages"]) or any(isinstance(t, dict) and "function" in t for t in tools):
            fmt, parsed = "openai-chat", openai_chat.read_request(value, notes)
        else:
            fmt, parsed = "anthropic-request", anthropic_api.read_request(value, notes)
        others.say_text_calls(value, parsed, notes)
        return fmt, parsed
    if anthropic_api.is_response(value):
        return "anthropic-responses", anthropic_api.read_responses([value], notes)
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        if all(anthropic_api.is_response(v) for v in value):
            return "anthropic-responses", anthropic_api.read_responses(value, notes)
        if any(isinstance(v, dict) and "role" in v for v in value):
            if openai_chat.looks_like(value):
                fmt, parsed = "openai-chat", openai_chat.read_messages(value, notes)
            else:
                fmt, parsed = "anthropic-messages", anthropic_api.read_messages(value, notes)
            others.say_text_calls(value, parsed, notes)
            return fmt, parsed
    raise ImportFailed(N_("valid JSON but not a transcript of any known format: it is {what}. Loopscope reads "
                          "{formats}"), what=describe_json(value), formats=Note(KNOWN_FORMATS))


def _answer(response: object, fmt: str, parsed: Parsed, notes: Notes) -> bool:
    """The recorded answer to a recorded request: the call it records, a step of its own (a call_model whose
    response is the one recorded). None recorded: said, since the file then shows the request but not its call."""
    answered = None
    if isinstance(response, dict) and fmt == "openai-chat":
        answered = openai_chat.read_response(response, notes)
    elif anthropic_api.is_response(response):
        read = anthropic_api.read_responses([response], Notes())
        if read.messages:
            answered = read.messages[0], read.responses.get(0, {})
    if parsed.threads or not parsed.messages or parsed.messages[-1].get("role") != "user":
        return False
    if answered is None:
        notes.warn(N_("a recorded request with no response recorded beside it: the call it records is not a step"))
        return False
    message, recorded = answered
    parsed.responses[len(parsed.messages)] = {k: v for k, v in recorded.items() if v is not None}
    parsed.messages.append(message)
    parsed.origins.append("response")
    return True


def _wrapped_request(value: object) -> bool:
    return isinstance(value, dict) and "messages" not in value and isinstance(value.get("request"), dict) \
        and isinstance(value["request"].get("messages"), list)
