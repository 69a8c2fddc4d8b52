"""How large a model's answer may be (LOOPSCOPE_MAX_RESPONSE_BYTES), and what is said of one refused: read by the real
model's client (capped.py) and by the wire's recorder, which must start without the SDK (it costs a second).
"""

from __future__ import annotations

import os

from ..text.catalogs import N_

VARIABLE = "LOOPSCOPE_MAX_RESPONSE_BYTES"
DEFAULT = 8 * 2**20  # bytes: some 20 times the largest answer `max_tokens` allows

TOO_LARGE = N_("The model's answer was larger than {size}: it was refused, and nothing of it is kept or saved. A real "
               "answer within max_tokens is far smaller: check that the base URL points at the model's server.")


def limit() -> int:
    """The cap in bytes: LOOPSCOPE_MAX_RESPONSE_BYTES when it is a positive whole number, else 8 MiB."""
    try:
        value = int(os.environ.get(VARIABLE, ""))
    except ValueError:
        return DEFAULT
    return value if value > 0 else DEFAULT
