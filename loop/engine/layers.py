"""What grows around the chapter's loop, as a list of layers: each one adds a stage or wraps one.

The chapter ends with a table: its minimal loop beside a high-completion system,
the same loop with more around it. Here each addition is a `Layer` in a module
of its own, and a run's layers are a list (profiles.py names a profile's, the
toolset brings its own). The runner asks them, in the list's order:

- `continues`: after one of the layer's own stages, the stage that goes on from
  it (a retry calls again the stage that failed, a summary is followed by the
  compaction that uses it, a finished sub-agent hands its answer back);
- `before`: a stage the layer adds before the chapter's next one (stop at max
  turns, compact before a call); the first layer that answers wins;
- `execute`: the stages it adds;
- `around`: a stage it wraps (retry wraps a model call, parallel a tool run).

Each returns the step's detail (details.py), made whole: a layer around a stage
that adds to what the stage recorded returns a new one
(`dataclasses.replace(detail, ...)`), never writes to the one it was given.

| the chapter's table | layer |
| --- | --- |
| why the loop goes on: retry | layer_retry.Retry |
| why the loop goes on: recovery (max_tokens) | layer_recovery.Recovery |
| why the loop goes on: resume after compaction | layer_resume.Resume |
| tool execution: parallel, started early | layer_parallel.Parallel |
| state: turn held explicitly | layer_max_turns.MaxTurns |
| what it leaves out: a permission gate | layer_gate.Gate |
| the course's s04 and s06 | layer_subagent.SubAgent, layer_compact.Compaction |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    import random

    from .compact import Compaction
    from .details import Detail
    from .profiles import Profile
    from .state import Frame
    from .trace import Trace


class Run(Protocol):
    """What a layer sees of the run it is part of (runner.Run is one): named here, so that no layer imports the
    runner that imports it."""

    trace: Trace
    frames: list[Frame]
    layers: list[Layer]
    profile: Profile
    gate: Layer | None
    compaction: Compaction | None
    sizer: Compaction
    model: object
    lang: str
    rng: random.Random
    sleep: Callable[[float], None]

    @property
    def done(self) -> bool: ...


@dataclass(eq=False)
class Doing:
    """The stage at hand, as the layers around it see it: its loop, what the user gave, who watches.

    A layer may change it on the way in: the loop it runs in (a sub-agent's), what runs a tool
    (an output the user gave), the model called (the attempt of a retry), the stage it becomes
    (a failed call becomes a `retry` step).
    """

    stage: str
    frame: Frame
    given: object = None  # a ToolOutput that answers a run_tool instead of the tool (approval gate, fork)
    observer: object = None
    by_user: bool = False
    tools: object = None  # what runs the tool: the frame's tools unless a layer says
    model: object = None  # what the call goes to: the frame's model unless a layer says
    kind: str | None = None  # the compaction a summary is for
    rewritten: list = field(default_factory=list)  # indexes of `messages` the stage rewrote
    child: Frame | None = None  # the sub-agent whose loop this step closes


class Layer:
    """One addition to the chapter's loop (the defaults add nothing)."""

    name = ""  # as profiles.layers() and ORDER name it
    stages: tuple[str, ...] = ()  # the stages it adds and executes
    wraps: tuple[str, ...] = ()  # the stages `around` wraps
    back_to_call: tuple[str, ...] = ()  # its stages after which the loop calls the model again

    def continues(self, run: Run, frame: Frame, nxt: str | None) -> str | None:
        return None

    def before(self, run: Run, frame: Frame, nxt: str | None) -> str | None:
        return None

    def execute(self, run: Run, doing: Doing) -> Detail:
        raise NotImplementedError(doing.stage)

    def around(self, run: Run, doing: Doing, call: Callable[[Doing], Detail]) -> Detail:
        return call(doing)

    def recorded(self, run: Run, doing: Doing, step) -> None:
        """After the step is in the trace."""

    def wait_left(self, run: Run) -> float:
        return 0.0

    def skip_wait(self, run: Run) -> None:
        pass

    def running(self) -> list:
        return []

    def close(self) -> None:
        pass


def last(run: Run, frame: Frame):
    """The last step of the frame's thread (None before its first)."""
    own = run.trace.steps_of(frame.thread.id)
    return run.trace.steps[own[-1]] if own else None


def own(layer: Layer, name: str) -> bool:
    """Does `layer` do something of its own at hook `name`? (the runner asks only those)"""
    return getattr(type(layer), name) is not getattr(Layer, name)


ORDER = ("sub_agent", "retry", "recovery", "max_turns", "resume", "compaction", "gate", "parallel")  # outermost first


def the(layers: list[Layer], name: str) -> Layer | None:
    """The layer of that name among `layers`, if it is one of them."""
    return next((layer for layer in layers if layer.name == name), None)
