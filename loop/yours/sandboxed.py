"""Run a learner's program in the sandbox the model's commands use, and record it from outside.

The learner's file runs in a child process under the run's Sandbox (bubblewrap, the run's cgroup, no network,
the environment allow-list: docs/security.md), never in the calling process, as they run it themselves
(inside.py: `python FILE` or `python -m package.module`, their project's files read-only at /project, the
workspace its working directory). The child holds one channel, a socketpair's end it inherits; this process
keeps the other end, and a keeper thread answers on it:
- a model call (any HTTP request the program makes, routed in-process by intercept.py): answered by path by the
  recorder (recorder.py: the Messages API or OpenAI Chat Completions, the scripted model by default; a real
  model's key is added here, never inside), the request and the response or the API's 400 recorded;
- a tool run through the given `run_tool` / `run_bash`: the scenario's real tool box runs it here (its commands
  sandboxed as every command is), recorded and sent back;
- a report: a command the program's own code ran (Python's audit hooks see subprocess and os.system), its
  line, and at the end its traceback: the program's word, recorded as theirs;
- anything else is refused.
Every frame is bounded by its kind before it is read (a tool or report frame 1 MiB, a model call the model's
cap), and so are the tool runs and the bytes a recording holds: past a bound the run is stopped and says why.
How the run ended is what the keeper saw: the calls, the API's refusals, the process's exit status, the clock;
whether the file compiles is checked here, before anything runs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..engine import scripted, wire
from ..engine.language import system_prompt
from ..engine.defaults import MAX_TOKENS, SYSTEM
from ..engine.scenarios import SCENARIOS
from ..engine.toolsets import default_toolbox
from ..text.catalogs import N_, Note, known, size_words
from ..text.redact import HIDDEN
from ..tools import seccomp
from ..tools.bash import MARK_VARIABLE, end_namespace, kill_group, namespace_init
from ..tools.rights import sandbox_user
from ..tools.sandbox import start
from ..tools.workspace import Workspace, workspaces_root
from . import recording as rec
from .program import Program, environment, PLACEHOLDER
from .lines import checked_place
from .recorder import Recorder, call_most
from .recording import (EXCEPTION, KILLED, MAX_CALLS, MAX_SECONDS, MISSING_MODULE, REFUSED, RETURNED, SYNTAX_ERROR,
                        TIMEOUT, TOO_MANY_CALLS, LearnerState, Recording, ToolRun)
from .slots import SLOTS

log = logging.getLogger("loopscope.yours")
log.addHandler(logging.NullHandler())

INSIDE_DIR = "/opt/loopscope"  # where the bootstrap and the SDK's files are, read-only, as the sandbox sees them
PROJECT_DIR = "/project"  # where the learner's files are, read-only, as the sandbox sees them
BOOTSTRAP = Path(__file__).with_name("inside.py")
INTERCEPT = Path(__file__).with_name("intercept.py")
WATCHING = Path(__file__).with_name("watching.py")
# the SDKs and what they need (pydantic, httpx2, …), found without importing one (it costs a second)
SITE = Path(importlib.util.find_spec("anthropic").origin).resolve().parents[1]
FRAME_MOST = 2**20  # a tool or report frame
FRAMES_MOST = 5_000  # frames of any kind a run: a flood of tiny ones stops here
OUTPUT_MOST = 200_000  # bytes of print output kept; past four times that the run is stopped
SETUP_SECONDS = 60  # for the interpreter and the SDK to start, before the learner's time counts

Model = Callable[[dict], tuple[int, dict]]  # a request body -> (HTTP status, response or error body)

# Why the keeper stopped a run (said in the page's language; the values are data)
FRAME_TOO_LARGE = N_("your program wrote {size} at once to Loopscope's channel, more than a frame may hold ({most}): "
                     "the run was stopped there")
TOO_MANY_FRAMES = N_("your program wrote more than {n} frames to Loopscope's channel: the run was stopped there")
TOO_MANY_TOOL_RUNS = N_("more than {n} tool runs: the run was stopped there")
ENDED_WITH = N_("the process ended with status {status}")
MISSING = N_("No module named '{name}': {name} is not available in the sandbox (it has: {has}, …). If {name} is a "
             "module of your own, run the file from your project folder, or give the page the folder.")
KEEPER_FAILED = N_("Loopscope could not read what your program sent: {error}")


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
    """A real model's server, reached with the key in `config` (added here, outside the sandbox). A key the
    server lends (config.allowance) is counted against its spending limits (loop/engine/keys.py) before each call
    and charged with what it used after: a call past a limit is not sent, and answered 429 with why."""
    import anthropic

    from ..engine.keys import KeyRefused
    from ..engine.model import make_client

    client = make_client(config)

    def call(body: dict) -> tuple[int, dict]:
        if config.allowance is not None:
            try:
                config.allowance.before_call()
            except KeyRefused as exc:
                return 429, scripted.error_body(str(exc), "rate_limit_error")
        try:
            response = client.post("/v1/messages", body=body, cast_to=object)
        except anthropic.APIStatusError as error:
            return error.status_code, error.body if isinstance(error.body, dict) else scripted.error_body(str(error))
        except anthropic.APIError as error:  # no answer at all: said as the API would, never a crash of the keeper
            return 502, scripted.error_body(str(error), "api_error")
        if config.allowance is not None and isinstance(response, dict):
            config.allowance.after_call(response.get("usage"))
        return 200, response

    call.name = config.model  # what MODEL is inside
    return call


def available() -> list[str]:
    """The modules a program may import in the sandbox besides the standard library: the SDKs' folder's."""
    names = []
    for entry in sorted(SITE.iterdir()) if SITE.is_dir() else []:
        name = entry.name
        if name.startswith(("_", ".")) or name.endswith((".dist-info", ".pth", ".libs", ".egg-info")):
            continue
        names.append(name.removesuffix(".py").split(".")[0])
    return names


FIRST = ("anthropic", "openai", "python-dotenv", "httpx2", "requests", "urllib3", "pydantic")


def missing_words(name: str) -> Note | None:
    """The words for a module the program could not import, when it really is not in the sandbox."""
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in available():
        return None
    return Note(MISSING, name=name, has=", ".join(FIRST))


def compiles(program: Program) -> SyntaxError | None:
    """The file's syntax error, found here, outside the sandbox (None: it compiles). Only the keeper says so."""
    try:
        compile(program.source, program.main, "exec", dont_inherit=True)
    except SyntaxError as error:
        return error
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, a nesting too deep for the parser
        found = SyntaxError(str(error) or type(error).__name__)
        found.lineno, found.offset = 1, 1
        return found
    return None


@dataclass
class _Keeper:
    """The outside end of the channel: answers the child's requests and records what it saw."""

    sock: socket.socket
    recording: Recording
    recorder: Recorder
    toolbox: object
    start: dict
    ready: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    stop: str | None = None  # an outcome the keeper decided (too_many_calls, refused, killed)
    said: Note | None = None  # why, when it stopped the run
    report: dict | None = None  # the child's last word: its traceback and state (theirs, shown as theirs)
    frames: int = 0
    tool_runs: int = 0

    def send(self, kind: bytes, payload: bytes) -> None:
        self.sock.sendall(kind + struct.pack(">I", len(payload)) + payload)

    def _exactly(self, n: int) -> bytes | None:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def halt(self, outcome: str, note: str, **values) -> None:
        if self.stop is None:
            self.stop, self.said = outcome, Note(note, **values)

    def serve(self) -> None:
        try:
            self.send(b"S", json.dumps(self.start).encode())
            while self.stop is None:
                head = self._exactly(5)
                if head is None:
                    return
                kind, (size,) = head[:1], struct.unpack(">I", head[1:])
                most = call_most() + FRAME_MOST if kind == b"C" else FRAME_MOST  # bounded before it is read
                if size > most:
                    self.halt(KILLED, FRAME_TOO_LARGE, size=size_words(size), most=size_words(most))
                    return
                data = self._exactly(size)
                if data is None:
                    return
                self.frames += 1
                if self.frames > FRAMES_MOST:
                    self.halt(KILLED, TOO_MANY_FRAMES, n=FRAMES_MOST)
                    return
                try:
                    if not self.handle(kind, data):
                        return
                except (ValueError, TypeError, KeyError, AttributeError, RecursionError, struct.error) as exc:
                    # a frame that is no frame of ours: refused, and the keeper goes on
                    if kind in (b"C", b"T"):
                        self.send(b"A", _with_body({"status": 400, "content_type": "application/json"},
                                                   json.dumps(scripted.error_body(
                                                       f"the channel could not read this frame ({type(exc).__name__})",
                                                       "channel_error")).encode()))
        except OSError:
            return
        except Exception as exc:  # noqa: BLE001 - the keeper's thread never dies without saying why
            log.exception("the keeper of a learner's run failed")
            self.halt(KILLED, KEEPER_FAILED, error=f"{type(exc).__name__}: {exc}"[:300])
        finally:
            self.ended.set()

    def handle(self, kind: bytes, data: bytes) -> bool:
        """Answer one frame; False when the run is over for the keeper."""
        if kind == b"C":
            return self.call(data)
        if kind == b"T":
            self.tool(data)
        elif kind == b"R":
            self.ran(data)
        elif kind == b"Y":
            self.ready.set()
        elif kind == b"E":  # its last word, it says; the keeper reads on until the channel closes
            report = json.loads(data)
            self.report = report if isinstance(report, dict) else {}
        return self.stop is None  # any other kind: not answered, counted among the frames

    def call(self, data: bytes) -> bool:
        header, body = _split_body(data)
        answer = self.recorder.call(str(header.get("method", "POST")), str(header.get("url", "")), body,
                                    line=header.get("line"), file=header.get("file"), state=header.get("state"),
                                    made=header.get("made"))
        if answer is None:
            stop = self.recorder.stop
            self.halt(stop.outcome, stop.note, **stop.values)
            return False
        if self.recorder.refused():  # the API refused it: the loop broke a rule here, and the run ends there.
            self.stop = REFUSED  # Not answered: the program's own traceback of the 400 would only race its ending
            return False
        self.send(b"A", _with_body({"status": answer.status, "reason": "Loopscope",
                                    "content_type": answer.content_type}, answer.data))
        return True

    def counted(self) -> bool:
        self.tool_runs += 1
        if self.tool_runs > rec.MAX_TOOL_RUNS:
            self.halt(KILLED, TOO_MANY_TOOL_RUNS, n=rec.MAX_TOOL_RUNS)
            return False
        return True

    def tool(self, data: bytes) -> None:
        message = json.loads(data)
        if not isinstance(message, dict) or not self.counted():
            return
        name, tool_input = message.get("name"), message.get("input")
        if not self.recording.exchanges:
            self.send(b"A", json.dumps({"output": "Error: no model call has asked for a tool yet.",
                                        "is_error": True}).encode())
            return
        output = self.toolbox.run(name if isinstance(name, str) else str(name), tool_input)
        use_id = message.get("tool_use_id")
        if not self.recorder.count(len(output.content.encode("utf-8", "replace"))):
            self.halt(self.recorder.stop.outcome, self.recorder.stop.note, **self.recorder.stop.values)
        self.recording.exchanges[-1].tool_runs.append(ToolRun(
            name=str(name)[:200], input=tool_input if isinstance(tool_input, dict) else {"input": tool_input},
            output=output.content, is_error=output.is_error, tool_use_id=use_id if isinstance(use_id, str) else None,
            line=_line(message), file=_file(message)))
        self.send(b"A", json.dumps({"output": output.content, "is_error": output.is_error}).encode())

    def ran(self, data: bytes) -> None:
        """A command the program's own code ran, as it reports it: kept as its word, on the call before it."""
        message = json.loads(data)
        if not isinstance(message, dict) or not self.counted() or not self.recording.exchanges:
            return
        command = message.get("command")
        if not isinstance(command, str) or not self.recorder.count(len(command)):
            return
        self.recording.exchanges[-1].tool_runs.append(ToolRun(
            name="command", input={"command": command[:2000]}, output="", by=rec.BY_PROGRAM, line=_line(message),
            file=_file(message)))


def _with_body(header: dict, body: bytes) -> bytes:
    head = json.dumps(header).encode()
    return struct.pack(">I", len(head)) + head + body


def _split_body(payload: bytes) -> tuple[dict, bytes]:
    (size,) = struct.unpack(">I", payload[:4])
    if size > FRAME_MOST:
        raise ValueError("header too large")
    header = json.loads(payload[4:4 + size])
    if not isinstance(header, dict):
        raise ValueError("header is not an object")
    return header, payload[4 + size:]


def _line(message: dict) -> int | None:
    line = message.get("line")
    return line if isinstance(line, int) and not isinstance(line, bool) else None


def _file(message: dict) -> str | None:
    file = message.get("file")
    return file[:300] if isinstance(file, str) else None


def _state(report: dict) -> LearnerState | None:
    state = report.get("state")
    return LearnerState(state.get("turn_count"), state.get("transition_reason")) if isinstance(state, dict) else None


def run(source: str | Program, scenario: str, lang: str = "en", *, max_calls: int = MAX_CALLS,
        max_seconds: float = MAX_SECONDS, model: Model | None = None, toolset: str | None = None,
        tool_timeout: float = 30.0, owner: object = None, on_wait: Callable[[int], None] | None = None) -> Recording:
    """Run the learner's program (a source, the page's one file; or a Program with its project) on a built-in
    scenario, in the sandbox; what it did.

    `model`: a request body -> (status, body); the scripted model by default (`real_model(config)` for a real one).
    A child started by `warm` for the same tools is used when one is waiting. `owner` (a browser) runs at most
    slots.PER_OWNER programs at once, and the server slots.TOTAL; a run waits its turn, `on_wait(ahead)` told
    how many runs are ahead of it. A key the learner set (program.secrets: the page's .env box, --env, a .env of
    the project) never leaves the sandbox: the requests are sent on and recorded without it, and nothing the run
    recorded holds it.
    """
    program = source if isinstance(source, Program) else Program.single(source)
    secrets = program.secrets()
    recording = _run(program, scenario, lang, max_calls, max_seconds, model, toolset, tool_timeout, owner, on_wait,
                     secrets)
    return without_secrets(recording, secrets)


def without_secrets(recording: Recording, secrets: list[str]) -> Recording:
    """`recording` with each of `secrets` hidden wherever it holds it (an output, a tool's, a traceback, a request)."""
    if not secrets:
        return recording
    text = json.dumps(recording.to_dict(), ensure_ascii=False)
    for secret in secrets:
        text = text.replace(json.dumps(secret, ensure_ascii=False)[1:-1], HIDDEN)
    return Recording.from_dict(json.loads(text))


def _run(program: Program, scenario: str, lang: str, max_calls: int, max_seconds: float, model: Model | None,
         toolset: str | None, tool_timeout: float, owner: object, on_wait, secrets: list[str]) -> Recording:
    started = time.perf_counter()
    lang = known(lang)
    chosen = SCENARIOS[scenario]  # KeyError for an unknown one
    recording = Recording(source=program.source, scenario=scenario, lang=lang, file=program.main,
                          files=program.other_sources() if len(program.files) > 1 else {})
    broken = compiles(program)
    if broken is not None:  # it does not compile: nothing runs, and only the keeper says so
        recording.outcome = SYNTAX_ERROR
        recording.error_line, recording.error_column = broken.lineno, broken.offset
        recording.message = f"{type(broken).__name__}: {broken.msg}"
        return recording
    with SLOTS.taken(owner, on_wait):
        spare = _take((chosen.toolset or toolset or "s01", tool_timeout))
        toolbox, child = spare or (default_toolbox(Workspace.make(), tool_timeout,
                                                   chosen.toolset or toolset or "s01"), None)
        try:
            problem = toolbox.sandbox.problem()
            if problem:
                recording.outcome, recording.message = KILLED, problem
                return recording
            recording.sandbox = toolbox.sandbox.mode
            child = child or _Child(toolbox)
            try:
                name = getattr(model, "name", scripted.MODEL_NAME)
                root = child.inside_project
                child.put(program)
                start = {"kind": "start", "root": root, "file": f"{root}/{program.main}", "module": program.module,
                         "path0": f"{root}/{program.path0}".rstrip("/"), "task": chosen.task_in(lang),
                         "system": system_prompt(lang, SYSTEM), "tools": toolbox.specs(), "model": name, "lang": lang,
                         "env": environment(program, name), "placeholder": PLACEHOLDER,
                         "max_tokens": min(chosen.max_tokens, MAX_TOKENS)}  # the scenario's own limit cuts the answer
                _keep(recording, toolbox, child, start, model or scripted_model(chosen.context_window), max_calls,
                      max_seconds, secrets)
            finally:
                child.close()
        finally:
            toolbox.close()
            recording.seconds = round(time.perf_counter() - started, 3)
    return recording


class _Child:
    """The learner's process, started in the tool box's sandbox holding one end of the channel.

    The bootstrap imports the SDK, then waits to be told what to run: a child can be started before the learner
    presses Run (`warm`). Its project folder is made with it, empty, bound read-only at /project: the learner's
    files are written into it when the run starts.
    """

    def __init__(self, toolbox):
        sandbox = toolbox.sandbox
        sandbox.workspace.prepare()
        bwrapped = sandbox.mode == "bubblewrap"
        self.project = _project_folder()
        self.inside_project = PROJECT_DIR if bwrapped else str(self.project)
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
        if bwrapped:  # the bootstrap, the SDKs and the learner's files, read-only (the app's folder is not there)
            at = argv.index("--chdir")
            argv[at:at] = ["--ro-bind", str(BOOTSTRAP), f"{INSIDE_DIR}/inside.py",
                           "--ro-bind", str(INTERCEPT), f"{INSIDE_DIR}/intercept.py",
                           "--ro-bind", str(WATCHING), f"{INSIDE_DIR}/watching.py",
                           "--ro-bind", str(SITE), site, "--ro-bind", str(self.project), PROJECT_DIR]
        try:
            self.proc = start(
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

    def put(self, program: Program) -> None:
        """Write the learner's files into the project folder, readable by the sandbox's user only."""
        uid, gid = sandbox_user()
        for name, data in program.files.items():
            path = self.project / name
            if self.project not in path.resolve().parents:  # a name with `..` in it: not ours to write
                continue
            for folder in reversed([p for p in path.parents if self.project in p.parents]):
                if not folder.exists():
                    folder.mkdir(mode=0o750)
                    _give(folder, uid, gid)
            path.write_bytes(data)
            os.chmod(path, 0o640)
            _give(path, uid, gid)

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
        shutil.rmtree(self.project, ignore_errors=True)


def _project_folder() -> Path:
    """A new empty folder for a child's project files: the server's own, entered by the sandbox's user's group."""
    uid, gid = sandbox_user()
    try:
        base = workspaces_root()
    except (OSError, ValueError):
        base = Path(tempfile.gettempdir())
    folder = Path(tempfile.mkdtemp(prefix="project-", dir=base))
    os.chmod(folder, 0o750)
    _give(folder, uid, gid)
    return folder


def _give(path: Path, uid: int, gid: int) -> None:
    """Readable by the sandbox's user: its group (as root), or its own when the server is that user."""
    if os.geteuid() == 0:
        os.chown(path, 0, gid, follow_symlinks=False)


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


def _keep(recording: Recording, toolbox, child: _Child, start: dict, model: Model, max_calls: int,
          max_seconds: float, secrets: list[str]) -> None:
    """Answer the child's channel and watch it until the run ends; what it did goes into `recording`."""
    recorder = Recorder(recording, model, max_calls=max_calls, hide=secrets)
    keeper = _Keeper(child.outside, recording, recorder, toolbox, start)
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
            # Ended: its process has exited, and the channel closed or its last word came (a process it left
            # behind may hold the channel open)
            if exited_at is None and proc.poll() is not None and (keeper.ended.is_set() or keeper.report is not None):
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
    """How the run ended, from what the keeper saw: its own stops, the clock, the output, the exit status. The
    program's report only gives the words shown as its own (its traceback, its line, its state)."""
    report = keeper.report or {}
    recording.status = status if keeper.ready.is_set() else None
    if keeper.stop is not None:
        recording.outcome = keeper.stop
        recording.message = keeper.said.render() if keeper.said is not None else None
        recording.said = keeper.said.to_json() if keeper.said is not None else None
    elif timed_out:
        recording.outcome = TIMEOUT
    elif flooded:
        recording.outcome = KILLED
        recording.message = "its output passed 800 kB"
    elif status == 0 and keeper.ready.is_set():
        recording.outcome = RETURNED
    elif status is not None and status > 0 and keeper.ready.is_set() and isinstance(report.get("traceback"), str):
        missing = report.get("missing")
        words = missing_words(missing) if isinstance(missing, str) and missing.isascii() else None
        recording.outcome = MISSING_MODULE if words is not None else EXCEPTION
        recording.traceback = report["traceback"][:20_000]
        recording.error_line = _line(report)
        recording.message = words.render() if words is not None else str(report.get("message") or "")[:2000]
        recording.said = words.to_json() if words is not None else None
    else:  # it ended without its own word: killed by a limit, exited with a status, or it could not start
        recording.outcome = KILLED if status is None or status < 0 or not keeper.ready.is_set() else EXCEPTION
        said = recording.output.strip().splitlines()
        recording.message = said[-1] if said and not keeper.ready.is_set() else (
            ENDED_WITH.format(status=status) if status is not None else None)
    recording.final_state = _state(report)
    recording.left = checked_place(report.get("left"))
    used = report.get("used")
    if isinstance(used, list):  # the project's files kept with the run: those it imported (names of our own copy)
        recording.files = {name: text for name, text in recording.files.items() if name in used}
