"""Which line of a learner's code made each message their loop sent: watched INSIDE their process (inside.py).

A line tracer (sys.settrace) runs on the learner's own files only; a library's frames are not traced. At each line
of theirs, the lists their frame holds (its locals, its module's globals, and one level into a dict or into an
object of a class of theirs: `state["messages"]`, `state.messages`) are compared with what they held at the line
before. An element first seen in one of them (a message, a content block) is marked with the line that put it
there: the line that frame ran just before. A list handed to a function of theirs is marked at the caller's line.

At a model call, the list sent as `messages` is found among the lists of their frames (its messages' roles, aligned
from the end: a copy or a system message put in front is still found), and each message sent, and each block of its
content, is given the line that made it (`sent`). The frame that held it is the loop's: the line it returns from
is kept (`left`), for a loop that returned where it should have gone on.

What this reports is the learner's program's word: the keeper outside decides the rule from the wire, and the line
only points at their code. Bounded: long lists are not watched, a run's marks and traced lines are counted, and past
their most watching stops (the lines after are not known). The standard library only; nothing of Loopscope.
"""

import sys
import threading

PLAIN = (str, int, float, bool, bytes, type(None))
LIST_MOST = 5000  # a list longer than this is not watched: a messages list is far shorter
LISTS_MOST = 20_000  # lists remembered; past it, those never sent are forgotten
MARKS_MOST = 100_000  # elements marked with their line; past it, later ones are not
LINES_MOST = 300_000  # lines of theirs traced; past it, watching stops
SCANNED_MOST = 5_000_000  # elements of their lists looked at, in all; past it, watching stops (a list reordered
                          # at every line costs its length each time)
INNER_MOST = 64  # members of a dict or an object looked into for lists
SENT_MOST = 64  # messages of a request reported, the last ones
BLOCKS_MOST = 64  # blocks of a message reported


def _plain(value) -> bool:
    """A word or a number (not a message): by its type, so that no code of theirs runs."""
    return issubclass(type(value), PLAIN)


def _field(message, name: str) -> object:
    """A message's `name` (a dict's key, or an object's attribute as it holds it: an SDK's message), read without
    running any code of theirs (no property, no __getattr__)."""
    if type(message) is dict:
        return message.get(name)
    try:
        members = object.__getattribute__(message, "__dict__")
    except Exception:  # noqa: BLE001 - an object without members of its own
        return None
    return members.get(name) if type(members) is dict else None


def _role(message) -> object:
    return _field(message, "role")


def _content(message) -> object:
    return _field(message, "content")


class Watcher:
    """The learner's lists, watched line by line; `theirs(filename)` says which frames are theirs, `shown(filename)`
    how their folder names a file."""

    def __init__(self, theirs, shown):
        self.theirs, self.shown = theirs, shown
        self.codes = {}  # code object -> whether it is of their files
        self.classes = {}  # type -> whether it is a class of theirs (its objects are looked into)
        self.lists = {}  # id(list) -> [the list, its length, id of its first and of its last element, ever sent]
        self.marks = {}  # id(element) -> (the element, file, line): the line that put it into one of their lists
        self.previous = {}  # id(frame) -> the line that frame ran last
        self.lines = 0
        self.scanned = 0
        self.stopped = False
        self.loop = None  # the frame that held the list sent last
        self.left = None  # (file, line) where that frame returned after the last call

    # -- tracing --
    def start(self) -> None:
        sys.settrace(self._call)
        threading.settrace(self._call)
        # Their program sees no tracer of ours: a check for a debugger (python-dotenv's, which then looks for .env
        # in the working directory instead of beside the file) finds none, as when they run it themselves.
        self._gettrace = sys.gettrace
        sys.gettrace = self._their_gettrace

    def _their_gettrace(self):
        found = self._gettrace()
        return None if found == self._call else found

    def stop(self) -> None:
        self.stopped = True
        sys.settrace(None)
        threading.settrace(None)
        if getattr(self, "_gettrace", None) is not None:
            sys.gettrace = self._gettrace

    def _mine(self, code) -> bool:
        mine = self.codes.get(code)
        if mine is None:
            mine = self.codes[code] = bool(self.theirs(code.co_filename))
        return mine

    def _call(self, frame, event, arg):
        if self.stopped or not self._mine(frame.f_code):
            return None
        caller = frame.f_back
        if caller is not None and self._mine(caller.f_code):  # what is handed in was made at the caller's line
            self.look(frame, self.shown(caller.f_code.co_filename), caller.f_lineno)
        else:  # made before any line of theirs ran (the bootstrap's state): seen, not theirs
            self.look(frame, None, None)
        return self._local

    def _local(self, frame, event, arg):
        if self.stopped:
            return None
        if event == "line":
            self.lines += 1
            if self.lines > LINES_MOST:
                self.stop()
                return None
            line = self.previous.get(id(frame))
            self.previous[id(frame)] = frame.f_lineno
            if line is not None:
                self.look(frame, self.shown(frame.f_code.co_filename), line)
        elif event == "return":
            self.previous.pop(id(frame), None)
            file = self.shown(frame.f_code.co_filename)
            self.look(frame, file, frame.f_lineno)
            if frame is self.loop:
                self.loop = None
                if frame.f_code.co_name != "<module>":  # a function's return; a script's end is no return
                    self.left = (file, frame.f_lineno)
        return self._local

    # -- looking at a frame's lists --
    def look(self, frame, file, line) -> None:
        """Mark what is new in the lists `frame` holds with (file, line); (None, None): seen, made by no line."""
        try:
            names = frame.f_locals
            self._scan(names, file, line)
            if frame.f_globals is not names:
                self._scan(frame.f_globals, file, line)
        except Exception:  # noqa: BLE001 - an object of theirs that will not be looked at is not watched
            pass

    def candidates(self, names: dict):
        """The lists among `names`' values, and one level into a dict or an object of theirs."""
        for name, value in list(names.items()):
            if type(name) is str and name.startswith("__"):
                continue
            kind = type(value)
            if kind is list:
                yield value
            elif issubclass(kind, dict):  # by its type: no code of theirs runs (an object's __class__ would)
                if len(value) <= INNER_MOST:
                    for inner in list(value.values()):
                        if type(inner) is list:
                            yield inner
            elif not issubclass(kind, PLAIN) and self._their_class(kind):
                members = object.__getattribute__(value, "__dict__")
                if type(members) is dict and len(members) <= INNER_MOST:
                    for inner in list(members.values()):
                        if type(inner) is list:
                            yield inner

    def _their_class(self, kind: type) -> bool:
        mine = self.classes.get(kind)
        if mine is None:
            module = sys.modules.get(getattr(kind, "__module__", None) or "")
            mine = self.classes[kind] = bool(self.theirs(str(getattr(module, "__file__", None) or "")))
        return mine

    def _scan(self, names: dict, file, line) -> None:
        for found in self.candidates(names):
            self._list(found, file, line)

    def _list(self, found: list, file, line) -> None:
        n = len(found)
        if not n or n > LIST_MOST:
            return
        first, last = found[0], found[-1]
        seen = self.lists.get(id(found))
        if seen is not None and seen[0] is found:
            if seen[1] == n and seen[2] == id(first) and seen[3] == id(last):
                return
            # grown at its end only: what was there is marked already
            start = seen[1] - 1 if n > seen[1] and seen[2] == id(first) else 0
            seen[1:4] = [n, id(first), id(last)]
        else:
            if _plain(first) and _plain(last):
                return  # words or numbers, no messages: not remembered
            if len(self.lists) >= LISTS_MOST:
                self.lists = {k: v for k, v in self.lists.items() if v[4]}
            self.lists[id(found)] = [found, n, id(first), id(last), False]
            start = 0
        self.scanned += n - start
        if self.scanned > SCANNED_MOST:
            self.stop()
            return
        for element in found[start:]:
            if _plain(element) or id(element) in self.marks:
                continue
            self._mark(element, file, line)
            content = _content(element)
            if type(content) is list:  # a message made here: the blocks it brought, unless made before
                for block in content[:LIST_MOST]:
                    if not _plain(block) and id(block) not in self.marks:
                        self._mark(block, file, line)

    def _mark(self, element, file, line) -> None:
        if len(self.marks) < MARKS_MOST:
            self.marks[id(element)] = (element, file, line)

    # -- at a model call --
    def sent(self, messages: list, frame) -> list:
        """Where each of `messages` (the request's, as JSON) was made: [{"i", "file", "line", "blocks": [[b, line,
        file], ...]}] for those known, the last SENT_MOST; `frame` is where their code made the call."""
        if self.stopped or not isinstance(messages, list) or not messages:
            return []
        wanted = [(m.get("role"), type(m.get("content")) is str) if isinstance(m, dict) else (None, False)
                  for m in messages]
        best, owner, size = None, None, 0
        try:
            while frame is not None:
                if self._mine(frame.f_code):
                    file = self.shown(frame.f_code.co_filename)
                    self.look(frame, file, frame.f_lineno)  # what the call's own line made
                    for names in (frame.f_locals, frame.f_globals):
                        for found in self.candidates(names):
                            n = self._aligned(found, wanted)
                            if n > size:
                                best, owner, size = found, frame, n
                frame = frame.f_back
        except Exception:  # noqa: BLE001 - their objects, looked at: anything may fail
            return []
        if best is None or size < len(messages) - 2:  # not the list sent: a copy of it made elsewhere
            return []
        record = self.lists.get(id(best))
        if record is not None and record[0] is best:
            record[4] = True
        self.loop, self.left = owner, None
        try:
            return self._told(best, size, len(messages))
        except Exception:  # noqa: BLE001 - their objects: whatever fails, the call goes on without the lines
            return []

    def _told(self, best: list, size: int, sent: int) -> list:
        out = []
        for t in range(max(0, size - SENT_MOST), size):
            i = sent - size + t
            message = best[len(best) - size + t]
            said = self._where(message)
            blocks = []
            content = _content(message)
            if type(content) is list:
                for b, block in enumerate(content[:BLOCKS_MOST]):
                    where = self._where(block)
                    if where is not None:
                        blocks.append([b, where[1], where[0]])
            if said is not None or blocks:
                out.append({"i": i, "file": said[0] if said else None, "line": said[1] if said else None,
                            "blocks": blocks})
        return out

    def _where(self, element):
        mark = self.marks.get(id(element))
        if mark is None or mark[0] is not element or mark[2] is None:
            return None
        return mark[1], mark[2]

    @staticmethod
    def _aligned(found: list, wanted: list) -> int:
        """How many messages, from the end, `found` holds as the request does (role, and a text or a list)."""
        n = 0
        while n < len(found) and n < len(wanted):
            message = found[-1 - n]
            role, text = wanted[-1 - n]
            if str(_role(message)) != str(role) or (type(_content(message)) is str) != text:
                break
            n += 1
        return n
