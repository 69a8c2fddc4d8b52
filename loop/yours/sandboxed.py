"""Run a learner's `agent_loop` in the sandbox the model's commands use, and record it from outside.

The learner's file runs in a child process under the run's Sandbox (bubblewrap, the run's cgroup, no network,
the environment allow-list: docs/security.md), never in the calling process. The child holds one channel, a
socketpair's end it inherits; this process keeps the other end, and a keeper thread answers on it:
- a model call: the request body is recorded, counted (max_calls) and answered by the model outside (the
  scripted model by default; a real model's key is added here, never inside), response or 400 recorded;
- a tool run: the scenario's real tool box runs it here (its commands are sandboxed as every command is) and
  the output is recorded and sent back.
Anything else on the channel is refused. The bootstrap inside is inside.py.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import anthropic

from ..engine import scripted
from ..engine.language import system_prompt
from ..engine.model import MAX_TOKENS, SYSTEM
from ..engine.scenarios import SCENARIOS
from ..engine.toolsets import default_toolbox
from ..text.catalogs import known
from ..tools import seccomp
from ..tools.bash import MARK_VARIABLE, end_namespace, kill_group, namespace_init
from ..tools.workspace import Workspace
from .recording import (EXCEPTION, KILLED, MAX_CALLS, MAX_SECONDS, REFUSED, RETURNED, SYNTAX_ERROR, TIMEOUT,
                        TOO_MANY_CALLS, Exchange, LearnerState, Recording, ToolRun)

INSIDE_DIR = "/opt/loopscope"  # where the bootstrap and the SDK's files are, read-only, as the sandbox sees them
BOOTSTRAP = Path(__file__).with_name("inside.py")
SITE = Path(anthropic.__file__).resolve().parents[1]  # the SDK and what it needs (pydantic, httpx2, …)
FRAME_MOST = 32 * 2**20  # the largest request the channel takes
OUTPUT_MOST = 200_000  # bytes of print output kept; past four times that the run is stopped
SETUP_SECONDS = 60  # for the interpreter and the SDK to start, before the learner's time counts

Model = Callable[[dict], tuple[int, dict]]  # a request body -> (HTTP status, response or error body)


def python() -> str:
    """The interpreter inside: this one where the sandbox sees it (under /usr), else the system's python3.

    A virtual environment's interpreter may sit where the sandbox's user cannot read (a home folder); the
    system's must then be of the same minor version, for the SDK's compiled parts (pydantic-core, jiter).
    """
    mine = os.path.realpath(sys.executable)
    return mine if mine.startswith("/usr/") else "/usr/bin/python3"


def scripted_model(context_window: int | None = None) -> Model:
    """The offline scripted model, in this process: the API's answers and its 400s."""
    return lambda body: scripted.respond(body, context_window=context_window)


def real_model(config) -> Model:
    """A real model's server, reached with the key in `config` (added here, outside the sandbox)."""
    from ..engine.model import make_client

    client = make_client(config)

    def call(body: dict) -> tuple[int, dict]:
        import anthropic

        try:
            response = client.post("/v1/messages", body=body, cast_to=object)
            return 200, response
        except anthropic.APIStatusError as error:
            return error.status_code, error.body if isinstance(error.body, dict) else scripted.error_body(str(error))

    call.name = config.model  # what MODEL is inside
    return call


@dataclass
class _Keeper:
    """The outside end of the channel: answers the child's requests and records them."""

    sock: socket.socket
    recording: Recording
    model: Model
    toolbox: object
    max_calls: int
    start: dict
    ready: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    stop: str | None = None  # an outcome the keeper decided (too_many_calls)
    report: dict | None = None  # the child's last word: how agent_loop ended

    def send(self, message: dict) -> None:
        data = json.dumps(message).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def _exactly(self, n: int) -> bytes | None:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> dict | None:
        head = self._exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">I", head)
        if size > FRAME_MOST:
            return None  # a flood, not a request: the channel closes
        data = self._exactly(size)
        try:
            message = json.loads(data) if data is not None else None
        except ValueError:
            return {}
        return message if isinstance(message, dict) else {}

    def serve(self) -> None:
        try:
            self.send(self.start)
            while True:
                message = self.receive()
                if message is None:
                    return
                kind = message.get("kind")
                if kind == "call":
                    if not self.call(message):
                        return
                elif kind == "tool":
                    self.tool(message)
                elif kind == "ready":
                    self.ready.set()
                elif kind == "end":
                    self.report = message
                    return
                else:
                    self.send({"status": 400, "body": scripted.error_body(
                        "the channel takes model calls and tool runs only", "channel_error")})
        except OSError:
            return
        finally:
            self.ended.set()

    def call(self, message: dict) -> bool:
        if len(self.recording.exchanges) >= self.max_calls:
            self.stop = TOO_MANY_CALLS
            return False
        body = message.get("body")
        state = message.get("state") if isinstance(message.get("state"), dict) else {}
        exchange = Exchange(request=body if isinstance(body, dict) else {"body": body}, line=_line(message),
                            state=LearnerState(state.get("turn_count"), state.get("transition_reason")))
        self.recording.exchanges.append(exchange)
        status, answer = self.model(body)
        if status == 200:
            exchange.response = answer
        else:
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            exchange.error = {"status": status, "type": error.get("type"), "message": error.get("message")}
        reply = {"status": status, "body": answer}
        if status == 200 and isinstance(body, dict) and body.get("stream"):
            reply = {"status": 200, "sse": scripted.sse_bytes(answer).decode()}
        self.send(reply)
        return True

    def tool(self, message: dict) -> None:
        name, tool_input = message.get("name"), message.get("input")
        if not self.recording.exchanges:
            self.send({"output": "Error: no model call has asked for a tool yet.", "is_error": True})
            return
        output = self.toolbox.run(name if isinstance(name, str) else str(name), tool_input)
        use_id = message.get("tool_use_id")
        self.recording.exchanges[-1].tool_runs.append(ToolRun(
            name=str(name), input=tool_input if isinstance(tool_input, dict) else {"input": tool_input},
            output=output.content, is_error=output.is_error, tool_use_id=use_id if isinstance(use_id, str) else None,
            line=_line(message)))
        self.send({"output": output.content, "is_error": output.is_error})


def _line(message: dict) -> int | None:
    line = message.get("line")
    return line if isinstance(line, int) and not isinstance(line, bool) else None


def _state(report: dict) -> LearnerState | None:
    state = report.get("state")
    return LearnerState(state.get("turn_count"), state.get("transition_reason")) if isinstance(state, dict) else None


def run(source: str, scenario: str, lang: str = "en", *, max_calls: int = MAX_CALLS,
        max_seconds: float = MAX_SECONDS, model: Model | None = None, toolset: str | None = None,
        tool_timeout: float = 30.0) -> Recording:
    """Run the learner's `source` (defining agent_loop) on a built-in scenario, in the sandbox; what it did.

    `model`: a request body -> (status, body); the scripted model by default (`real_model(config)` for a real one).
    A child started by `warm` for the same tools is used when one is waiting.
    """
    started = time.perf_counter()
    lang = known(lang)
    chosen = SCENARIOS[scenario]  # KeyError for an unknown one
    recording = Recording(source=source, scenario=scenario, lang=lang)
    spare = _take((chosen.toolset or toolset or "s01", tool_timeout))
    toolbox, child = spare or (default_toolbox(Workspace.make(), tool_timeout, chosen.toolset or toolset or "s01"),
                               None)
    try:
        problem = toolbox.sandbox.problem()
        if problem:
            recording.outcome, recording.message = KILLED, problem
            return recording
        recording.sandbox = toolbox.sandbox.mode
        start = {"kind": "start", "source": source, "task": chosen.task_in(lang),
                 "system": system_prompt(lang, SYSTEM), "tools": toolbox.specs(),
                 "model": getattr(model, "name", scripted.MODEL_NAME), "lang": lang,
                 "max_tokens": min(chosen.max_tokens, MAX_TOKENS)}  # the scenario's own limit cuts the answer
        child = child or _Child(toolbox)
        try:
            _run(recording, toolbox, child, start, model or scripted_model(chosen.context_window), max_calls,
                 max_seconds)
        finally:
            child.close()
    finally:
        toolbox.close()
        recording.seconds = round(time.perf_counter() - started, 3)
    return recording


class _Child:
    """The learner's process, started in the tool box's sandbox holding one end of the channel.

    The bootstrap imports the SDK, then waits to be told what to run: a child can be started before the learner
    presses Run (`warm`).
    """

    def __init__(self, toolbox):
        sandbox = toolbox.sandbox
        sandbox.workspace.prepare()
        bwrapped = sandbox.mode == "bubblewrap"
        site, bootstrap = (f"{INSIDE_DIR}/site-packages", f"{INSIDE_DIR}/inside.py") if bwrapped else (
            str(SITE), str(BOOTSTRAP))
        self.outside, inside = socket.socketpair()
        cgroup = sandbox.cgroup()
        self.step = cgroup.step() if cgroup else None
        info = os.pipe() if self.step is None and bwrapped else None
        rules = seccomp.readable(seccomp.keyring_filter()) if bwrapped else None
        self.mark = os.urandom(8).hex()
        command = f"exec {python()} -I -S -B {bootstrap} {inside.fileno()} {site}"
        argv = sandbox.argv(command, self.step, cpu_seconds=MAX_SECONDS + SETUP_SECONDS,
                            info_fd=info[1] if info else None, rules=rules)
        if bwrapped:  # the bootstrap and the SDK, read-only, at a fixed place (the app's folder is not there)
            at = argv.index("--chdir")
            argv[at:at] = ["--ro-bind", str(BOOTSTRAP), f"{INSIDE_DIR}/inside.py", "--ro-bind", str(SITE), site]
        try:
            self.proc = subprocess.Popen(
                argv, cwd=sandbox.cwd(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env=dict(sandbox.environment(), **{MARK_VARIABLE: self.mark}), start_new_session=True,
                pass_fds=(inside.fileno(),) + ((info[1],) if info else ()) + ((rules,) if rules is not None else ()))
        finally:
            inside.close()
            if info:
                os.close(info[1])
            if rules is not None:
                os.close(rules)
        self.info = info[0] if info else None
        self.namespace = namespace_init(self.info) if info else None

    def kill(self) -> None:
        """Every process of the learner's: its cgroup, or else its group, session, mark and PID namespace."""
        if self.step:
            self.step.kill()
        else:
            kill_group(self.proc.pid, self.mark)
            if self.namespace is not None:
                end_namespace(self.namespace)

    def close(self) -> None:
        if self.step:  # a child closed as soon as it started may not be in its cgroup yet: the kill would miss it
            self.step.joined(lambda: self.proc.poll() is None)
        self.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a last resort: not ended by its cgroup nor by its session and mark
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap's session: its PID namespace ends with it
            self.proc.wait(timeout=10)
        self.outside.close()
        if self.proc.stdout:
            self.proc.stdout.close()
        for fd in (self.info, self.namespace):
            if fd is not None:
                os.close(fd)
        self.info = self.namespace = None
        if self.step:
            self.step.remove()


# Children started ahead of a run, for each (toolset, tool timeout): the interpreter and the SDK's import take
# about 2 s, most of the time from Run to the first step. Check runs an exercise's scenarios at once, one child
# each: `warm(n=...)` keeps that many waiting.
_spares: dict[tuple[str, float], list[tuple[object, _Child]]] = {}
_spares_lock = threading.Condition()  # a Condition: cool() waits on it for the children being started
_warming = [0]  # how many warm() calls are starting a child now


def warm(toolset: str = "s01", tool_timeout: float = 30.0, n: int = 1) -> None:
    """Start children for the next runs with these tools now (a page calls it when it opens), until `n` wait."""
    key = (toolset, tool_timeout)
    with _spares_lock:
        waiting = _spares.pop(key, [])
        ended = [spare for spare in waiting if spare[1].proc.poll() is not None]
        waiting = [spare for spare in waiting if spare not in ended]
        if waiting:  # a key is there only while a child waits under it
            _spares[key] = waiting
        wanted = n - len(waiting) - _warming[0]  # a warm() under way counts as the child it starts
        if wanted <= 0 and not ended:
            return
        _warming[0] += max(wanted, 0)  # cool() waits for them: a child started as the server stops must not outlive it
    for spare in ended:
        _close(spare)
    owed = max(wanted, 0)  # the children this call still has to start (or give up on)
    try:
        while owed:
            toolbox = default_toolbox(Workspace.make(), tool_timeout, toolset)
            if toolbox.sandbox.problem():  # no sandbox here: the others would fail alike
                toolbox.close()
                return
            spare = (toolbox, _Child(toolbox))
            with _spares_lock:
                _spares.setdefault(key, []).append(spare)
                owed -= 1
                _warming[0] -= 1
                _spares_lock.notify_all()
    finally:
        with _spares_lock:
            _warming[0] -= owed
            _spares_lock.notify_all()


def _take(key: tuple[str, float]) -> tuple[object, _Child] | None:
    while True:
        with _spares_lock:
            waiting = _spares.get(key)
            spare = waiting.pop(0) if waiting else None
            if not waiting:
                _spares.pop(key, None)
        if spare is None:
            return None
        if spare[1].proc.poll() is None:
            return spare
        _close(spare)  # it ended while it waited: the next one


def _close(spare: tuple[object, _Child]) -> None:
    toolbox, child = spare
    try:
        child.close()
    finally:
        toolbox.close()


@atexit.register
def cool() -> None:
    """End the children that wait for a run, and remove their workspaces."""
    with _spares_lock:
        _spares_lock.wait_for(lambda: not _warming[0], timeout=60)  # a child being started is ended too
        spares = [spare for waiting in _spares.values() for spare in waiting]
        _spares.clear()
    for spare in spares:
        _close(spare)


def _run(recording: Recording, toolbox, child: _Child, start: dict, model: Model, max_calls: int,
         max_seconds: float) -> None:
    keeper = _Keeper(child.outside, recording, model, toolbox, max_calls, start)
    thread = threading.Thread(target=keeper.serve, daemon=True, name="loopscope-yours-keeper")
    thread.start()
    output, flooded, timed_out = _watch(child.proc, keeper, max_seconds, child.kill)
    child.kill()
    child.proc.wait()
    try:
        child.outside.shutdown(socket.SHUT_RDWR)  # the keeper's read ends
    except OSError:
        pass
    thread.join()
    recording.output = output.decode("utf-8", errors="replace")
    _outcome(recording, keeper, child.proc.returncode, flooded, timed_out)


def _watch(proc: subprocess.Popen, keeper: _Keeper, max_seconds: float, kill) -> tuple[bytes, bool, bool]:
    """Read what the child prints until it and the keeper are done; stop it at the time limit or the output cap."""
    fd = proc.stdout.fileno()
    chunks, size = [], 0
    setup_deadline = time.monotonic() + SETUP_SECONDS
    deadline = exited_at = None
    open_ = True
    try:
        while True:
            now = time.monotonic()
            if deadline is None and keeper.ready.is_set():
                deadline = now + max_seconds
            if now > (deadline or setup_deadline):
                kill()
                return b"".join(chunks)[:OUTPUT_MOST], False, True
            if keeper.stop:
                kill()
                break
            if exited_at is None and proc.poll() is not None and keeper.ended.is_set():
                exited_at = now
            # A process it started may hold the output open after it ended: read a moment more, then stop.
            if exited_at is not None and (not open_ or now - exited_at > 0.5):
                break
            if not open_:
                keeper.ended.wait(0.05)
                continue
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_ = False
                    continue
                chunks.append(chunk)
                size += len(chunk)
                if size > OUTPUT_MOST * 4:
                    kill()
                    return b"".join(chunks)[:OUTPUT_MOST], True, False
    finally:
        proc.stdout.close()
        proc.stdout = None
    return b"".join(chunks)[:OUTPUT_MOST], False, False


def _outcome(recording: Recording, keeper: _Keeper, status: int | None, flooded: bool, timed_out: bool) -> None:
    last = recording.exchanges[-1] if recording.exchanges else None
    report = keeper.report or {}
    if keeper.stop == TOO_MANY_CALLS:
        recording.outcome = TOO_MANY_CALLS
    elif timed_out:
        recording.outcome = TIMEOUT
    elif flooded:
        recording.outcome = KILLED
    elif report.get("outcome") == SYNTAX_ERROR:
        recording.outcome = SYNTAX_ERROR
        recording.error_line, recording.error_column = _line(report), _column(report)
        recording.message = str(report.get("message") or "")
    elif report.get("outcome") == REFUSED and last is not None and (last.error or {}).get("status") == 400:
        recording.outcome = REFUSED  # the keeper saw the refusal itself: the child's word only says the loop stopped
    elif report.get("outcome") in (REFUSED, EXCEPTION):
        recording.outcome = EXCEPTION
        recording.traceback = str(report.get("traceback") or "") or None
        recording.error_line = _line(report)
        recording.message = str(report.get("message") or "")
    elif report.get("outcome") == RETURNED:
        recording.outcome = RETURNED
    else:  # it ended without a word: killed by a limit, or it could not start (its last line says why)
        recording.outcome = KILLED
        said = recording.output.strip().splitlines()
        recording.message = said[-1] if said and not keeper.ready.is_set() else (
            f"the process ended with status {status}" if status is not None else None)
    recording.final_state = _state(report)


def _column(report: dict) -> int | None:
    column = report.get("column")
    return column if isinstance(column, int) and not isinstance(column, bool) else None
