"""A mistake: the chapter's loop broken on purpose, in one of the seven classic ways, from a step on.

Not a row of the chapter's table but its lesson turned round: each mistake is one line of `agent_loop` written
wrong, defined once in mistakes.py (the lines, the rule, the fix). This layer makes it, for Break it here
(broken.py, from a step of a run on) and for the Mistakes lab (the scenario's loop from its first step); it changes
what the chapter's stages do, nothing else:

| mistake | the stage it changes |
| --- | --- |
| NO_LOOP | decide: whatever stop_reason says, the loop ends; a tool_use is never run |
| NO_ASSISTANT_APPEND | append_assistant: the response is not kept in messages |
| NO_WRITE_BACK | write_back: the results are "printed", messages do not change |
| WRONG_ID | run_tool: the tool_result carries `toolu_<n>`, not the tool_use's id (write_back: so do those made before) |
| TEXT_FIRST | write_back: a text block comes before the tool_result blocks |
| MAX_TOKENS_GO_ON | decide: max_tokens goes on as tool_use does |
| RESULTS_AS_ASSISTANT | write_back: the results go in as an assistant message |

The API checks its rules on the next call (rules.py, in one place): the call
it refuses with a 400 becomes a `refused` step, as the complete loop records
a prompt refused as too long, and every loop of the run ends there.
"""

from __future__ import annotations

from dataclasses import replace

from . import layers
from ..text.catalogs import N_
from .details import AppendAssistantDetail, DecideDetail, Detail, RefusedDetail, WriteBackDetail
from .endings import why_ended
from .layers import Layer
from .mistakes import (MAX_TOKENS_GO_ON, MISTAKES, NAMES, NO_ASSISTANT_APPEND, NO_LOOP, NO_WRITE_BACK,
                       RESULTS_AS_ASSISTANT, TEXT_BEFORE, TEXT_FIRST, WRONG_ID, wrong_id)
from .rules import tool_uses

REFUSED = "invalid_request"  # why a loop ended when the API refused the broken request
NOT_RUN = "tool_use"  # why a loop without a loop ended: the tool_use was asked for, and nothing runs it

WHY_REFUSED = N_("the API refused the request ({status} {type}): the broken loop ends here")
WHY_NO_LOOP = N_("no loop: the answer asked for a tool_use, and nothing runs it; the loop ends")
WHY_GO_ON = N_("max_tokens taken for \"go on\": the loop goes on to write back, with no tool_use to answer")


def changes(mistake: str, step) -> bool:
    """Whether `mistake` changes what `step` (a recorded Step) did: its stage is one the mistake makes wrong."""
    return MISTAKES[mistake].made_at(step)


class Mistake(Layer):
    """The chapter's loop with `mistake` (one of NAMES) from the step the run was forked at on."""

    wraps = ("call_model", "append_assistant", "decide", "run_tool", "write_back")

    def __init__(self, mistake: str):
        if mistake not in NAMES:
            raise KeyError(mistake)
        self.mistake = mistake
        self.name = "mistake"

    def continues(self, run, frame, nxt):
        s = frame.state
        if self.mistake == MAX_TOKENS_GO_ON and nxt is not None and s.stage == "decide" \
                and s.stop_reason == "max_tokens" and layers.last(run, frame).detail.mistake:
            return "write_back"  # ahead of a layer that would recover: the mistake took it as tool_use
        return None

    def around(self, run, doing, call) -> Detail:
        stage, m = doing.stage, self.mistake
        if stage == "call_model":
            return self._call(run, doing, call)
        s = doing.frame.state
        if stage == "append_assistant" and m == NO_ASSISTANT_APPEND:
            return AppendAssistantDetail(mistake=m)  # "I only need the final answer": messages do not change
        if stage == "decide" and m == MAX_TOKENS_GO_ON and s.stop_reason == "max_tokens":
            s.results, s.transition_reason = [], None
            return DecideDetail(continues=True, why=WHY_GO_ON, mistake=m)
        if stage == "write_back" and m == NO_WRITE_BACK:
            s.turn_count += 1  # the loop goes round; the results went to the terminal only
            s.transition_reason = "tool_result"
            return WriteBackDetail(results=0, printed=len(s.results), mistake=m)
        if stage == "write_back" and m == TEXT_FIRST:
            s.results = [{"type": "text", "text": TEXT_BEFORE}, *s.results]
        if stage == "write_back" and m == WRONG_ID:  # results made before the break carry their right ids
            s.results = _wrong_ids(s.results)
        detail = call(doing)
        s = doing.frame.state  # a sub-agent's answer is the parent's run_tool: the frame may have changed
        if stage == "decide" and m == NO_LOOP and not s.ended:
            asked = bool(tool_uses(s.response or {}))
            for frame in run.frames:  # no loop at all: not this one, nor one around it
                frame.state.ended = NOT_RUN if asked else (s.stop_reason or "no stop_reason")
                frame.state.transition_reason = None
            return replace(detail, continues=False, why=WHY_NO_LOOP if asked else why_ended(s.stop_reason), mistake=m)
        if stage == "run_tool" and m == WRONG_ID:
            wrong = dict(s.results[-1], tool_use_id=wrong_id(len(s.results) - 1))
            s.results[-1] = wrong
            return replace(detail, tool_result=wrong, mistake=m)
        if stage == "write_back" and m == RESULTS_AS_ASSISTANT:
            s.messages[-1]["role"] = "assistant"
            return replace(detail, mistake=m)
        if stage == "write_back" and m in (TEXT_FIRST, WRONG_ID):
            return replace(detail, mistake=m)
        return detail

    def _call(self, run, doing, call) -> Detail:
        import anthropic  # here: the SDK is loaded by what calls a model, not by a view that names a mistake

        from . import retry

        try:
            return call(doing)
        except anthropic.BadRequestError as exc:
            doing.stage = "refused"
            error = retry.error_facts(exc)
            for frame in run.frames:  # the run cannot go on: every loop of it ends at the refused call
                frame.state.ended, frame.state.transition_reason = REFUSED, None
            return RefusedDetail(error=error, stage="call_model", request=retry.request_of(exc),
                                 why=WHY_REFUSED.format(status=error.get("status"), type=error.get("type")),
                                 mistake=self.mistake)


def _wrong_ids(results: list) -> list:
    """The tool_results as the broken loop numbers them: the n-th carries `toolu_<n>`."""
    out, n = [], 0
    for block in results:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            block, n = dict(block, tool_use_id=wrong_id(n)), n + 1
        out.append(block)
    return out
