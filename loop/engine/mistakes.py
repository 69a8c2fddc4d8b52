"""The seven classic mistakes of the chapter's loop, each defined once.

Each is one line of the chapter's `agent_loop` written wrong. Its definition holds all Loopscope knows of it, and
everything that shows a mistake reads it here (no other module of `loop/` spells a mistake's name):

- its **name** (the Mistakes lab's: `/mistakes?mistake=NAME`, `python -m loop break --mistake NAME`) and title;
- **the rule** it breaks, in a sentence, and **the API's words** for it in each dialect (the Messages API's and
  OpenAI Chat Completions', constants of rules.py, which checks the rules), None where that API accepts it;
- **how the wire shows it**: what request k+1 holds against response k (`recognize`, which Your loop names a
  learner's mistake with), said in a sentence (`shows`), and which message of request k+1 it is about (`about`: the
  one whose making line Your loop points at);
- **how it is made**: the steps of the chapter's loop it changes (`made_at`), where the Mistakes lab and Break it
  here make it (both through layer_mistake.py), the lines as the broken loop has them beside the chapter's, and
  why it cannot happen when no such step is ahead;
- **the fix**, in one sentence.

The lab's page, Break it here, Your loop and the questions of Predict, then step all read it. Words are English
messages (`N_`), said in the reader's language where they are shown. No SDK here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..text.catalogs import N_
from . import rules
from .rules import blocks, tool_results, tool_uses

ANTHROPIC = "anthropic"  # the Messages API
OPENAI = "openai"  # OpenAI Chat Completions
DIALECTS = (ANTHROPIC, OPENAI)

NO_LOOP = "no-loop"
NO_ASSISTANT_APPEND = "no-assistant-append"
NO_WRITE_BACK = "no-write-back"
WRONG_ID = "wrong-id"
TEXT_FIRST = "text-first"
MAX_TOKENS_GO_ON = "max-tokens-go-on"
RESULTS_AS_ASSISTANT = "results-as-assistant"

# Why a mistake cannot happen from a step: no step it changes is ahead.
NO_TOOL_USE_AHEAD = N_("no answer after this step asks for a tool_use")
NO_WRITE_BACK_AHEAD = N_("no tool_result is written back after this step")
NO_MAX_TOKENS_AHEAD = N_("no answer after this step is cut at max_tokens")


@dataclass(frozen=True)
class Mistake:
    """One classic mistake: what it is, the rule and the API's words, how the wire shows it, how it is made, the fix."""

    name: str
    title: str
    rule: str  # what the API's error means, in one sentence ("" when no rule is broken)
    words: dict  # {dialect: the API's words (a rules.py constant, its placeholders unfilled), or None: accepted}
    shows: str  # how the requests show it, for a learner's call {call} (after call {before})
    changes: tuple  # ((stage, the stop_reason it needs, or None for any), ...): the steps it makes wrong
    wrong: str  # the lines as the broken loop has them
    right: str  # the chapter's lines
    cannot: str  # why it cannot happen from a step: no step it changes lies ahead
    fix: str  # one sentence
    scenario: str  # the built-in scenario the Mistakes lab shows it on

    def made_at(self, step) -> bool:
        """Whether the mistake changes what `step` (a recorded Step) did: it makes that stage wrong."""
        return any(step.stage == stage and (stop is None or step.stop_reason == stop) for stage, stop in self.changes)

    @property
    def breaks_a_rule(self) -> bool:
        """The Messages API refuses the request it makes (no loop at all breaks none: nothing is sent)."""
        return self.words[ANTHROPIC] is not None

    def said(self, dialect: str) -> str | None:
        """The API's words for it in `dialect`, its ids left out ("…"), or None where that API accepts it."""
        words = self.words.get(dialect)
        return words.format(ids="…", id="…", n="…") if words is not None else None


CHAPTER_LOOP_LINES = ('while True:\n    response = client.messages.create(...)\n'
                      '    messages.append({"role": "assistant", "content": response.content})\n'
                      '    if response.stop_reason != "tool_use":\n        return\n'
                      '    messages.append({"role": "user", "content": run_tools(response)})')
USER_WRITE_BACK = 'messages.append({"role": "user", "content": results})'

MISTAKES: dict[str, Mistake] = {m.name: m for m in [
    Mistake(
        NO_LOOP, N_("No loop: one call, and the tool_use is never run"),
        "", {ANTHROPIC: None, OPENAI: None},
        N_("call {call}: its answer asked for a tool_use, and the loop returned without running it"),
        (("decide", "tool_use"),),
        'response = client.messages.create(...)\nprint(response.content)  # a tool_use: nothing runs it',
        CHAPTER_LOOP_LINES, NO_TOOL_USE_AHEAD,
        N_("Loop: run each tool_use, write its tool_result back into messages, and call the model again until "
           "stop_reason is not tool_use."),
        "list-files",
    ),
    Mistake(
        NO_ASSISTANT_APPEND, N_("Not appending the assistant response to messages"),
        N_("A tool_result may only answer a tool_use of the message just before it, and that message was never kept."),
        {ANTHROPIC: rules.UNEXPECTED_ID, OPENAI: rules.CHAT_NOT_A_RESPONSE},
        N_("call {call}: the request does not hold the assistant response of call {before}"),
        (("append_assistant", "tool_use"),),
        '# (nothing: "I only need the final answer")',
        'messages.append({"role": "assistant", "content": response.content})', NO_TOOL_USE_AHEAD,
        N_("Append the assistant's response itself before running tools: the next call must see the tool_use it answers."),
        "list-files",
    ),
    Mistake(
        NO_WRITE_BACK, N_("Not writing the tool_result back (a terminal log)"),
        N_("Every tool_use must be answered by a tool_result with its id in the very next message; none came."),
        {ANTHROPIC: rules.UNANSWERED, OPENAI: rules.CHAT_UNANSWERED},
        N_("call {call}: the tool_use of call {before} is not answered by tool_results in the next message"),
        (("write_back", None),),
        'print(output)  # the result goes to the terminal only', USER_WRITE_BACK, NO_WRITE_BACK_AHEAD,
        N_("Write the results into messages as a user message; printing them tells the model nothing."),
        "list-files",
    ),
    Mistake(
        WRONG_ID, N_("Writing the result back with the wrong tool_use_id"),
        N_("A tool_result answers the tool_use whose id it carries: with another id, the tool_use stays unanswered."),
        {ANTHROPIC: rules.UNANSWERED, OPENAI: rules.CHAT_UNKNOWN_ID},
        N_("call {call}: the tool_results written back do not carry the ids of call {before}'s tool_use"),
        (("run_tool", None), ("write_back", None)),  # the tool_result is made with it; a write-back carries it
        '{"type": "tool_result", "tool_use_id": "toolu_" + str(n), "content": output}',
        '{"type": "tool_result", "tool_use_id": block.id, "content": output}', NO_WRITE_BACK_AHEAD,
        N_("Answer each tool_use with its own id: tool_use_id=block.id."),
        "list-files",
    ),
    Mistake(
        TEXT_FIRST, N_("Putting text before the tool_result blocks"),
        N_("The message after a tool_use must begin with its tool_result blocks; text may only come after them."),
        {ANTHROPIC: rules.NOT_FIRST, OPENAI: rules.CHAT_UNANSWERED},
        N_("call {call}: the message written back begins with text, not with the tool_results"),
        (("write_back", None),),
        'messages.append({"role": "user", "content": [{"type": "text", "text": "Here are the results:"}] + results})',
        USER_WRITE_BACK, NO_WRITE_BACK_AHEAD,
        N_("Put the tool_result blocks first in the user message; any text goes after them."),
        "list-files",
    ),
    Mistake(
        MAX_TOKENS_GO_ON, N_("Treating max_tokens as \"go on\" like tool_use"),
        N_("A request may not hold an empty message: a cut answer gave no tool_use, so nothing came to write back."),
        # Chat Completions writes each result back as a message of its own: none, and the cut answer is sent again
        {ANTHROPIC: rules.EMPTY_CONTENT, OPENAI: None},
        N_("call {call}: the answer of call {before} was cut at max_tokens, and the loop went on as if it were "
           "tool_use"),
        (("decide", "max_tokens"),),
        'if response.stop_reason not in ("tool_use", "max_tokens"):\n    return',
        'if response.stop_reason != "tool_use":\n    return', NO_MAX_TOKENS_AHEAD,
        N_("Only stop_reason == \"tool_use\" continues the loop; max_tokens ends it (the answer was cut)."),
        "max-tokens",
    ),
    Mistake(
        RESULTS_AS_ASSISTANT, N_("Appending the results as an assistant message"),
        N_("tool_results must come in the user message right after the tool_use; an assistant message cannot carry them."),
        {ANTHROPIC: rules.UNANSWERED, OPENAI: rules.CHAT_UNANSWERED},
        N_("call {call}: the tool_results were written back as an assistant message"),
        (("write_back", None),),
        'messages.append({"role": "assistant", "content": results})', USER_WRITE_BACK, NO_WRITE_BACK_AHEAD,
        N_("tool_results come from the user side: role \"user\", never \"assistant\"."),
        "list-files",
    ),
]}
NAMES = tuple(MISTAKES)

COMMENTS = (  # the comments in the lines above, shown in the page's language
    N_('(nothing: "I only need the final answer")'), N_("the result goes to the terminal only"),
    N_("a tool_use: nothing runs it"),
)

# What the broken loops write, where the lines above show it
WRONG_ID_PREFIX = "toolu_"  # wrong-id: the n-th tool_result carries "toolu_" + str(n)
TEXT_BEFORE = "Here are the results:"  # text-first: the text before the results


def wrong_id(n: int) -> str:
    """The id the broken loop gives its n-th tool_result (counted from 0): its counter, not the tool_use's id."""
    return f"{WRONG_ID_PREFIX}{n}"


# -- how the wire shows it: a learner's request k+1 read against request k's response --

def recognize(response: dict, sent: list) -> str | None:
    """The mistake a loop made with `response` (response k) before it sent `sent` (request k+1's messages), or
    None when none of the seven shows there.

    Read from the requests, never from the API's words: the 400 for a missing append and the one for a wrong id
    read alike in places, but what request k+1 holds against response k tells them apart.
    """
    if response.get("stop_reason") == "max_tokens" and not tool_uses(response):
        return MAX_TOKENS_GO_ON  # only tool_use goes on; a cut answer ends the loop
    asked = [b.get("id") for b in tool_uses(response)]
    kept = find_response(sent, response)
    if kept is None:
        return NO_ASSISTANT_APPEND
    if any(set(asked) & {b.get("tool_use_id") for b in tool_results(m)} for m in sent[:kept] if isinstance(m, dict)):
        return NO_ASSISTANT_APPEND  # kept, but after its own tool_results: not appended before the tools ran
    after = sent[kept + 1] if kept + 1 < len(sent) and isinstance(sent[kept + 1], dict) else None
    if after is None:
        return NO_WRITE_BACK
    if after.get("role") == "assistant":
        return RESULTS_AS_ASSISTANT if tool_results(after) else NO_WRITE_BACK
    answered = [b.get("tool_use_id") for b in tool_results(after)]
    if not answered:
        return NO_WRITE_BACK
    if not set(answered) <= set(asked):  # an id the response never asked for: the tool_use it should answer waits
        return WRONG_ID
    first = next(iter(blocks(after)), None)
    if not (isinstance(first, dict) and first.get("type") == "tool_result"):
        return TEXT_FIRST
    return None


@dataclass(frozen=True)
class About:
    """The message of request k+1 a mistake is about, as the wire shows it: its index in the request's messages
    (None: no message, the loop returned), the block in it, and the key of the dict a learner's code wrote wrong
    there (with its value), as the chapter's code spells it. `answered` is False when the message is response k
    itself, which nothing after it answers."""

    message: int | None
    block: int | None = None
    key: str | None = None
    value: str | None = None
    answered: bool = True


def about(name: str, response: dict, sent: list) -> About:
    """Which message of `sent` (request k+1's messages) mistake `name`, made with `response` (response k), is about:
    the one the learner's code made wrong, where the line that made it is to be looked for."""
    last = len(sent) - 1
    kept = find_response(sent, response)
    after = kept + 1 if kept is not None and kept + 1 < len(sent) else None
    if name == NO_LOOP:
        return About(None)
    if name == NO_ASSISTANT_APPEND:  # the tool_results that answer a tool_use no message before them holds
        asked = {b.get("id") for b in tool_uses(response)}
        answering = [i for i, m in enumerate(sent) if isinstance(m, dict) and
                     asked & {b.get("tool_use_id") for b in tool_results(m)}]
        return About(answering[0] if answering else last)
    if name in (NO_WRITE_BACK, MAX_TOKENS_GO_ON):  # the message after the answer; none: the answer, unanswered
        if after is not None:
            return About(after)
        return About(kept if kept is not None else last, answered=False)
    if after is None:
        return About(last)
    if name == RESULTS_AS_ASSISTANT:
        return About(after, key="role", value="assistant")
    if name == TEXT_FIRST:
        return About(after, block=0, key="type", value="text")
    if name == WRONG_ID:
        asked = {b.get("id") for b in tool_uses(response)}
        wrong = [j for j, b in enumerate(blocks(sent[after])) if isinstance(b, dict) and b.get("type") ==
                 "tool_result" and b.get("tool_use_id") not in asked]
        return About(after, block=wrong[0] if wrong else None, key="tool_use_id")
    return About(last)


def recognize_end(response: dict, ran_tools: bool) -> str | None:
    """The mistake of a loop that returned after `response` (its last), or None when it ended as it should: an
    answer that asked for a tool_use, with nothing run (no loop) or the results kept to itself (not written back)."""
    if response.get("stop_reason") == "tool_use" and tool_uses(response):
        return NO_WRITE_BACK if ran_tools else NO_LOOP
    return None


def find_response(sent: list, response: dict) -> int | None:
    """The index of the assistant message in `sent` that is `response` (the last one with its blocks), or None."""
    wanted = shape(response)
    for i in range(len(sent) - 1, -1, -1):
        message = sent[i]
        if isinstance(message, dict) and message.get("role") == "assistant" and shape(message) == wanted:
            return i
    return None


def shape(message: dict) -> list:
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
