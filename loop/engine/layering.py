"""A run's layers: made from the names a profile and a toolset give, and composed around each stage.

The layers' protocol is layers.py's; each layer is a module of its own (layer_*.py). This module knows them all,
so that none of them, nor the protocol, imports another layer or the runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from . import chapter, layer_compact, layer_gate, layer_max_turns, layer_parallel, layer_recovery, layer_resume
from . import layer_mistake, layer_retry, layer_subagent
from .layers import ORDER, Doing, Layer, Run, own

if TYPE_CHECKING:
    from .details import Detail

KINDS = {"sub_agent": layer_subagent.SubAgent, "retry": layer_retry.Retry, "recovery": layer_recovery.Recovery,
         "max_turns": layer_max_turns.MaxTurns, "resume": layer_resume.Resume,
         "compaction": layer_compact.Compaction, "gate": layer_gate.Gate, "parallel": layer_parallel.Parallel}
MISTAKE = layer_mistake.Mistake  # not a profile's: a broken branch adds it (broken.py, Run.add_outermost)


def compose(run: Run, stage: str) -> Callable[[Doing], Detail]:
    """The stage's own function (the chapter's, or the layer's that adds it), inside the layers that wrap it."""
    own = chapter.STAGES.get(stage)
    call = (lambda doing: own(run, doing)) if own else next(
        (lambda doing, layer=layer: layer.execute(run, doing)) for layer in run.layers if stage in layer.stages)
    for layer in reversed(run.layers):
        if stage in layer.wraps:
            call = (lambda doing, layer=layer, inner=call: layer.around(run, doing, inner))
    return call


def make(names) -> list[Layer]:
    """The layers of these names, in the one order they compose in (a retry outside the call it repeats)."""
    made = []
    for name in ORDER:
        if name in set(names):
            made.append(KINDS[name]())
            made[-1].name = name
    return made


def hooks(made: list[Layer]) -> dict[str, list[Callable]]:
    """The hooks a run asks at each stage (continues, before, recorded): those its layers have of their own, in
    their order, outermost first."""
    return {name: [getattr(layer, name) for layer in made if own(layer, name)]
            for name in ("continues", "before", "recorded")}
