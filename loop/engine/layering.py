"""A run's layers: made from the names a profile and a toolset give, and composed around each stage.

The layers' protocol is layers.py's; each layer is a module of its own (layer_*.py). This module knows them all,
so that none of them, nor the protocol, imports another layer or the runner.
"""

from __future__ import annotations

from typing import Callable

from . import chapter, layer_compact, layer_gate, layer_max_turns, layer_parallel, layer_recovery, layer_resume
from . import layer_mistake, layer_retry, layer_subagent
from .layers import ORDER, Doing, Layer, Run, own

KINDS = {"sub_agent": layer_subagent.SubAgent, "retry": layer_retry.Retry, "recovery": layer_recovery.Recovery,
         "max_turns": layer_max_turns.MaxTurns, "resume": layer_resume.Resume,
         "compaction": layer_compact.Compaction, "gate": layer_gate.Gate, "parallel": layer_parallel.Parallel}
MISTAKE = layer_mistake.Mistake  # not a profile's: a broken branch adds it (broken.py, with `outermost`)


def compose(run: Run, stage: str) -> Callable[[Doing], dict]:
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


def outermost(run, layer: Layer) -> None:
    """Put `layer` around every other layer of `run`, before its next stage: asked first, wrapping all.

    A broken branch's mistake (layer_mistake.py) changes the chapter's stages whatever else the run's
    profile adds; the runner made its list of hooks and composed stages from its layers, so both are made
    again here, where layers are composed.
    """
    run.layers.insert(0, layer)
    run._hooks = {name: [getattr(each, name) for each in run.layers if own(each, name)]
                  for name in ("continues", "before", "recorded")}
    run._calls = {}
    run._to_call = run._to_call.union(layer.back_to_call)
