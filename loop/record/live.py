"""The stages of a recording as they settle, printed once each (and journaled, one JSON line a step).

The stages are read from the wire (loop/yours/reading.py): what the loop did after a call shows only when its next
request comes. So after each request, the recording is read again, and the main loop's steps up to its newest call
are said: those no later request changes. A call still being answered is left out until it is. The rest (the
last answer kept, the loop's end) is said when the command has ended.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..engine.trace import MAIN
from ..files import journal, runs
from ..text.catalogs import N_, say, size_words
from ..views.narrate import describe
from ..yours.reading import Yours, read
from ..yours.recorder import Recorder
from ..yours.recording import Recording

SIDE_LINE = N_("side call: {method} {path} → {status} ({what})")
SIDE_WHAT = {"count_tokens": N_("token counting"), "not_a_model_call": N_("not a model call")}
JOURNAL_STOPPED = N_("the journal {path} has reached the size a run may hold ({size}, {variable}): it stops "
                     "here; the recording goes on")


class Live:
    """Says each settled step once through `say_line`, and appends it to the journal `log` (an open binary file)."""

    def __init__(self, recorder: Recorder, recorded: dict, lang: str, say_line: Callable[[str], None],
                 log=None, log_path: str = ""):
        self.recorder, self.recorded, self.lang, self.say_line = recorder, recorded, lang, say_line
        self.log, self.log_path = log, log_path
        self.shown = 0  # steps said
        self.sides = 0  # side calls said
        self.head = False  # the journal's first line written
        self.lock = threading.Lock()

    def snapshot(self, final: bool) -> Recording:
        """The recording as it stands; before the end, without a call still being answered (nor those after it)."""
        with self.recorder.lock:
            copy = Recording.from_dict(self.recorder.recording.to_dict())
        if not final:
            waiting = next((k for k, e in enumerate(copy.exchanges) if e.response is None and e.error is None), None)
            if waiting is not None:
                del copy.exchanges[waiting:]
        return copy

    def update(self, final: bool = False) -> Yours:
        """Read the recording again and say what settled since; with `final`, everything."""
        with self.lock:
            recording = self.snapshot(final)
            yours = read(recording, self.recorded)
            trace = yours.trace
            for side in recording.side_calls[self.sides:]:
                self.say_line(say(self.lang, SIDE_LINE, method=side.get("method"), path=side.get("path"),
                                  status=side.get("status"),
                                  what=say(self.lang, SIDE_WHAT.get(side.get("what"), str(side.get("what"))))))
            self.sides = len(recording.side_calls)
            upto = 0 if not recording.exchanges else len(trace.steps) if final else settled(trace)
            for i in range(self.shown, upto):
                self.say_line(describe(trace, i, self.lang))
                self._journal(trace, i)
            self.shown = max(self.shown, upto)
            return yours

    def _journal(self, trace, index: int) -> None:
        if self.log is None:
            return
        lines = b""
        if not self.head:
            lines += (journal.head_line(trace.meta, {}) + "\n").encode()
        lines += (journal.step_line(trace, index) + "\n").encode()
        limit = runs.run_max_bytes()
        if self.log.tell() + len(lines) > limit:
            self.say_line("error: " + say(self.lang, JOURNAL_STOPPED, path=self.log_path, size=size_words(limit),
                                          variable=runs.RUN_MAX_VARIABLE))
            self.log.close()
            self.log = None
            return
        self.head = True
        self.log.write(lines)
        self.log.flush()


def settled(trace) -> int:
    """How many steps no later request changes: the main loop's, up to its newest call (none while no call
    offers tools: the loop may still start at a later call)."""
    calls = [i for i, s in enumerate(trace.steps) if s.thread == MAIN and s.stage in ("call_model", "refused")]
    if not calls or not (trace.steps[calls[0]].detail.request or {}).get("tools"):
        return 0
    return calls[-1] + 1
