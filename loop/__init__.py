"""Loopscope without its pages: the chapter's agent loop, run one stage at a time into a trace.

Its parts are folders, each importing only the ones before it: text/ (what any part says), tools/ (the real
tools), engine/ (the five stages, the runner, the layers around them), files/ (transcripts, journals, the runs
store), importers/ (other formats into a trace), views/ (a step in words and pictures). Nothing here imports
Streamlit; the pages render what this package produces.
The names below are loaded when first used, so `import loop.importers` (an
upload's import runs in a process of its own) does not load the SDK.
"""

from importlib import import_module

__all__ = ["LoopState", "Model", "ModelConfig", "Run", "Step", "Trace", "start"]
_WHERE = {"Model": "engine.model", "ModelConfig": "engine.model", "Run": "engine.runner", "start": "engine.runner",
          "LoopState": "engine.state", "Step": "engine.trace", "Trace": "engine.trace"}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
