"""An upload's import in a process of its own, bounded in memory and time.

A file can be built to cost far more to read than its size says: 98 MB of tiny
messages took 2.3 GB and 25 s to import in the server, and two such uploads
from two sessions held 4.27 GB. Here the file goes to a child Python that
limits its own address space (RLIMIT_AS) and CPU time before it reads a byte,
imports it with `import_bytes`, and sends the trace back as a transcript (and
the warnings as notes, to be said in any language: notes.py). What
the child runs out of ends the child, not the server; at most `SLOTS` imports
run at once, so a class uploading together queues instead of adding up.

`import_files_isolated` does the same for a session given as several files (a
Claude Code log with its sub-agents' logs) or a zip of them.

`import_bytes` stays the in-process way for files that are the user's own
(the command line) and for the built-in samples.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from ..files import transcript
from ..text.catalogs import N_
from .failed import NAMED, OVER_UPLOAD, THE_FILE, THE_FILES, ImportFailed, listed, too_big
from .files import DEFAULT_MAX_BYTES, MAX_FILES, import_bytes, import_files
from .finish import Imported, Thread
from .notes import Note

MEMORY_BYTES = 1536 * 2**20  # the child's address space: Python, the file, and what parsing it makes
CPU_SECONDS = 60
SLOTS = 2  # imports at once on this server
ANSWER_FACTOR = 8  # a trace may take this many times its file's size (steps repeat what the messages hold) ...
ANSWER_FLOOR = 64 * 2**20  # ... or this much: MAX_MESSAGES tiny messages make about 20 MB of steps

_slots = threading.BoundedSemaphore(SLOTS)
ROOT = Path(__file__).resolve().parents[2]


def import_isolated(data: bytes, name: str = "", *, thread: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                    memory_bytes: int = MEMORY_BYTES, cpu_seconds: int = CPU_SECONDS) -> Imported:
    """`import_bytes(data, name, ...)`, run in a child process with `memory_bytes` of address space at most."""
    label = name or Note(THE_FILE)
    if len(data) > max_bytes:  # refused before a process is started for it
        raise ImportFailed(NAMED, name=label, said=too_big(len(data), max_bytes))
    return _in_child({"name": name}, data, label, thread, max_bytes, memory_bytes, cpu_seconds)


def import_files_isolated(files: list[tuple[str, bytes]], *, thread: str | None = None,
                          max_bytes: int = DEFAULT_MAX_BYTES, memory_bytes: int = MEMORY_BYTES,
                          cpu_seconds: int = CPU_SECONDS) -> Imported:
    """`import_files(files, ...)`, run in a child process with `memory_bytes` of address space at most."""
    label = listed([name for name, _ in files]) or Note(THE_FILES)
    total = sum(len(data) for _, data in files)
    if total > max_bytes:  # refused before a process is started for them (a zip's contents are checked there)
        raise ImportFailed(NAMED, name=label, said=too_big(total, max_bytes))
    if len(files) > MAX_FILES:
        raise ImportFailed(OVER_UPLOAD, n=len(files), limit=MAX_FILES)
    head = {"names": [name for name, _ in files], "sizes": [len(data) for _, data in files]}
    return _in_child(head, b"".join(data for _, data in files), label, thread, max_bytes, memory_bytes, cpu_seconds)


def _in_child(head: dict, data: bytes, label: str | Note, thread: str | None, max_bytes: int, memory_bytes: int,
              cpu_seconds: int) -> Imported:
    header = json.dumps({**head, "thread": thread, "max_bytes": max_bytes, "memory_bytes": memory_bytes,
                         "cpu_seconds": cpu_seconds}).encode()
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    env["PYTHONPATH"] = str(ROOT)
    with _slots:
        try:
            done = subprocess.run([sys.executable, "-m", "loop.importers.isolated"], input=header + b"\n" + data,
                                  capture_output=True, env=env, cwd=ROOT, timeout=cpu_seconds * 2)
        except subprocess.TimeoutExpired:
            raise ImportFailed(N_("{name}: the import took longer than {seconds} s and was stopped"), name=label,
                               seconds=cpu_seconds * 2) from None
    if len(done.stdout) > max(ANSWER_FACTOR * len(data), ANSWER_FLOOR):  # what the server would then hold
        raise ImportFailed(N_("{name}: it makes a trace {times} times its own size, more than Loopscope keeps for "
                              "one upload; nothing was read"), name=label,
                           times=round(len(done.stdout) / max(len(data), 1)))
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):  # the child died: out of memory or CPU time, most likely
        raise ImportFailed(N_("{name}: reading it needs more than Loopscope gives one upload ({mib} MiB of memory, "
                              "{seconds} s of CPU); nothing was read (the import stopped with status {status})"),
                           name=label, mib=memory_bytes // 2**20, seconds=cpu_seconds, status=done.returncode)
    if "error" in answer:  # a Note, to say in any language (a plain string from an older child)
        error = answer["error"]
        raise ImportFailed(Note.from_json(error) if isinstance(error, dict) else str(error))
    trace = transcript.from_dict(answer["trace"], strict=False)
    return Imported(trace, answer["format"], [Note.from_json(n) for n in answer["notes"]],
                    [Thread(*t) for t in answer["threads"]], answer["thread"], answer.get("logs") or [])


def _child() -> None:
    """The child's side: limits first, then the import, then the answer as one JSON object on stdout."""
    import gc
    import resource

    header = json.loads(sys.stdin.buffer.readline())
    data = sys.stdin.buffer.read()
    memory = header["memory_bytes"]
    # What running out of memory answers, made before the limit: when it happens, what the import built is still
    # held (by the exception's traceback, or by the answer being written), and making anything then may fail too.
    named = header.get("name") or listed(header.get("names") or []) or Note(THE_FILE)
    out_of_memory = json.dumps({"error": Note(N_("{name}: reading it needs more than the {mib} MiB of memory "
                                                 "Loopscope gives one upload; nothing was read"),
                                              name=named, mib=memory // 2**20).to_json()}).encode()
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (header["cpu_seconds"], header["cpu_seconds"]))
    # An import makes a few hundred thousand small objects at once, none of them garbage yet: pausing
    # the cyclic collector saves re-scanning them, about a quarter of the time. This process is the
    # import's own, so nothing else is slowed or starved of collection.
    gc.disable()
    try:
        if "names" in header:  # several files: cut the data back into them
            files, at = [], 0
            for name, size in zip(header["names"], header["sizes"]):
                files.append((name, data[at: at + size]))
                at += size
            del data
            imported = import_files(files, thread=header["thread"], max_bytes=header["max_bytes"])
            del files
        else:
            imported = import_bytes(data, header["name"], thread=header["thread"], max_bytes=header["max_bytes"])
            del data
        answer = {"format": imported.format, "notes": [note.to_json() for note in imported.notes],
                  "threads": imported.threads, "thread": imported.thread, "logs": imported.logs, "trace": transcript.to_dict(imported.trace)}
        out = json.dumps(answer, ensure_ascii=False).encode()
    except ImportFailed as exc:
        out = json.dumps({"error": exc.note.to_json()}).encode()
    except MemoryError:
        out = out_of_memory
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    _child()
