"""Going on from a past step: forks (a new branch) and resuming a saved run.

Both rebuild the LoopState of step *i* from the trace alone, which is what a
self-contained step makes possible. A branch gets its own `messages` lists and
its own copy of each thread's versions up to step *i*, so the old branch is
left exactly as it was.
"""

from __future__ import annotations

from . import profiles, subagent
from ..text.catalogs import N_
from .model import Model
from .runner import Frame, Run, Settings
from .state import LoopState
from ..tools import ToolBox, ToolOutput
from .trace import MAIN, Thread, Trace


class ForkRefused(ValueError):
    """A fork that cannot be made; `message` and `values` say why in any language (`str()` is English)."""

    def __init__(self, message: str, **values):
        self.message, self.values = message, values
        super().__init__(message.format(**values))


def state_at(trace: Trace, index: int, thread_id: str | None = None) -> LoopState:
    """The loop's state right after step `index`, rebuilt from the trace: that of the step's thread, or of
    `thread_id` as its own last step at or before `index` left it."""
    thread_id = thread_id or trace.steps[index].thread
    last = trace.last_in_thread(thread_id, index)
    if last is None:
        return LoopState()
    step = trace.steps[last]
    own = trace.steps_of(thread_id)
    response = next((trace.steps[i].detail.response for i in reversed(own) if i <= last
                     and trace.steps[i].stage == "call_model"), None)
    state = LoopState(
        messages=trace.messages_at(last),
        turn_count=step.turn_count, transition_reason=step.transition_reason, stage=step.stage,
        stop_reason=step.stop_reason, input_tokens=step.input_tokens, output_tokens=step.output_tokens,
        response=response, results=list(trace.results_at(last)), ended=step.ended,
    )
    for name, value in profiles.counters(trace, last).items():  # the complete loop's explicit state
        setattr(state, name, value)
    return state


def continue_from(trace: Trace, index: int, model: Model, tools: ToolBox, settings: Settings | None = None) -> Run:
    """A live run whose first `index + 1` steps are those of `trace`, ready to execute the next stage.

    Inside a sub-agent, its loop and its parent's are both rebuilt, so the run
    goes on in the sub-agent and returns to the parent when it ends.
    """
    settings = settings or Settings(lang=str(trace.meta.get("lang") or "en"),  # a run keeps its language and loop
                                    profile=trace.meta.get("profile") or profiles.MINIMAL)
    run = Run(trace.meta.get("task", ""), model, tools, settings=settings)
    max_turns = run.max_turns
    threads: dict[str, Thread] = {}
    states: dict[str, LoopState] = {}
    for tid, thread in trace.threads.items():
        if tid != MAIN and trace.last_in_thread(tid, index) is None:
            continue  # started later: not part of this run yet
        states[tid] = state = state_at(trace, index, tid)
        threads[tid] = Thread(tid, parent=thread.parent, parent_tool_use_id=thread.parent_tool_use_id,
                              system=thread.system, tools=thread.tools, label=thread.label, messages=state.messages,
                              history=thread.history.until(index, len(state.messages)), facts=dict(thread.facts))
    threads[MAIN].tools = tools.specs()
    run.trace = Trace(meta=dict(trace.meta, tools=tools.specs()), steps=list(trace.steps[: index + 1]),
                      threads=threads)
    run.frames = []
    for thread in trace.path(index):  # the loops still open at step `index`, outermost first
        mine = threads[thread.id]
        if thread.parent is None:
            run.frames.append(Frame(mine, states[thread.id], model, tools, run.task, max_turns))
            continue
        first = trace.steps[trace.opened_at(thread.id)]
        child_tools = subagent.child_tools(tools)
        run.frames.append(Frame(mine, states[thread.id], subagent.ThreadModel(model, thread.system or
                                                                              subagent.system(run.lang)),
                                child_tools, str(first.detail.task or "") if first.stage == "user_request" else "",
                                subagent.MAX_TURNS))
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
