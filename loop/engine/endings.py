"""Why the loop goes on or ends, in the chapter's words: what a `decide` step says.

A module of its own, with no SDK behind it, so the importers (which say the
same words for a recorded history) load without the engine's model client.
"""

from __future__ import annotations

from ..text.catalogs import N_, say

END_WORDS = {
    "end_turn": N_("the model finished its answer (end_turn)"),
    "max_tokens": N_("the answer was cut at max_tokens; the loop ends, it does not go on"),
    "stop_sequence": N_("the model hit a stop sequence"),
    "refusal": N_("the model refused"),
    "pause_turn": N_("the server paused a long turn; the s01 loop ends here"),
    "model_context_window_exceeded": N_("the context window is full"),
    "retries_exhausted": N_("the model call failed on every attempt; the loop ends"),
    "prompt_too_long": N_("the prompt is too long even after a compaction; the loop ends"),
}
OTHER_END = N_("stop_reason {stop_reason} is not tool_use, so the loop ends")
GO_ON = N_("stop_reason is tool_use: run the tools")
MAX_TURNS = N_("max turns ({n}) reached: the loop was stopped before calling the model again")


def why_ended(stop_reason: str | None, lang: str = "en") -> str:
    """Why the loop ended, in `lang` (the trace keeps the English)."""
    words = END_WORDS.get(stop_reason or "")
    return say(lang, words) if words else say(lang, OTHER_END, stop_reason=repr(stop_reason))
