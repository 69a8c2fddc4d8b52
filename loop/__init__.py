"""Loopscope's engine: the chapter's agent loop, run one stage at a time into a trace.

Nothing here imports Streamlit; the pages render what this package produces.
"""

from .model import Model, ModelConfig
from .runner import Run, start
from .state import LoopState
from .trace import Step, Trace

__all__ = ["LoopState", "Model", "ModelConfig", "Run", "Step", "Trace", "start"]
