"""Going on from a past step: forks (a new branch) and resuming a saved run.

Both rebuild the LoopState of step *i* from the trace alone, which is what a
self-contained step makes possible. A branch gets its own `messages` list (a
copy of the prefix), so the old branch is left exactly as it was.
"""

from __future__ import annotations

from .catalogs import N_
from .model import Model
from .runner import Run, Settings
from .state import LoopState
from .tools import ToolBox, ToolOutput
from .trace import Trace


class ForkRefused(ValueError):
    """A fork that cannot be made; `message` and `values` say why in any language (`str()` is English)."""

    def __init__(self, message: str, **values):
        self.message, self.values = message, values
        super().__init__(message.format(**values))


def state_at(trace: Trace, index: int) -> LoopState:
    """The loop's state right after step `index`, rebuilt from the trace."""
    step = trace.steps[index]
    response = next((s.detail["response"] for s in reversed(trace.steps[: index + 1]) if s.stage == "call_model"),
                    None)
    return LoopState(
        messages=list(trace.messages[: step.n_messages]),
        turn_count=step.turn_count, transition_reason=step.transition_reason, stage=step.stage,
        stop_reason=step.stop_reason, input_tokens=step.input_tokens, output_tokens=step.output_tokens,
        response=response, results=list(trace.results_at(index)), ended=step.ended,
    )


def continue_from(trace: Trace, index: int, model: Model, tools: ToolBox, settings: Settings | None = None) -> Run:
    """A live run whose first `index + 1` steps are those of `trace`, ready to execute the next stage."""
    settings = settings or Settings(lang=str(trace.meta.get("lang") or "en"))  # a run keeps its language
    run = Run(trace.meta.get("task", ""), model, tools, settings=settings)
    run.state = state_at(trace, index)
    run.trace = Trace(meta=dict(trace.meta, tools=tools.specs()), messages=run.state.messages,
                      steps=list(trace.steps[: index + 1]))
    run.trace.last()
    return run


def fork_tool_result(run: Run, index: int, content: str, is_error: bool = False) -> Run:
    """A new branch where the tool_use of run_tool step `index` got `content` as its result."""
    step = run.trace.steps[index]
    if step.stage != "run_tool":
        raise ForkRefused(N_("step {k} is a {stage} step; only a tool's result can be edited"), k=index + 1,
                          stage=step.stage)
    branch = continue_from(run.trace, index - 1, run.model, run.tools, run.settings)
    branch.trace.meta["forked_from"] = {"step": index, "edit": "tool_result"}
    branch.execute(given=ToolOutput(content, is_error))
    return branch


def fork_task(run: Run, task: str) -> Run:
    """A new branch from the first step with another task."""
    if not task.strip():
        raise ForkRefused(N_("the task is empty"))
    branch = Run(task, run.model, run.tools, settings=run.settings)
    branch.trace.meta["forked_from"] = {"step": 0, "edit": "task"}
    branch.execute()
    return branch
