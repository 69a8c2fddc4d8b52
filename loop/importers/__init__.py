"""Importers: every file format people replay becomes Loopscope's own trace.

`import_bytes(data, name)` detects the format, converts, and returns the trace
with a list of warnings (what was passed over or repaired, and where): notes
that can be said in any language (notes.py), `Imported.warnings` in English. A
file that cannot be read at all raises `ImportFailed` with one clear message: a Note too (its `note`), English
as `str()`, in the page's language on Replay.

The parts, each with one job:

    files.py      what a caller hands over (bytes, a file, several files, a zip, a folder), bounded
    reading.py    bytes to JSON: one value, or JSON Lines
    formats.py    which format it is, by its shape, and which reader reads it (the formats are listed there)
    claude_code.py, codex.py, course.py, anthropic_api.py, openai_chat.py    the readers, each of one format
    others.py     other agents' files that are no history of this loop, named when refused
    own.py        Loopscope's own transcript and journal
    derive.py     a history becomes the steps a live run would have made
    finish.py     the trace derived, every broken rule and odd block said: the `Imported` answer
    failed.py     `ImportFailed` and its words; notes.py the warnings; common.py what the readers share
    follow.py     a log still being written, followed; sessions.py a sessions folder listed
    isolated.py   an upload imported in a process of its own, bounded in memory and time

Every format but Loopscope's own yields a history; `derive.trace_from_history`
turns it into the steps a live run would have made, so every view works on it.
A history that breaks the API's pairing rules is kept as it is and each broken
rule is a warning (the pairs view shows the orphans).
"""

from __future__ import annotations

from .derive import trace_from_history
from .failed import ImportFailed
from .files import DEFAULT_MAX_BYTES, MAX_FILES, import_bytes, import_file, import_files, import_path
from .finish import MAX_MESSAGES, MAX_STEPS, Imported, Thread
from .notes import Note

__all__ = ["DEFAULT_MAX_BYTES", "MAX_FILES", "MAX_MESSAGES", "MAX_STEPS", "ImportFailed", "Imported", "Note",
           "Thread", "import_bytes", "import_file", "import_files", "import_path", "trace_from_history"]
