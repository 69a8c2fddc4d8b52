"""The recovery branch of the complete loop: an answer cut at max_tokens is continued, not lost.

The chapter's loop ends on `stop_reason == "max_tokens"`, and must: treating it
like `tool_use` sends an invalid next request. A production harness keeps the
cut response in `messages` (stage 3 appended it as it is), then appends a user
message asking the model to go on from where it stopped, and calls again (the
course's s11). At most the profile's recoveries in a row (3): an answer that never fits ends there.

A response cut inside a `tool_use` block asked for a tool whose input may be
incomplete: it is not run. Its `tool_result` says so (the API's pairing rules
still hold), before the continuation text.
"""

from __future__ import annotations

from .blocks import tool_result
from ..text.catalogs import N_
from .rules import tool_uses
from .state import LoopState
from ..tools import ToolOutput

CONTINUE = "Output limit hit. Continue directly from where you stopped -- no recap, no repetition."
NOT_RUN = ToolOutput("Error: not run. The response was cut at max_tokens, so this tool_use may be incomplete.",
                     is_error=True)
WHY_RECOVER = N_("stop_reason is max_tokens: keep the cut answer and ask the model to continue ({k} of {limit} in a row)")
WHY_EXHAUSTED = N_("the answer was cut at max_tokens {limit} times in a row: no recovery is left, the loop ends")


def catch(state: LoopState, limit: int) -> bool:
    """After stage 4's decide: go on instead of ending, when the answer was cut and fewer than `limit` recoveries
    were made in a row. The chapter's decide has said "end"; this is the complete loop's first-match branch."""
    if state.ended != "max_tokens" or state.recoveries_in_a_row >= limit:
        return False
    state.ended = None
    return True


def continue_after_cut(state: LoopState) -> None:
    """Stage `recover`: the continuation message, written back as a user message; then call again."""
    cut = tool_uses(state.response or {})
    if cut:  # tool_results first, as the API requires; nothing was run
        content: object = [tool_result(b.get("id"), NOT_RUN) for b in cut] + [{"type": "text", "text": CONTINUE}]
    else:
        content = CONTINUE
    state.messages.append({"role": "user", "content": content})
    state.turn_count += 1
    state.transition_reason = "max_tokens_recovery"


def is_continuation(message: object) -> bool:
    """Is this the user message a recovery wrote? (the scripted model reads the history with it)"""
    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return content == CONTINUE
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "text" and b.get("text") == CONTINUE for b in content)
