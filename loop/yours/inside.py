"""The bootstrap that runs a learner's program INSIDE the sandbox (loop/yours/sandboxed.py starts it).

The learner's file runs as they run it: `python FILE` (`__name__ == "__main__"`, `sys.argv == [FILE]`, its folder
first on sys.path), or `python -m package.module` from its package's root, with the run's workspace as the working
directory. The scenario's task is typed into its `input()` (echoed, as a terminal shows it), then end of input.
Every HTTP request it makes, through any library, is answered over the channel by the keeper outside
(intercept.py); there is no key and no network in here. When the program made no model call and defines
`agent_loop`, that is called as the chapter's listing expects, with the chapter's names given beforehand
(`client`, `MODEL`, `SYSTEM`, `TOOLS`, `MAX_TOKENS`, `run_tool`, `run_bash`, `LoopState`: a file that defines
its own keeps its own).

Which line of theirs made each message a request sends is watched line by line in their files (watching.py), and
told with the request; so is the line their loop returned from after its last call.

It imports nothing of Loopscope (the app's folder is not in the sandbox), only the standard library, the SDKs,
whose folder the keeper binds read-only and names in argv[2], and its two siblings (intercept.py, watching.py). Frames on the channel (fd argv[1]) are one byte of
kind, a 4-byte length and the payload. What it reports (its line, its state, the lines that made its messages, the
commands its own code ran, its traceback) is the learner's program's word: shown as theirs, never trusted; the keeper records each request and
tool run itself, and judges how the run ended by what it saw.
"""

import inspect
import io
import json
import os
import runpy
import socket
import struct
import sys
import threading
import traceback

MOST = 64 * 2**20  # the largest frame read from the keeper
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "/project"  # where the learner's files are (the start frame says), as their frames' file names begin
SITE = "/opt/loopscope/site-packages"  # where the SDKs are (argv[2]): a frame there is a library's, not theirs
SHOWN = 2000  # characters of a command reported


class Channel:
    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.lock = threading.Lock()  # their code may call from several threads: one question, one answer

    def send(self, kind: bytes, payload: bytes) -> None:
        with self.lock:
            self.sock.sendall(kind + struct.pack(">I", len(payload)) + payload)

    def _exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise SystemExit(0)  # the keeper is gone: nothing more to do
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> tuple[bytes, bytes]:
        head = self._exactly(5)
        (size,) = struct.unpack(">I", head[1:])
        if size > MOST:
            raise SystemExit(0)
        return head[:1], self._exactly(size)

    def ask(self, kind: bytes, payload: bytes) -> tuple[bytes, bytes]:
        with self.lock:  # one question, then its answer, before another thread's question
            self.sock.sendall(kind + struct.pack(">I", len(payload)) + payload)
            return self.receive()


def _json(value: dict) -> bytes:
    return json.dumps(value, default=str).encode()


def with_body(header: dict, body: bytes) -> bytes:
    """A frame's payload of a JSON header and raw bytes after it."""
    head = _json(header)
    return struct.pack(">I", len(head)) + head + body


def split_body(payload: bytes) -> tuple[dict, bytes]:
    (size,) = struct.unpack(">I", payload[:4])
    return json.loads(payload[4:4 + size]), payload[4 + size:]


def theirs(filename: str) -> bool:
    return filename.startswith(ROOT + "/")


def shown_name(filename: str) -> str:
    """A file of theirs as their own folder names it (your_loop.py, agents/s01_agent_loop.py)."""
    return filename[len(ROOT) + 1:] if theirs(filename) else filename


def learner_place(skip_library: bool = False):
    """(file, line) of the innermost frame in their files; (None, None) when none. With `skip_library`, a frame
    of an installed library met first means the library did it, not their code: (None, None)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if theirs(name):
            return shown_name(name), frame.f_lineno
        if skip_library and name.startswith(SITE + "/"):
            return None, None
        frame = frame.f_back
    return None, None


def _plain(value):
    """A value of the learner's state as JSON can carry it (their objects are shown, not run)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:200]


def learner_state(given: dict):
    """{turn_count, transition_reason} of the `state` their code holds (a dict or an object), None when none."""
    frame = sys._getframe(1)
    while frame is not None:
        if theirs(frame.f_code.co_filename):
            state = frame.f_locals.get("state")
            get = state.get if isinstance(state, dict) else (lambda k: getattr(state, k, None))
            if state is not None and get("turn_count") is not None:
                return {"turn_count": _plain(get("turn_count")), "transition_reason": _plain(get("transition_reason"))}
        frame = frame.f_back
    state = given.get("state")
    if isinstance(state, dict):
        return {"turn_count": _plain(state.get("turn_count")),
                "transition_reason": _plain(state.get("transition_reason"))}
    return {"turn_count": None, "transition_reason": None}


class LoopState(dict):
    """The chapter's state: a dict (state["messages"]) that also answers attribute access (state.messages)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class ToolText(str):
    """What run_tool / run_bash return: the output, a str, that also says whether the run failed."""

    is_error = False


class Typed(io.TextIOBase):
    """Standard input as a person types it: the task, then end of input; each line read is echoed, as a terminal
    echoes what is typed."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)

    def readable(self) -> bool:
        return True

    def readline(self, size=-1) -> str:
        if not self.lines:
            return ""
        line = self.lines.pop(0)
        sys.stdout.write(line)
        return line

    def read(self, size=-1) -> str:
        text = "".join(self.lines)
        self.lines = []
        sys.stdout.write(text)
        return text


def used_files() -> list:
    """Their files the program imported (modules of their own), as their folder names them."""
    found = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str) and theirs(name):
            found.add(shown_name(name))
    return sorted(found)[:2000]


def sent_messages(body) -> list:
    """The `messages` of a request's JSON body (the Messages API's or OpenAI's), or [] when it holds none."""
    try:
        value = json.loads(body) if body and len(body) <= MOST else None
    except (ValueError, RecursionError):
        return []
    messages = value.get("messages") if isinstance(value, dict) else None
    return messages if isinstance(messages, list) else []


def command_of(event: str, args) -> str | None:
    """The command a subprocess or os.system audit event runs, as a shell would show it."""
    if event == "os.system":
        return str(args[0])
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        argv = args[1] if len(args) > 1 else args[0]
        if isinstance(argv, (str, bytes)):
            return argv if isinstance(argv, str) else argv.decode(errors="replace")
        argv = [a if isinstance(a, str) else os.fsdecode(a) for a in argv]
        if len(argv) >= 3 and argv[1] == "-c" and os.path.basename(argv[0]) in ("sh", "bash", "dash", "zsh"):
            return argv[2]
        import shlex

        return shlex.join(argv)
    return None


def main() -> None:
    global ROOT, SITE
    channel = Channel(int(sys.argv[1]))
    SITE = sys.argv[2].rstrip("/")
    sys.path.insert(0, SITE)
    sys.path.insert(0, HERE)
    import intercept
    import watching
    sys.path.remove(HERE)
    import anthropic  # before the start: a child started ahead of Run has its SDK ready (sandboxed.warm)
    import http.client  # noqa: F401 (routed below)
    try:
        import urllib3.connectionpool  # noqa: F401 (requests' HTTP, routed below)
    except ImportError:
        pass

    kind, payload = channel.receive()
    start = json.loads(payload)
    ROOT = start["root"]
    given = {}
    calls = [0]
    watcher = watching.Watcher(theirs, shown_name)

    def ask(method, url, body):
        file, line = learner_place()
        header = {"method": method, "url": url, "file": file, "line": line, "state": learner_state(given),
                  "made": watcher.sent(sent_messages(body), sys._getframe(1))}
        _, answer = channel.ask(b"C", with_body(header, body or b""))
        calls[0] += 1
        said, data = split_body(answer)
        return said.get("status", 502), said.get("reason", ""), said.get("content_type", "application/json"), data

    intercept.install(ask)

    def tool(name, tool_input, tool_use_id=None):
        file, line = learner_place()
        _, answer = channel.ask(b"T", _json({"name": name, "input": tool_input, "tool_use_id": tool_use_id,
                                             "file": file, "line": line}))
        said = json.loads(answer)
        text = ToolText(said.get("output", ""))
        text.is_error = bool(said.get("is_error"))
        return text

    def run_tool(block):
        """Run one tool_use block's tool (the chapter's run_tool): its output, a str."""
        get = block.get if isinstance(block, dict) else (lambda k: getattr(block, k, None))
        return tool(get("name"), get("input"), get("id"))

    def run_bash(command):
        """Run one command with the chapter's bash tool: its output, a str."""
        return tool("bash", {"command": command})

    def audited(event, args):
        if event not in ("subprocess.Popen", "os.system", "os.posix_spawn"):
            return
        file, line = learner_place(skip_library=True)
        if line is None:  # a library's own (the SDK asking the system what it is), not their code's
            return
        command = command_of(event, args)
        if command is not None:
            channel.send(b"R", _json({"command": command[:SHOWN], "file": file, "line": line}))

    os.environ.update(start.get("env") or {})
    client = anthropic.Anthropic(api_key=start.get("placeholder") or "no-key-in-the-sandbox",
                                 base_url="https://model.loopscope.invalid", max_retries=0)
    names = {"client": client, "MODEL": start["model"], "SYSTEM": start["system"], "TOOLS": start["tools"],
             "MAX_TOKENS": start.get("max_tokens", 8000), "run_tool": run_tool, "run_bash": run_bash,
             "LoopState": LoopState}
    sys.stdin = Typed([start["task"] + "\n"])
    sys.addaudithook(audited)
    watcher.start()  # their lines from here on: which one made each message sent
    channel.send(b"Y", b"{}")  # the keeper's clock starts here: the SDK's import is not the learner's time
    status, report = 0, {}
    try:
        if start.get("module"):  # python -m package.module, from the package's root
            sys.path.insert(0, start["path0"])
            found = runpy.run_module(start["module"], init_globals=names, run_name="__main__", alter_sys=True)
        else:  # python FILE
            sys.argv = [start["file"]]
            sys.path.insert(0, start["path0"])
            found = runpy.run_path(start["file"], init_globals=names, run_name="__main__")
        loop = found.get("agent_loop")
        if not calls[0] and callable(loop):  # a file of the chapter's agent_loop alone: called as the listing expects
            state = LoopState(messages=[{"role": "user", "content": start["task"]}], turn_count=1,
                              transition_reason=None)
            given["state"] = state
            try:
                first = next(iter(inspect.signature(loop).parameters), None)
            except (TypeError, ValueError):
                first = None
            loop(state["messages"] if first == "messages" else state)
            report["state"] = learner_state(given)
        elif not calls[0]:
            report["no_loop"] = True
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            status = code or 0
        else:
            print(code, file=sys.stderr)
            status = 1
    except BaseException as error:  # noqa: BLE001 - whatever their code raised is theirs
        status = 1
        frames = [f for f in traceback.extract_tb(error.__traceback__) if theirs(f.filename)]
        for f in frames:
            f.filename = shown_name(f.filename)
        said = "".join(traceback.format_exception_only(type(error), error)).strip()
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) + said + "\n"
        sys.stderr.write(text)
        report.update(traceback=text, line=frames[-1].lineno if frames else None,
                      file=frames[-1].filename if frames else None, message=said.splitlines()[-1] if said else "",
                      state=learner_state(given))
        if isinstance(error, ModuleNotFoundError) and error.name:
            report["missing"] = error.name
    watcher.stop()
    if watcher.left is not None:  # where the loop returned after its last call
        report["left"] = {"file": watcher.left[0], "line": watcher.left[1]}
    report["used"] = used_files()
    sys.stdout.flush()
    sys.stderr.flush()
    report["status"] = status
    channel.send(b"E", _json(report))
    os._exit(status if isinstance(status, int) and 0 <= status < 256 else 1)


if __name__ == "__main__":
    try:
        main()
    except OSError:  # their code closed the channel: the keeper records the run as it saw it
        pass
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass
    os._exit(0)  # no interpreter shutdown running the learner's finalizers or threads
