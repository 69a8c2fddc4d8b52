"""Importers: every file format people replay becomes Loopscope's own trace.

`import_bytes(data, name)` detects the format, converts, and returns the trace
with a list of warnings (what was passed over or repaired, and where). A file
that cannot be read at all raises `ImportFailed` with one clear message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import transcript
from ..trace import Trace


class ImportFailed(ValueError):
    """The file cannot be read as any known format; the message says why."""


@dataclass
class Imported:
    trace: Trace
    format: str  # e.g. "loopscope", "claude-code", "anthropic-messages", "openai-chat", "course-trace"
    warnings: list[str] = field(default_factory=list)


def import_bytes(data: bytes, name: str = "") -> Imported:
    """Detect the format of `data` and import it."""
    try:
        return Imported(transcript.loads(data), "loopscope")
    except transcript.TranscriptError as exc:
        raise ImportFailed(f"{name or 'the file'}: {exc}") from None
