"""`python -m loop` for the tests: as a real subprocess, or through `loop.__main__.main` in this process.

Starting Python and the SDK takes a second or more a command; the real entry
point keeps a few tests of its own for each command, and the rest call `main`,
the function `python -m loop` calls, with the same arguments and environment,
and read what it printed and its exit status the same way.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra) -> dict:
    """This process's environment without the Anthropic variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return {**env, **extra}


def loop_cli(*commands: list[str], env: dict | None = None) -> list[subprocess.CompletedProcess]:
    """Run `python -m loop ARGS` for each ARGS, all at once, as real subprocesses; their results in order."""
    return start_cli(*commands, env=env)()


def start_cli(*commands: list[str], env: dict | None = None) -> Callable[[], list[subprocess.CompletedProcess]]:
    """Start `python -m loop ARGS` for each ARGS, all at once; call what it returns to wait for their results."""
    procs = [subprocess.Popen([sys.executable, "-m", "loop", *map(str, args)], cwd=ROOT, env=env or clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for args in commands]

    def results() -> list[subprocess.CompletedProcess]:
        done = []
        for args, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=120)
            done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
        return done

    return results


def loop_main(*commands: list[str], env: dict | None = None) -> list[subprocess.CompletedProcess]:
    """The same commands through `main` in this process, one after the other, in `env` (default: `clean_env()`)
    and in the project's folder, as `loop_cli` runs them: what each printed and its exit status."""
    from loop.__main__ import main

    done = []
    for args in commands:
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.dict(os.environ, env or clean_env(), clear=True), contextlib.chdir(ROOT), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
        done.append(subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue()))
    return done
