"""The mistakes lab: the chapter's loop, broken on purpose in one line each.

Each mistake is the chapter's `agent_loop` with one deviation. It runs through
the real SDK against the offline model, which checks the Messages API's rules
like the API does, so the learner sees the very error a real model's API would
give (or, where a request is accepted, what the model got to see). One mistake
breaks no rule: with no loop at all, the model's tool_use is never run, and the
answer stays a wish (the chapter's first closing point).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import anthropic

from ..engine.blocks import tool_result
from ..text.catalogs import N_
from ..engine.model import SYSTEM, Model, ModelConfig
from ..engine.rules import tool_uses
from ..engine.language import system_prompt
from ..engine.scenarios import SCENARIOS
from ..tools import ToolBox


@dataclass(frozen=True)
class Mistake:
    name: str
    title: str
    scenario: str  # a built-in scenario in which the mistake shows
    fix: str  # one sentence
    wrong: str  # the lines as the broken loop has them
    right: str  # the chapter's lines
    rule: str = ""  # what the API's error means, in one sentence (empty when no rule is broken)


MISTAKES: dict[str, Mistake] = {m.name: m for m in [
    Mistake(
        "no-loop", N_("No loop: one call, and the tool_use is never run"), "list-files",
        N_("Loop: run each tool_use, write its tool_result back into messages, and call the model again until "
           "stop_reason is not tool_use."),
        'response = client.messages.create(...)\nprint(response.content)  # a tool_use: nothing runs it',
        'while True:\n    response = client.messages.create(...)\n'
        '    messages.append({"role": "assistant", "content": response.content})\n'
        '    if response.stop_reason != "tool_use":\n        return\n'
        '    messages.append({"role": "user", "content": run_tools(response)})',
    ),
    Mistake(
        "no-assistant-append", N_("Not appending the assistant response to messages"), "list-files",
        N_("Append the assistant's response itself before running tools: the next call must see the tool_use it answers."),
        '# (nothing: "I only need the final answer")',
        'messages.append({"role": "assistant", "content": response.content})',
        N_("A tool_result may only answer a tool_use of the message just before it, and that message was never kept."),
    ),
    Mistake(
        "no-write-back", N_("Not writing the tool_result back (a terminal log)"), "list-files",
        N_("Write the results into messages as a user message; printing them tells the model nothing."),
        'print(output)  # the result goes to the terminal only',
        'messages.append({"role": "user", "content": results})',
        N_("Every tool_use must be answered by a tool_result with its id in the very next message; none came."),
    ),
    Mistake(
        "wrong-id", N_("Writing the result back with the wrong tool_use_id"), "list-files",
        N_("Answer each tool_use with its own id: tool_use_id=block.id."),
        '{"type": "tool_result", "tool_use_id": "toolu_" + str(n), "content": output}',
        '{"type": "tool_result", "tool_use_id": block.id, "content": output}',
        N_("A tool_result answers the tool_use whose id it carries: with another id, the tool_use stays unanswered."),
    ),
    Mistake(
        "text-first", N_("Putting text before the tool_result blocks"), "list-files",
        N_("Put the tool_result blocks first in the user message; any text goes after them."),
        'messages.append({"role": "user", "content": [{"type": "text", "text": "Here are the results:"}] + results})',
        'messages.append({"role": "user", "content": results})',
        N_("The message after a tool_use must begin with its tool_result blocks; text may only come after them."),
    ),
    Mistake(
        "max-tokens-go-on", N_("Treating max_tokens as \"go on\" like tool_use"), "max-tokens",
        N_("Only stop_reason == \"tool_use\" continues the loop; max_tokens ends it (the answer was cut)."),
        'if response.stop_reason not in ("tool_use", "max_tokens"):\n    return',
        'if response.stop_reason != "tool_use":\n    return',
        N_("A request may not hold an empty message: a cut answer gave no tool_use, so nothing came to write back."),
    ),
    Mistake(
        "results-as-assistant", N_("Appending the results as an assistant message"), "list-files",
        N_("tool_results come from the user side: role \"user\", never \"assistant\"."),
        'messages.append({"role": "assistant", "content": results})',
        'messages.append({"role": "user", "content": results})',
        N_("tool_results must come in the user message right after the tool_use; an assistant message cannot carry them."),
    ),
]}

COMMENTS = (  # the comments in the lines above, shown in the page's language
    N_('(nothing: "I only need the final answer")'), N_("the result goes to the terminal only"),
    N_("a tool_use: nothing runs it"),
)


@dataclass
class Call:
    """One model call of a lab run: what was sent and what came back."""

    number: int  # 1-based
    messages: list  # the history sent (a copy: the broken loop goes on changing its list)
    response: dict | None = None
    error: str | None = None  # the API's words when it refused the request
    tool_outputs: list = field(default_factory=list)  # what the tools printed after this call


@dataclass
class LabRun:
    mistake: str | None  # None: the correct loop
    calls: list[Call]
    ended: str  # "end_turn", "max_tokens", "400", "max calls", or "tool_use" (no loop: asked, never run)
    tools_run: int = 0  # tool_use blocks really run

    @property
    def broke_at(self) -> Call | None:
        return next((c for c in self.calls if c.error), None)


def run_loop(mistake: str | None, tools: ToolBox, scenario: str | None = None, max_calls: int = 6,
             lang: str = "en") -> LabRun:
    """The chapter's `agent_loop`, with `mistake` (or none) applied, recorded call by call, in `lang`."""
    m = MISTAKES.get(mistake) if mistake else None
    scenario = scenario or (m.scenario if m else "list-files")
    model = Model(ModelConfig(max_tokens=SCENARIOS[scenario].max_tokens, system=system_prompt(lang, SYSTEM)))
    messages: list = [{"role": "user", "content": SCENARIOS[scenario].task_in(lang)}]
    calls: list[Call] = []
    ran = 0
    while len(calls) < max_calls:
        call = Call(len(calls) + 1, copy.deepcopy(messages))
        calls.append(call)
        try:
            response = model.create(messages=messages, tools=tools.specs()).response
        except anthropic.BadRequestError as exc:
            error = exc.body.get("error", {}) if isinstance(exc.body, dict) else {}
            call.error = error.get("message") or str(exc)
            return LabRun(mistake, calls, "400", tools_run=ran)
        call.response = response
        if mistake == "no-loop":  # one call and no loop: whatever the model asked for is never run
            return LabRun(mistake, calls, response["stop_reason"], tools_run=0)
        if mistake != "no-assistant-append":
            messages.append({"role": "assistant", "content": response["content"]})
        go_on = ("tool_use", "max_tokens") if mistake == "max-tokens-go-on" else ("tool_use",)
        if response["stop_reason"] not in go_on:
            return LabRun(mistake, calls, response["stop_reason"], tools_run=ran)
        results = []
        for n, block in enumerate(tool_uses(response)):
            output = tools.run(block["name"], block["input"])
            ran += 1
            call.tool_outputs.append(output.content)
            answer_id = f"toolu_{n}" if mistake == "wrong-id" else block["id"]
            results.append(tool_result(answer_id, output))
        if mistake == "no-write-back":
            continue  # the output was "printed"; messages did not change
        if mistake == "text-first":
            results = [{"type": "text", "text": "Here are the results:"}] + results
        role = "assistant" if mistake == "results-as-assistant" else "user"
        messages.append({"role": role, "content": results})
    return LabRun(mistake, calls, "max calls", tools_run=ran)
