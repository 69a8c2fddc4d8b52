"""Stage notes: what a stage did, why, and the chapter's words for it, in the learner's language.

The messages are English; their translations are in the catalogs under
locales/ (see catalogs.py). The Japanese follows the chapter's own terms
(messages, tool_use, tool_result, turn, write-back); the Chinese the course's
Chinese edition's.
"""

from __future__ import annotations

from ..text.catalogs import N_, say


NOTES: dict[str, str] = {
    "user_request": N_(
        "The user's request goes into `messages` as the first user message. "
        "From now on, `messages` is the working context the model reads on every call."),
    "call_model": N_(
        "The model is called with `system`, `messages`, `tools` and `max_tokens`. "
        "It only predicts: it can ask for a tool (`tool_use`), but cannot run one."),
    "append_assistant": N_(
        "The assistant's response itself is appended to `messages`. "
        "Skip this (\"I only need the final answer\") and the next turn loses its context: "
        "its tool_results would answer a tool_use the model can no longer see."),
    "decide": N_(
        "The loop reads `stop_reason`. Only `tool_use` means \"run the tools and go on\"; "
        "anything else (`end_turn`, `max_tokens`, `refusal`, …) ends the loop with "
        "`transition_reason = None`."),
    "run_tool": N_(
        "One `tool_use` block is really executed, and its output becomes a `tool_result` "
        "with the same id (`tool_use_id`). Here the model's intent meets the real world."),
    "write_back": N_(
        "All results go back as ONE user message of `tool_result` blocks, in tool_use order. "
        "`turn_count` grows by one and `transition_reason` becomes \"tool_result\": "
        "the tool result becomes the next inference input."),
    "stop": N_(
        "The run reached its max turns and was stopped before calling the model again. "
        "The chapter's loop has no such limit; a fuller system keeps a budget like this one."),
    # Beyond the chapter: compaction (s06) and sub-agents (s04)
    "summarize": N_(
        "Compaction, part 1: the history has grown past the threshold (or the model called `compact`), so the "
        "loop asks the model for a summary of it. This is a model call of its own, with no tools; `messages` "
        "is not changed yet."),
    "compact": N_(
        "Compaction rewrites `messages` before the next call: micro-compact replaces old `tool_result`s by "
        "placeholders, auto-compact replaces the whole history by the summary. Earlier messages change: the "
        "history is no longer append-only. The full history before it stays in the trace."),
    "subagent": N_(
        "You are inside a sub-agent's loop, started by the parent's `task` tool_use. It has its own `messages`, "
        "its own system prompt and its own `turn_count`; it shares the workspace, not the history."),
    # Beyond the chapter: the complete loop (profiles.py), the right column of the chapter's table
    "retry": N_(
        "The call failed on the way (no connection, a timeout, 429, 5xx or 529 overloaded). The chapter's loop "
        "stops here; a production harness has a retry branch: it waits 1 s × 2^attempt (at most 30 s) plus a "
        "little jitter, or what `retry-after` asks, and calls again, at most 3 times. `messages` is unchanged; "
        "`transition_reason` is \"retry\"."),
    "refused": N_(
        "The API refused the request: the prompt is longer than the context window (400 `prompt is too long`). "
        "No retry can help with the same `messages`: the loop compacts them first, then calls again "
        "(`transition_reason` \"compact_resume\"). It also learns the window, and from now on compacts before a "
        "call whose estimate passes that budget."),
    "refused_mistake": N_(  # a broken loop's call (Break it here), not a prompt too long
        "The API refused the request: the broken loop sent `messages` that break one of the API's rules, which it "
        "checks on every call (400 `invalid_request_error`). No retry can help: the same `messages` break the same "
        "rule. The chapter's loop never sends such a request."),
    "recover": N_(
        "The answer was cut at `max_tokens`. The chapter's loop ends here, and must: max_tokens is not tool_use. "
        "A production harness keeps the cut answer in `messages` and appends a user message asking the model to "
        "continue where it stopped, with no recap, at most 3 times in a row (`transition_reason` "
        "\"max_tokens_recovery\")."),
    "parallel": N_(
        "The tool_use blocks of this response are all safe to run together (reads only), so the complete loop "
        "started them at once; each run_tool step takes its own result, and the results are still written back "
        "in tool_use order."),
    "subagent_returns": N_(
        "The sub-agent's loop has ended. Only its final text comes back, as this `tool_result`; everything it "
        "did stays in its own `messages`, out of the parent's context."),
}

# The chapter's "most important sentence" (最も重要なのは次の 1 文です).
ONE_SENTENCE = N_("The tool result goes back into the message history and becomes the next inference input.")


def note(stage: str, lang: str = "en") -> str:
    """The note for `stage` in `lang` (English when the language has no catalog)."""
    text = NOTES.get(stage)
    return say(lang, text) if text else ""


# The chapter's "remember it in one sentence" (一文で覚える), a different sentence from the one above.
REMEMBER = N_("An agent loop is the main cycle that turns the model's requests into real observations, and keeps "
              "giving those observations back to the model.")


def remember(lang: str = "en") -> str:
    """The chapter's "remember it in one sentence", in `lang`."""
    return say(lang, REMEMBER)


def one_sentence(lang: str = "en") -> str:
    """The chapter's most important sentence, in `lang`."""
    return say(lang, ONE_SENTENCE)
