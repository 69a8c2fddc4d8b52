"""A mistake: the chapter's loop broken on purpose, in one of the Mistakes lab's seven ways, from a step on.

Not a row of the chapter's table but its lesson turned round: each mistake is
one line of `agent_loop` written wrong (loop/views/mistakes.py shows the
lines). This layer changes what the chapter's stages do, nothing else:

| mistake | the stage it changes |
| --- | --- |
| no-loop | decide: whatever stop_reason says, the loop ends; a tool_use is never run |
| no-assistant-append | append_assistant: the response is not kept in messages |
| no-write-back | write_back: the results are "printed", messages do not change |
| wrong-id | run_tool: the tool_result carries `toolu_<n>`, not the tool_use's id (and write_back: so do those made before) |
| text-first | write_back: a text block comes before the tool_result blocks |
| max-tokens-go-on | decide: max_tokens goes on as tool_use does |
| results-as-assistant | write_back: the results go in as an assistant message |

The API checks its rules on the next call (rules.py, in one place): the call
it refuses with a 400 becomes a `refused` step, as the complete loop records
a prompt refused as too long, and every loop of the run ends there.
"""

from __future__ import annotations

from . import layers
from ..text.catalogs import N_
from .endings import why_ended
from .layers import Layer
from .rules import tool_uses

NAMES = ("no-loop", "no-assistant-append", "no-write-back", "wrong-id", "text-first", "max-tokens-go-on",
         "results-as-assistant")  # as the Mistakes lab names them (loop/views/mistakes.py)
# The steps each mistake changes, as (stage, the stop_reason it needs or None for any): broken at such a step, a
# branch makes that very step anew, broken; from any other, it breaks at the first such step ahead.
CHANGES = {"no-loop": (("decide", "tool_use"),), "no-assistant-append": (("append_assistant", "tool_use"),),
           "no-write-back": (("write_back", None),), "wrong-id": (("run_tool", None), ("write_back", None)),
           "text-first": (("write_back", None),), "max-tokens-go-on": (("decide", "max_tokens"),),
           "results-as-assistant": (("write_back", None),)}


def changes(mistake: str, step) -> bool:
    """Whether `mistake` changes what `step` (a recorded Step) did: its stage is one the mistake makes wrong."""
    return any(step.stage == stage and (stop is None or step.stop_reason == stop) for stage, stop in CHANGES[mistake])

REFUSED = "invalid_request"  # why a loop ended when the API refused the broken request
NOT_RUN = "tool_use"  # why a loop without a loop ended: the tool_use was asked for, and nothing runs it
TEXT_FIRST = "Here are the results:"  # the lab's text before the results

WHY_REFUSED = N_("the API refused the request ({status} {type}): the broken loop ends here")
WHY_NO_LOOP = N_("no loop: the answer asked for a tool_use, and nothing runs it; the loop ends")
WHY_GO_ON = N_("max_tokens taken for \"go on\": the loop goes on to write back, with no tool_use to answer")


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
        if self.mistake == "max-tokens-go-on" and nxt is not None and s.stage == "decide" \
                and s.stop_reason == "max_tokens" and layers.last(run, frame).detail.get("mistake"):
            return "write_back"  # ahead of a layer that would recover: the mistake took it as tool_use
        return None

    def around(self, run, doing, call) -> dict:
        stage, m = doing.stage, self.mistake
        if stage == "call_model":
            return self._call(run, doing, call)
        s = doing.frame.state
        if stage == "append_assistant" and m == "no-assistant-append":
            return {"mistake": m}  # "I only need the final answer": messages do not change
        if stage == "decide" and m == "max-tokens-go-on" and s.stop_reason == "max_tokens":
            s.results, s.transition_reason = [], None
            return {"continues": True, "why": WHY_GO_ON, "mistake": m}
        if stage == "write_back" and m == "no-write-back":
            s.turn_count += 1  # the loop goes round; the results went to the terminal only
            s.transition_reason = "tool_result"
            return {"results": 0, "printed": len(s.results), "mistake": m}
        if stage == "write_back" and m == "text-first":
            s.results = [{"type": "text", "text": TEXT_FIRST}, *s.results]
        if stage == "write_back" and m == "wrong-id":  # results made before the break carry their right ids
            s.results = _wrong_ids(s.results)
        detail = call(doing)
        s = doing.frame.state  # a sub-agent's answer is the parent's run_tool: the frame may have changed
        if stage == "decide" and m == "no-loop" and not s.ended:
            asked = bool(tool_uses(s.response or {}))
            for frame in run.frames:  # no loop at all: not this one, nor one around it
                frame.state.ended = NOT_RUN if asked else (s.stop_reason or "no stop_reason")
                frame.state.transition_reason = None
            detail.update(continues=False, why=WHY_NO_LOOP if asked else why_ended(s.stop_reason), mistake=m)
        elif stage == "run_tool" and m == "wrong-id":
            wrong = dict(s.results[-1], tool_use_id=f"toolu_{len(s.results) - 1}")
            s.results[-1] = detail["tool_result"] = wrong
            detail["mistake"] = m
        elif stage == "write_back" and m == "wrong-id":
            detail["mistake"] = m
        elif stage == "write_back" and m == "results-as-assistant":
            s.messages[-1]["role"] = "assistant"
            detail["mistake"] = m
        elif stage == "write_back" and m == "text-first":
            detail["mistake"] = m
        return detail

    def _call(self, run, doing, call) -> dict:
        import anthropic  # here: the SDK is loaded by what calls a model, not by a view that names a mistake

        from . import retry

        try:
            return call(doing)
        except anthropic.BadRequestError as exc:
            doing.stage = "refused"
            error = retry.error_facts(exc)
            for frame in run.frames:  # the run cannot go on: every loop of it ends at the refused call
                frame.state.ended, frame.state.transition_reason = REFUSED, None
            return {"error": error, "stage": "call_model", "request": retry.request_of(exc),
                    "why": WHY_REFUSED.format(status=error.get("status"), type=error.get("type")),
                    "mistake": self.mistake}


def _wrong_ids(results: list) -> list:
    """The tool_results as the broken loop numbers them: the n-th carries `toolu_<n>`."""
    out, n = [], 0
    for block in results:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            block, n = dict(block, tool_use_id=f"toolu_{n}"), n + 1
        out.append(block)
    return out
