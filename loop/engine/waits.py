"""How much of each wait is really waited: all of it, except where LOOPSCOPE_WAIT_SCALE says less (the tests).

The waits are the complete loop's retry waits (retry.py) and the scripted model's slow parts (scenarios.py and
scripted.py: the `parallel` scenario's slow checks and its pace). Here, not in retry.py, so the scripted model
reads it without loading the SDK.
"""

from __future__ import annotations

import os

SCALE_VARIABLE = "LOOPSCOPE_WAIT_SCALE"  # tests scale the waits down; the page still shows the seconds really left


def scale() -> float:
    """How much of each wait is really waited (1 outside tests)."""
    try:
        value = float(os.environ.get(SCALE_VARIABLE, "1"))
    except ValueError:
        return 1.0
    return value if 0 <= value <= 1 else 1.0
