"""Predict, then step: the question asked before a step that reveals something the chapter teaches.

A question is made from the trace, so it works on every scenario, on a replayed
or imported session, inside a sub-agent and at a compaction. Its right answer
is READ from the trace (the decide step's verdict, the tool_result's id, the
message the write-back appended, the next turn_count, the request sent, the
sub-agent's answer, the compacted history), never worked out again from the
loop's rules here: whatever the loop did is what the learner should predict.
The wrong choices are the chapter's mistakes (the seven classic ones, each
defined once in loop/engine/mistakes.py), each a way the learner may picture
the loop wrongly.

One step has at most one question. No Streamlit here, and no SDK: the quiz
command loads neither.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..engine import mistakes
from ..engine.trace import Trace
from ..text.catalogs import N_, say
from .narrate import short, why_in
from .notes import note, one_sentence

KINDS = ("continues", "tool_result_id", "write_back_role", "turn_count_after", "next_request_has",
         "subagent_returns", "compaction_keeps")

DONT_KNOW = N_("I don't know")  # every question's last choice; it counts as not answered
MAX_CHOICES = 3  # the choices but "I don't know": with it, keys 1 to 4 answer

# continues (before `decide`)
ASK_CONTINUES = N_("The response's stop_reason is `{stop_reason}`. Does the loop go on?")
GOES_ON_TOOLS = N_("It goes on: `tool_use` means run the tools, then call the model again")
ENDS = N_("It ends: any stop_reason but `tool_use` ends the loop")
GOES_ON_CUT = N_("It goes on: the loop asks the model to continue its cut answer (`max_tokens`)")  # MAX_TOKENS_GO_ON

# tool_result_id (before `run_tool`)
ASK_ID = N_("The loop runs tool_use {k} of {n} of the response now (`{name}`). Which `tool_use_id` will its "
            "tool_result carry?")
ASK_ID_ALONE = N_("The loop runs the tool_use `{name}` now. Which `tool_use_id` will its tool_result carry?")

# write_back_role (before `write_back`)
ASK_WHERE = N_("The tool_results are written back now. Where do they go?")
A_MESSAGE = N_("a message with role `{role}`: messages[{index}]")
TERMINAL = N_("the result goes to the terminal only")  # mistakes.NO_WRITE_BACK, in its own words

# turn_count_after (before the step that changes it)
ASK_TURN_COUNT = N_("`turn_count` is {n} before this step. What is it after it?")

# next_request_has (before a call_model after a write-back)
ASK_REQUEST = N_("This call sends `messages` to the model again. What is at its end?")
BOTH = N_("the assistant response with its tool_use, then the tool_results in a user message")
RESULTS_ONLY = N_("only the tool_results: the assistant response is not sent again")  # NO_ASSISTANT_APPEND
RESPONSE_ONLY = N_("only the assistant response: the tool_results were printed, not written back")  # NO_WRITE_BACK

# subagent_returns (before the parent's run_tool that takes the sub-agent's answer)
ASK_SUBAGENT = N_("The sub-agent's loop has ended. What comes back to the parent in the tool_result of `{name}`?")
FINAL_TEXT = N_("only its final text: “{words}”")
WHOLE_HISTORY = N_("the whole sub-agent history: all {n} messages of its `messages`")
LAST_OUTPUT = N_("the output of its last tool: “{words}”")

# compaction_keeps (before the call after a compact step)
ASK_COMPACTED = N_("The history was just compacted. What does this call send as `messages`?")
SUMMARY = N_("the summary, in place of the {n} messages before it")
PLACEHOLDERS = N_("every message, the old tool_results replaced by placeholders")
AS_IT_WAS = N_("every message as it was: a history only grows")  # the append-only picture
SUMMARY_AFTER = N_("the whole history, then the summary after it")

TEXT_WIDTH = 60  # a quoted text in a choice

# Why a wrong choice is wrong, said when a learner chose it (where a choice is one of the seven mistakes, its
# definition's fix says it)
BROKEN_HERE = N_("Not in this loop: it is broken on purpose ({mistake}).")
NOT_TOOL_USE = N_("Only `tool_use` goes on to run tools: this answer asked for none.")
NOT_CUT = N_("The answer was not cut: `{stop_reason}` is not `max_tokens`.")
RECOVERS = N_("Not this loop: it is the complete one, which asks the model to continue a cut answer where the "
              "chapter's loop ends.")
ANOTHER_ID = N_("`{id}` is the id of another tool_use: a tool_result carries the id of the tool_use it answers.")
A_COUNTER = N_("`{id}` is a counter of the loop's own, not an id the model gave. {fix}")
MESSAGE_ID = N_("`{id}` is the response's id, the whole message's, not the tool_use block's: a tool_result answers a "
                "block.")
TURN_ENDS_HERE = N_("This step ends the turn: `turn_count` goes up here, not at the next call.")
TURN_NOT_RESULTS = N_("`turn_count` counts turns, not tool_results: one turn is one call and every tool it asked for.")
TURN_NOT_MESSAGES = N_("`turn_count` counts turns, not messages: `messages` holds {n} now.")
HISTORY_STAYS = N_("The sub-agent's history stays in its own loop: only its final text comes back, in one tool_result.")
NOT_LAST_OUTPUT = N_("The parent gets the sub-agent's final answer, not what its last tool printed.")
SENT_NOW = N_("This call sends {n} message(s), where there were {before} before the compaction.")


@dataclass(frozen=True)
class Question:
    """One question, asked before step `step` (counted from 0 as the transcript's `steps`) shows."""

    step: int
    kind: str  # one of KINDS
    question: str  # Markdown, in the question's language
    choices: tuple[str, ...]  # Markdown; the last is always "I don't know"
    answer: int  # the index of the right choice (never the last)
    why: str  # the stage's note, or a sentence from the trace, in the question's language
    thread: str  # the thread of the step (a sub-agent's id inside one)
    stage: str  # the stage of the step it comes before
    lang: str = "en"
    wrong: tuple[str, ...] = ()  # beside each choice, why it is wrong ("" for the right one and "I don't know")

    def why_wrong(self, chosen: int) -> str:
        """Why choice `chosen` is wrong, in the question's language ("" when it is not, or not known)."""
        return self.wrong[chosen] if 0 <= chosen < len(self.wrong) else ""

    def to_json(self) -> dict:
        """The question as `python -m loop quiz` prints it."""
        return {"step": self.step, "kind": self.kind, "question": self.question, "choices": list(self.choices),
                "answer": self.answer, "why": self.why, "wrong": list(self.wrong)}


def questions(trace: Trace, lang: str = "en") -> list[Question]:
    """Every question of `trace`, in the order of its steps, in `lang`."""
    return [q for i in range(len(trace)) if (q := question_before(trace, i, lang)) is not None]


def question_before(trace: Trace, i: int, lang: str = "en") -> Question | None:
    """The question asked before step `i` shows, or None where the step reveals nothing to predict."""
    if not 0 <= i < len(trace):
        return None
    step = trace.steps[i]
    kind = _kind(trace, i)
    made = _MAKERS[kind](trace, i, lang) if kind else None
    if made is None:  # the trace lacks what the question needs (an imported log may)
        return None
    question, right, wrong, why = made
    texts = [w for w, _ in wrong]
    wrong = [(w, said) for n, (w, said) in enumerate(wrong) if w != right and w not in texts[:n]][:MAX_CHOICES - 1]
    choices = [(right, ""), *wrong]
    random.Random(i).shuffle(choices)  # the right one is not always first, and stays where it is on every run
    shown = [c for c, _ in choices]
    return Question(i, kind, question, (*shown, say(lang, DONT_KNOW)), shown.index(right), why,
                    step.thread, step.stage, lang, (*(said for _, said in choices), ""))


def _kind(trace: Trace, i: int) -> str | None:
    """Which question step `i` gets: the one that asks what this step shows."""
    step = trace.steps[i]
    if step.stage == "decide":
        return "continues"
    if step.stage == "run_tool":
        return "subagent_returns" if step.detail.thread else "tool_result_id"
    if step.stage == "write_back":  # two lessons at one stage: asked turn and turn about, where the results go first
        return "write_back_role" if step.turn % 2 else "turn_count_after"
    if step.stage == "recover":  # the complete loop's request to continue ends a turn too
        return "turn_count_after"
    if step.stage in ("call_model", "refused"):  # a broken loop's call the API refuses sends what it wrote too
        before = trace.previous_in_thread(i)
        stage = trace.steps[before].stage if before is not None else None
        return {"compact": "compaction_keeps", "write_back": "next_request_has"}.get(stage)
    return None


# -- each kind: (question, the right choice, the wrong ones with why each is wrong, why), or None --

def _fix(name: str, lang: str) -> str:
    """The fix of one of the seven mistakes, in `lang`: why a choice that pictures the loop that way is wrong."""
    return say(lang, mistakes.MISTAKES[name].fix)


def _broken(trace: Trace, lang: str) -> str | None:
    """Why a choice a correct loop would make is wrong in a loop broken on purpose (Break it here), or None."""
    fork = trace.meta.get("forked_from") or {}
    broken = mistakes.MISTAKES.get(fork.get("mistake")) if fork.get("edit") == "mistake" else None
    return say(lang, BROKEN_HERE, mistake=say(lang, broken.title)) if broken is not None else None


def _continues(trace: Trace, i: int, lang: str):
    step = trace.steps[i]
    stop = step.stop_reason
    if not isinstance(stop, str) or not isinstance(step.detail.continues, bool):
        return None
    if not step.detail.continues:
        right = ENDS
    else:
        right = GOES_ON_CUT if step.detail.recover else GOES_ON_TOOLS
    said = why_in(step, lang)
    why = f"{said}\n\n{note('decide', lang)}" if said else note("decide", lang)
    broken = _broken(trace, lang) if step.detail.mistake else None
    wrong = {
        GOES_ON_TOOLS: broken or say(lang, NOT_TOOL_USE),
        ENDS: broken or (say(lang, RECOVERS) if stop == "max_tokens" else _fix(mistakes.NO_LOOP, lang)),
        GOES_ON_CUT: (_fix(mistakes.MAX_TOKENS_GO_ON, lang) if stop == "max_tokens"
                      else say(lang, NOT_CUT, stop_reason=stop)),
    }
    return (say(lang, ASK_CONTINUES, stop_reason=stop), say(lang, right),
            [(say(lang, c), wrong[c]) for c in (GOES_ON_TOOLS, ENDS, GOES_ON_CUT)], why)


def _tool_result_id(trace: Trace, i: int, lang: str):
    d = trace.steps[i].detail
    result = d.tool_result
    answer_id = result.get("tool_use_id") if isinstance(result, dict) else None
    if not isinstance(answer_id, str):
        return None
    asked = d.tool_use_id
    call = _last_call(trace, i)
    response = (trace.steps[call].detail.response or {}) if call is not None else {}
    ids = [b.get("id") for b in _blocks(response) if b.get("type") == "tool_use"]
    name = d.name if isinstance(d.name, str) else "?"
    if asked in ids:
        k = ids.index(asked)
        question = say(lang, ASK_ID, k=k + 1, n=len(ids), name=name)
    else:
        k = 0
        question = say(lang, ASK_ID_ALONE, name=name)
    # The wrong ids: another tool_use's (of this response, or an earlier one answered before), the loop's own
    # counter (mistakes.WRONG_ID: "toolu_" + str(n)), the id of the message rather than the block.
    others = [x for x in ids if isinstance(x, str) and x != answer_id] or _earlier_ids(trace, call, answer_id)
    broken = _broken(trace, lang) if d.mistake else None
    wrong = [(x, broken if x == asked and broken else say(lang, ANOTHER_ID, id=x)) for x in others[:1]]
    counter = mistakes.wrong_id(k)
    wrong.append((counter, say(lang, A_COUNTER, id=counter, fix=_fix(mistakes.WRONG_ID, lang))))
    message_id = response.get("id")
    if isinstance(message_id, str):
        wrong.append((message_id, say(lang, MESSAGE_ID, id=message_id)))
    return question, f"`{answer_id}`", [(f"`{x}`", said) for x, said in wrong], note("run_tool", lang)


def _write_back_role(trace: Trace, i: int, lang: str):
    _, count = trace.new_blocks_at(i)
    index = trace.steps[i].n_messages - 1
    written = trace.window_at(i, index, index + 1)  # only the message it appended, not the whole history
    if count < 1 or not written or not isinstance(written[-1], dict):
        return None
    role = written[-1].get("role")
    if role not in ("user", "assistant"):
        return None
    other = "assistant" if role == "user" else "user"  # mistakes.RESULTS_AS_ASSISTANT
    as_other = _fix(mistakes.RESULTS_AS_ASSISTANT, lang) if other == "assistant" else _broken(trace, lang) or ""
    return (say(lang, ASK_WHERE), say(lang, A_MESSAGE, role=role, index=index),
            [(say(lang, A_MESSAGE, role=other, index=index), as_other),
             (say(lang, TERMINAL), _fix(mistakes.NO_WRITE_BACK, lang))], note("write_back", lang))


def _turn_count_after(trace: Trace, i: int, lang: str):
    step = trace.steps[i]
    before = trace.previous_in_thread(i)
    if before is None:
        return None
    was, now = trace.steps[before].turn_count, step.turn_count
    results = sum(1 for b in _blocks(_last(trace.window_at(i, step.n_messages - 1, step.n_messages)))
                  if b.get("type") == "tool_result")
    # The wrong counts: unchanged (a turn pictured as ending at the next call), one a tool_result (a turn pictured
    # as one tool run), one a message (turns and messages taken for one another).
    wrong = [(was, say(lang, TURN_ENDS_HERE)), (was + results, say(lang, TURN_NOT_RESULTS)),
             (step.n_messages, say(lang, TURN_NOT_MESSAGES, n=step.n_messages))]
    return (say(lang, ASK_TURN_COUNT, n=was), f"`turn_count` = {now}",
            [(f"`turn_count` = {n}", said) for n, said in wrong], note(step.stage, lang))


def _next_request_has(trace: Trace, i: int, lang: str):
    n = trace.steps[i].n_messages
    messages = trace.window_at(i, n - 2, n)  # the end of what this call sends (request_at(i)'s messages)
    last = _last(messages)
    previous = messages[-2] if len(messages) > 1 and isinstance(messages[-2], dict) else {}
    results = last.get("role") == "user" and any(b.get("type") == "tool_result" for b in _blocks(last))
    asked = previous.get("role") == "assistant" and any(b.get("type") == "tool_use" for b in _blocks(previous))
    if results:
        right = BOTH if asked else RESULTS_ONLY
    elif last.get("role") == "assistant" and any(b.get("type") == "tool_use" for b in _blocks(last)):
        right = RESPONSE_ONLY
    else:
        return None
    wrong = {BOTH: _broken(trace, lang) or "", RESULTS_ONLY: _fix(mistakes.NO_ASSISTANT_APPEND, lang),
             RESPONSE_ONLY: _fix(mistakes.NO_WRITE_BACK, lang)}
    return (say(lang, ASK_REQUEST), say(lang, right), [(say(lang, c), wrong[c]) for c in (BOTH, RESULTS_ONLY, RESPONSE_ONLY)],
            f"{one_sentence(lang)}\n\n{note('append_assistant', lang)}")


def _subagent_returns(trace: Trace, i: int, lang: str):
    d = trace.steps[i].detail
    result = d.tool_result
    thread = d.thread
    if not isinstance(result, dict) or thread not in trace.threads:
        return None
    answer = _text(result.get("content"))
    own = trace.steps_of(thread)
    kept = trace.steps[own[-1]].n_messages if own else len(trace.threads[thread].messages)
    wrong = [(say(lang, WHOLE_HISTORY, n=kept), say(lang, HISTORY_STAYS))]
    outputs = [trace.steps[k].detail.output for k in own if trace.steps[k].stage == "run_tool"]
    outputs = [o for o in outputs if isinstance(o, str) and o.strip()]
    if outputs and outputs[-1].strip() != answer.strip():
        wrong.append((say(lang, LAST_OUTPUT, words=short(outputs[-1], TEXT_WIDTH)), say(lang, NOT_LAST_OUTPUT)))
    name = d.name if isinstance(d.name, str) else "task"
    return (say(lang, ASK_SUBAGENT, name=name), say(lang, FINAL_TEXT, words=short(answer, TEXT_WIDTH)), wrong,
            note("subagent_returns", lang))


def _compaction_keeps(trace: Trace, i: int, lang: str):
    compact = trace.previous_in_thread(i)
    before = trace.history_before(compact)
    sent = (trace.request_at(i) or {}).get("messages") or []
    if len(sent) < len(before):
        right = say(lang, SUMMARY, n=len(before))
    elif len(sent) == len(before):
        right = say(lang, PLACEHOLDERS if sent != before else AS_IT_WAS)
    elif len(sent) == len(before) + 1:
        right = say(lang, SUMMARY_AFTER)
    else:
        return None
    kind = trace.steps[compact].detail.kind  # a compact step's
    rewrite = say(lang, PLACEHOLDERS) if kind == "micro" else say(lang, SUMMARY, n=len(before))
    sent_now = say(lang, SENT_NOW, n=len(sent), before=len(before))
    return (say(lang, ASK_COMPACTED), right, [(c, sent_now) for c in (rewrite, say(lang, AS_IT_WAS),
                                                                      say(lang, SUMMARY_AFTER))],
            note("compact", lang))


_MAKERS = {"continues": _continues, "tool_result_id": _tool_result_id, "write_back_role": _write_back_role,
           "turn_count_after": _turn_count_after, "next_request_has": _next_request_has,
           "subagent_returns": _subagent_returns, "compaction_keeps": _compaction_keeps}


# -- reading messages, whatever shape an imported log left them in --

def _blocks(message: object) -> list[dict]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _last(messages: list) -> dict:
    return messages[-1] if messages and isinstance(messages[-1], dict) else {}


def _earlier_ids(trace: Trace, call: int | None, not_this: str) -> list[str]:
    """The id a tool_result of the thread carried before `call` (an earlier turn's), if any."""
    k = trace.previous_in_thread(call) if call is not None else None
    while k is not None:
        step = trace.steps[k]
        if step.stage == "run_tool" and isinstance(step.detail.tool_result, dict):
            found = step.detail.tool_result.get("tool_use_id")
            if isinstance(found, str) and found != not_this:
                return [found]
        k = trace.previous_in_thread(k)
    return []


def _last_call(trace: Trace, i: int) -> int | None:
    k = trace.previous_in_thread(i)
    while k is not None and trace.steps[k].stage != "call_model":
        k = trace.previous_in_thread(k)
    return k


def _text(content: object) -> str:
    """A tool_result's content as text: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""
