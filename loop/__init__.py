"""Loopscope's engine: the chapter's agent loop, run one stage at a time into a trace.

Nothing here imports Streamlit; the pages render what this package produces.
The names below are loaded when first used, so `import loop.importers` (an
upload's import runs in a process of its own) does not load the SDK.
"""

from importlib import import_module

__all__ = ["LoopState", "Model", "ModelConfig", "Run", "Step", "Trace", "start"]
_WHERE = {"Model": "model", "ModelConfig": "model", "Run": "runner", "start": "runner", "LoopState": "state",
          "Step": "trace", "Trace": "trace"}


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
