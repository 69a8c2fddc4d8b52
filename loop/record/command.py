"""The command, run as the person runs it: their terminal (stdin, stdout, stderr), its exit status, its
environment, with the model's base URLs pointing at the recording endpoint.

`ANTHROPIC_BASE_URL` and `OPENAI_BASE_URL` name the endpoint (the OpenAI SDK's base URL holds `/v1`). Offline,
a key variable the person has not set is set to a placeholder, so a client that needs a key starts; it never
leaves the machine. With an upstream the keys are left as they are: the command's own key (or its login) is what
the upstream checks. Loopback is added to NO_PROXY, so a proxy the environment names does not stand between the
command and the endpoint.

While the command runs, Ctrl-C is the command's: the terminal sends it to the command (it runs in the same process
group) and the recording waits for the command to end, then keeps what it did. A termination signal sent to the
recorder is passed on to the command.
"""

from __future__ import annotations

import os
import signal
import subprocess

from ..engine.scripted import PLACEHOLDER_KEY

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def environment(base: str, upstream: bool, env: dict | None = None) -> dict:
    """The command's environment: `env` (default this process's) with the base URLs at `base`."""
    env = dict(os.environ if env is None else env)
    env["ANTHROPIC_BASE_URL"] = base
    env["OPENAI_BASE_URL"] = base + "/v1"
    if not upstream:
        for name in KEYS:
            if not env.get(name):
                env[name] = PLACEHOLDER_KEY
    for name in ("NO_PROXY", "no_proxy"):
        kept = [h for h in (env.get(name) or "").split(",") if h.strip()]
        env[name] = ",".join(kept + [h for h in LOOPBACK if h not in kept])
    return env


def run(command: list[str], env: dict) -> int:
    """Run `command` on this terminal until it ends; its exit status (128 + N when signal N ended it).
    FileNotFoundError / PermissionError when it cannot start."""
    process = subprocess.Popen(command, env=env)

    def pass_on(number, _frame):
        try:
            process.send_signal(number)
        except OSError:
            pass

    kept = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal sends it to the command too
    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGHUP, pass_on)
    try:
        while True:
            try:
                status = process.wait()
                break
            except InterruptedError:
                continue
    finally:
        for number, handler in kept.items():
            signal.signal(number, handler)
    return 128 - status if status < 0 else status
