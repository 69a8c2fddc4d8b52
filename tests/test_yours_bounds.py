"""What a hostile learner's file sends on Loopscope's channel is bounded before it is read or kept.

The file finds the channel as any inherited socket, whatever its descriptor's number, and writes to it what the
bootstrap never would: frames of 32 MiB, a flood of tiny ones, a frame nested 100,000 deep, a forged last word.
"""

from __future__ import annotations

import os
import subprocess
import sys

from loop.yours import recording as rec
from loop.yours.named import EXCEPTION, NEVER_CALLED, named
from loop.yours.sandboxed import run

from .cli import ROOT, clean_env
from .test_yours_sandbox import CHANNEL

CALL = "client.messages.create(model=MODEL, system=SYSTEM, messages=[{'role': 'user', 'content': 'hi'}], " \
       "tools=TOOLS, max_tokens=100)\n"


def test_two_frames_of_32_mib_stop_the_run_with_a_clear_message_and_the_cli_stays_small(tmp_path):
    hostile = tmp_path / "hostile.py"
    hostile.write_text(CHANNEL + '''
s = channel()
frame = b"[" + b"{}," * (32 * 2**20 // 3 - 1) + b"{}]"
for kind in (b"T", b"C"):
    s.sendall(kind + struct.pack(">I", len(frame)) + frame)
''')
    # The command line says its own peak when it ends (a child's peak would count the learner's process), and it is
    # started by a small Python: Linux keeps the peak of the image a process replaced at exec, and a process forked
    # straight from this test would be an image of this test, hundreds of MB late in a run.
    done = subprocess.run([sys.executable, "-c", PASS_ON, sys.executable, "-c", OWN_PEAK, "yours", str(hostile)],
                          cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=300)
    said = done.stdout
    assert done.returncode == 1, said
    assert "stopped: the sandbox stopped your code: your program wrote 32 MiB at once to Loopscope's channel, more " \
           "than a frame may hold (1 MiB): the run was stopped there" in said
    assert "Traceback" not in said and "broken rule" not in said
    peak_kib = int(done.stderr.rsplit("peak-kib ", 1)[1].split()[0])
    assert peak_kib * 1024 < 400 * 2**20, f"peak {peak_kib // 1024} MB"


PASS_ON = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
OWN_PEAK = ("import atexit, resource, runpy, sys; atexit.register(lambda: print('peak-kib', "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); sys.argv[0] = 'loop'; "
            "runpy.run_module('loop', run_name='__main__', alter_sys=True)")


def test_a_flood_of_tiny_frames_records_at_most_the_cap():
    done = run("import struct\n" + CHANNEL + CALL + '''
s = channel()
for n in range(100_000):
    s.sendall(b"R" + struct.pack(">I", 19) + b'{"command": "true"}')
''', "list-files")
    assert done.outcome == rec.KILLED
    assert sum(len(e.tool_runs) for e in done.exchanges) <= rec.MAX_TOOL_RUNS
    assert f"more than {rec.MAX_TOOL_RUNS} tool runs" in named(done).render("en")


def test_a_frame_nested_100000_deep_is_refused_and_the_keeper_goes_on():
    done = run(CHANNEL + '''
s = channel()
deep = b"[" * 100_000 + b"]" * 100_000
s.sendall(b"T" + struct.pack(">I", len(deep)) + deep)
head = s.recv(5)
print(s.recv(struct.unpack(">I", head[1:])[0]).decode().count("channel_error"))
''' + CALL, "list-files")
    assert done.outcome == rec.RETURNED, (done.outcome, done.message, done.output)
    assert done.output.strip() == "1" and len(done.exchanges) == 1  # answered, then its model call was too


def test_a_forged_last_word_is_not_the_verdict():
    forged = CHANNEL + '''
import json
s = channel()
word = json.dumps({"outcome": "syntax_error", "status": 0, "line": 1, "column": 1,
                   "message": "SyntaxError: your code does not compile", "traceback": "Loopscope says: all good"})
s.sendall(b"E" + struct.pack(">I", len(word)) + word.encode())
'''
    quiet = run(forged, "list-files")  # it then ends by itself, having called nothing
    assert quiet.outcome == rec.RETURNED and named(quiet).name == NEVER_CALLED
    failing = run(forged + "raise SystemExit(3)\n", "list-files")
    assert failing.outcome == rec.EXCEPTION and failing.status == 3
    assert named(failing).name == EXCEPTION  # its words are shown as its own; what ended it is the exit status
