"""Other agents' own files, named for what they are.

Some files look like a format Loopscope reads but are another agent's record, which that reader would read
wrongly: a Gemini CLI session holds a `messages` list (of Gemini's messages, not the API's), an Agent TARS event
stream is a list of objects with a `type`. `named` says what such a file is, for a refusal in its own words.

Agents that write their tool calls as text in the messages (mini-swe-agent's fenced bash commands, a
`<tool_call>` in the text) are read as the chat they are, and `say_text_calls` says so: such a history has no
tool_use block, so each answer looks like the end of the loop.
"""

from __future__ import annotations

import re

from ..text.catalogs import N_
from .common import Parsed
from .notes import Note, Notes

GEMINI = N_("a Gemini CLI session (sessionId, projectHash, messages of type user and gemini): Loopscope does not "
            "read Gemini CLI's own format; its tool calls are kept beside each message (toolCalls), not as "
            "tool_use and tool_result pairs of the Messages API")
AGENT_TARS = N_("an Agent TARS event stream (events of type {kinds}): Loopscope does not read Agent TARS's own "
                "format; it records what its UI showed, event by event, not the requests sent to the model")
TEXT_CALLS = N_("{agent}: its tool calls are written as text in the messages ({how}), not as tool_use blocks; read "
                "as a chat, so each answer of the model ends the loop here")
MINI_SWE = N_("mini-swe-agent trajectory")
SOME_AGENT = N_("an agent's history")
FENCED_WORDS = N_("```bash blocks")
TAGGED_WORDS = N_("`<tool_call>` tags")
TARS_EVENTS = {"user_message", "assistant_message", "tool_call", "tool_result", "agent_run_start", "agent_run_end",
               "environment_input", "final_answer", "system", "assistant_streaming_message", "plan_update"}
FENCED = re.compile(r"```(?:bash|sh|shell)\s*\n", re.I)
TAGGED = re.compile(r"<tool_call>|<function=|<invoke name=", re.I)


def named(value: object) -> Note | None:
    """What another agent's file is, when it is one Loopscope recognises and does not read; else None."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list) and "sessionId" in value \
            and ("projectHash" in value or any(isinstance(m, dict) and m.get("type") == "gemini"
                                               for m in value["messages"])):
        return Note(GEMINI)
    events = value.get("events") if isinstance(value, dict) else value
    if isinstance(events, list) and events:
        kinds = [e.get("type") for e in events if isinstance(e, dict)]
        tars = [k for k in kinds if isinstance(k, str) and k in TARS_EVENTS]
        if len(kinds) == len(events) and len(tars) == len(kinds) and {"user_message", "assistant_message"} \
                & set(tars) and all(isinstance(e.get("id"), str) and "timestamp" in e for e in events
                                   if isinstance(e, dict)):
            return Note(AGENT_TARS, kinds=", ".join(sorted(set(tars))[:6]))
    return None


def is_mini_swe(value: object) -> bool:
    """A mini-swe-agent trajectory: {info, messages, trajectory_format}."""
    fmt = value.get("trajectory_format") if isinstance(value, dict) else None
    info = value.get("info") if isinstance(value, dict) else None
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and (
        (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (isinstance(info, dict) and "mini_version" in info))


def say_text_calls(value: object, parsed: Parsed, notes: Notes) -> None:
    """A note when the history's tool calls are text in its assistant messages, naming the agent when known."""
    if any(b.get("type") == "tool_use" for m in parsed.messages if m.get("role") == "assistant"
           for b in (m["content"] if isinstance(m.get("content"), list) else []) if isinstance(b, dict)):
        return
    texts = [_text(m) for m in parsed.messages if m.get("role") == "assistant"]
    fenced = sum(bool(FENCED.search(t)) for t in texts)
    tagged = sum(bool(TAGGED.search(t)) for t in texts)
    if not (fenced or tagged):
        return
    how = Note(FENCED_WORDS if fenced >= tagged else TAGGED_WORDS)
    if is_mini_swe(value):
        agent = Note(MINI_SWE)
    else:
        agent = Note(SOME_AGENT)
    notes.warn(TEXT_CALLS, agent=agent, how=how)
    parsed.meta["tool_calls_as_text"] = {"agent": agent.render(), "how": how.render()}


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict)) if isinstance(content, list) \
        else ""
