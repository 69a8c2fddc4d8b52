"""How much of each wait is really waited: all of it, except where LOOPSCOPE_WAIT_SCALE says otherwise (the tests).

The waits are the complete loop's retry waits (retry.py) and the scripted model's slow parts (scenarios.py and
scripted.py: the `parallel` scenario's slow checks and its pace). Here, not in retry.py, so the scripted model
reads it without loading the SDK.
"""

from __future__ import annotations

import os

# Tests scale the waits down, to run fast, or up to 10 times, to click inside one on a loaded machine; the page
# shows the seconds really left
SCALE_VARIABLE = "LOOPSCOPE_WAIT_SCALE"
MOST = 10.0


def scale() -> float:
    """How much of each wait is really waited (1 outside tests)."""
    try:
        value = float(os.environ.get(SCALE_VARIABLE, "1"))
    except ValueError:
        return 1.0
    return value if 0 <= value <= MOST else 1.0
