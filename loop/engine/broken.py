"""Break it here: fork a run at a step, with the loop broken one of the seven classic ways (mistakes.py) from there
on; and the Mistakes lab's loops, made the same way from a scenario's first step.

The branch keeps steps 0 to `step` as they were, then runs live (a mistake that changes the stage of `step`
itself, a write-back broken at a write-back step, keeps the steps before it and makes that very step anew): the chapter's
stages with the mistake (layer_mistake.py) against the offline model, which
checks the API's rules (rules.py) and refuses the first broken request with
the API's 400. There the branch stops; without a loop it stops where nothing
runs the tool_use. A run made with a real model breaks against the offline
model too: no key is spent on a lesson, and `Broken.offline` says so. An
imported session's tools cannot run here: its branch reuses the results the
session recorded for the same tool_use ids.

    broken = break_at(trace, 5, NO_ASSISTANT_APPEND)
    broken.error_line()   # 400 invalid_request_error: messages.2.content.0: unexpected `tool_use_id` ...
    lab(WRONG_ID, tools)  # the lab's broken loop: its scenario from the start (lab(None, tools): the correct one)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import layer_mistake
from ..text.catalogs import N_
from .fork import continue_from
from .mistakes import MISTAKES, NAMES
from .model import Model, ModelConfig
from .runner import Run, Settings, new_workspace
from .toolsets import default_toolbox
from .trace import Trace

MAX_STEPS = 200  # a broken loop that the API never refuses still stops (a mistake breaks within a turn or two)

# Why no mistake can happen from a step (each mistake says why it cannot, when no step it changes is ahead).
ENDED_HERE = N_("the loop has ended at this step: nothing runs after it")
OFFLINE = N_("this run was made with {model}; the broken branch runs against the offline model, which answers "
             "what it can: no key is spent on a lesson")


@dataclass
class Broken:
    """A broken branch: the run (its trace keeps steps 0 to `kept`), where it stopped and what the API said."""

    run: Run
    mistake: str  # one of mistakes.NAMES
    at: int  # the step the loop was broken at
    kept: int  # the last step kept as it was: `at`, or the step before it when the mistake made `at` anew
    stopped_at: int  # the index of the branch's last step: the refused call, or where the loop ended
    status: int | None  # the API's error: HTTP status, type and message (None when no call was refused)
    type: str | None
    message: str | None
    broke: bool  # it broke as the mistake breaks: a 400 at a call, or (no loop) a tool_use nothing runs
    offline: bool  # the run was made with a real model: the branch ran against the offline model instead
    note: str | None = None  # English; the offline note (OFFLINE), or why it did not break

    @property
    def trace(self) -> Trace:
        return self.run.trace

    def error_line(self) -> str:
        """`400 invalid_request_error: <the API's message>`, or "" when no call was refused."""
        if self.status is None and not self.type:
            return ""
        return f"{self.status} {self.type}: {self.message}"


def kept_at(trace: Trace, step: int, mistake: str) -> int:
    """The last step a branch broken by `mistake` at `step` keeps as it was: `step`, or the step before it when
    the mistake changes `step` itself (broken at a write-back, that very write-back is made broken)."""
    return step - 1 if step > 0 and MISTAKES[mistake].made_at(trace.steps[step]) else step


def why_not(trace: Trace, step: int) -> dict[str, str | None]:
    """Each mistake, with why it cannot happen from step `step` (an English catalog message), or None when it can.

    Up to the stage a mistake changes, the broken branch is the run itself, so the steps after the ones it keeps
    say where it would first show: a mistake needs that stage ahead (any loop's: a sub-agent's breaks too).
    """
    return {name: _why_not(name, trace.steps[kept_at(trace, step, name) + 1:]) for name in NAMES}


def _why_not(mistake: str, ahead: list) -> str | None:
    if not ahead:
        return ENDED_HERE
    return None if any(MISTAKES[mistake].made_at(s) for s in ahead) else MISTAKES[mistake].cannot


def mistakes_from(trace: Trace, step: int) -> list[str]:
    """The mistakes that can happen from step `step` on, in the Mistakes lab's order."""
    return [name for name, why in why_not(trace, step).items() if why is None]


def offline_model(trace: Trace) -> Model:
    """The offline model, set as the run's was: its system prompt, max_tokens and context window."""
    meta = trace.meta
    config = ModelConfig(max_retries=0)
    if isinstance(meta.get("system"), str):
        config = replace(config, system=meta["system"])
    if isinstance(meta.get("max_tokens"), int):
        config = replace(config, max_tokens=meta["max_tokens"])
    if isinstance(meta.get("context_window"), int):
        config = replace(config, context_window=meta["context_window"])
    return Model(config)


def settings_of(trace: Trace) -> Settings:
    """The settings the run was made with, as its transcript says them."""
    meta = trace.meta
    number = (lambda key, default: meta[key] if isinstance(meta.get(key), int) and meta[key] > 0 else default)
    return Settings(max_turns=number("max_turns", 20), toolset=meta.get("toolset") or "s01",
                    lang=str(meta.get("lang") or "en"), compact_at=meta.get("compact_at"),
                    profile=meta.get("profile") or "minimal",
                    budget=meta.get("budget") if isinstance(meta.get("budget"), int) else None)


def break_at(trace: Trace, step: int, mistake: str, tools=None) -> Broken:
    """A branch of `trace` that keeps steps 0 to `step` and runs on with the loop broken by `mistake`; when
    `step` is a stage the mistake changes, it keeps the steps before it and makes `step` anew, broken.

    `tools` run the branch's tool_use blocks (the run's own, to share its workspace); without them the
    branch gets tools of its own in a new workspace, which `broken.run.close()` removes. KeyError for an
    unknown mistake, IndexError for a step the trace does not have.
    """
    if mistake not in NAMES:
        raise KeyError(mistake)
    if not 0 <= step < len(trace.steps):
        raise IndexError(step)
    settings = settings_of(trace)
    if tools is None:
        tools = default_toolbox(new_workspace(), settings.tool_timeout, settings.toolset or "s01")
    offline = not trace.meta.get("scripted")
    kept = kept_at(trace, step, mistake)
    run = continue_from(trace, kept, offline_model(trace), tools, settings)
    run.trace.meta["forked_from"] = {"step": step, "edit": "mistake", "mistake": mistake}
    if kept != step:
        run.trace.meta["forked_from"]["kept"] = kept
    if offline:
        run.trace.meta["forked_from"]["offline"] = True
    run.add_outermost(layer_mistake.Mistake(mistake))
    _run_on(run, trace, MAX_STEPS)
    return _outcome(run, trace, step, mistake, offline)


def lab(mistake: str | None, tools, scenario: str | None = None, lang: str = "en") -> Trace:
    """The Mistakes lab's loop: the chapter's loop on `scenario` (by default the one the mistake is shown on) from
    its first step, broken by `mistake` (None: the correct loop), as Break it here breaks a run, against the offline
    model until the API refuses a call or the loop ends. `tools` run its tool_use blocks (the caller's: closing them
    is the caller's too). KeyError for an unknown mistake or scenario."""
    from ..text.catalogs import known
    from .language import system_prompt
    from .model import SYSTEM
    from .scenarios import SCENARIOS

    if mistake is not None and mistake not in NAMES:
        raise KeyError(mistake)
    chosen = SCENARIOS[scenario or (MISTAKES[mistake].scenario if mistake else MISTAKES[NAMES[0]].scenario)]
    lang = known(lang)
    model = Model(ModelConfig(max_tokens=chosen.max_tokens, context_window=chosen.context_window,
                              system=system_prompt(lang, SYSTEM), max_retries=0))
    run = Run(chosen.task_in(lang), model, tools, settings=Settings(lang=lang, toolset="s01"))  # the chapter's loop
    if mistake is not None:
        run.add_outermost(layer_mistake.Mistake(mistake))
    try:
        _run_on(run, run.trace, MAX_STEPS)
    finally:
        for layer in run.layers:  # what the layers made; the tools stay the caller's
            layer.close()
    return run.trace


def taken_on(trace: Trace) -> Trace:
    """`trace` with what comes after its newest step, as the offline model answers it; `trace` itself when its
    loop has ended.

    What a broken branch is compared with: the correct loop, run as far as the broken one ran (it runs against the
    offline model too), never cut where the learner stopped stepping. The run gets tools of its own in a new
    workspace, removed when it ends: only its trace is kept. An imported session's tool_use ids get the results the
    session recorded, as its broken branch does.
    """
    if not trace.steps or trace.loop_ended:
        return trace
    settings = settings_of(trace)
    tools = default_toolbox(new_workspace(), settings.tool_timeout, settings.toolset or "s01")
    run = continue_from(trace, len(trace) - 1, offline_model(trace), tools, settings)
    try:
        _run_on(run, trace)  # the correct loop ends by itself (or at its max turns)
    finally:
        run.close()  # removes its workspace
    return run.trace


def _run_on(run: Run, trace: Trace, most: int | None = None) -> None:
    """Execute `run`'s stages until its loop ends (or `most` of them ran), an imported `trace`'s tool_use ids
    answered by the results it recorded."""
    recorded = recorded_results(trace) if "imported" in trace.meta else {}
    ran = 0
    while not run.done and (most is None or ran < most):
        ran += 1
        pending = run.pending_tool_use
        run.execute(given=recorded.get(pending.get("id")) if pending else None)


def recorded_results(trace: Trace) -> dict:
    """{tool_use id: ToolOutput} of each tool_use the trace ran: an imported session's tools cannot run here,
    so its broken branch gets what they gave then."""
    from ..tools import ToolOutput

    out = {}
    for s in trace.steps:
        if s.stage == "run_tool" and isinstance(s.detail.tool_use_id, str):
            output = s.detail.output
            out[s.detail.tool_use_id] = ToolOutput(output if isinstance(output, str) else str(output or ""),
                                                   bool(s.detail.is_error))
    return out


def _outcome(run: Run, trace: Trace, step: int, mistake: str, offline: bool) -> Broken:
    last = run.trace.steps[-1]
    error = last.detail.error if last.stage == "refused" else None
    error = error if isinstance(error, dict) else {}
    if MISTAKES[mistake].breaks_a_rule:
        broke = error.get("status") == 400 and error.get("type") == "invalid_request_error"
    else:  # no loop: nothing is sent that breaks a rule; the tool_use is never run
        broke = last.stage == "decide" and last.ended == layer_mistake.NOT_RUN
    note = None
    if not broke:
        note = why_not(trace, step)[mistake] or N_("the broken loop went on to its end: no call was refused")
    elif offline:
        note = OFFLINE.format(model=trace.meta.get("model") or "?")
    return Broken(run, mistake, step, kept_at(trace, step, mistake), last.index, error.get("status"),
                  error.get("type"), error.get("message"), broke, offline, note)
