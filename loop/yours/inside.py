"""The bootstrap that runs a learner's file INSIDE the sandbox (loop/yours/sandboxed.py starts it).

It gives the file the chapter's names (`MODEL`, `SYSTEM`, `TOOLS`, `MAX_TOKENS`: the scenario's) and nothing of
the server's: `client` is a real `anthropic.Anthropic`
whose HTTP transport sends each request over the one channel the sandbox inherits (fd given as argv[1]), and
`run_tool` / `run_bash` ask the keeper outside to run a tool. There is no key and no network in here.

It imports nothing of Loopscope (the app's folder is not in the sandbox), only the standard library and the SDK,
whose folder the keeper binds read-only and names in argv[2]. Frames on the channel are a 4-byte length and JSON.
What it reports (the line, the learner's state, the traceback) is shown, never trusted: the keeper records each
request and tool run itself.
"""

import inspect
import json
import linecache
import os
import socket
import struct
import sys
import threading
import traceback

FILENAME = "your_loop.py"  # the learner's file, as their tracebacks name it
MOST = 32 * 2**20  # the largest frame read from the keeper


class Channel:
    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.lock = threading.Lock()  # their code may call from several threads: one question, one answer

    def send(self, message: dict) -> None:
        data = json.dumps(message, default=str).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def _exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise SystemExit(0)  # the keeper is gone: nothing more to do
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> dict:
        (size,) = struct.unpack(">I", self._exactly(4))
        if size > MOST:
            raise SystemExit(0)
        return json.loads(self._exactly(size))

    def ask(self, message: dict) -> dict:
        with self.lock:
            self.send(message)
            return self.receive()


def learner_line():
    """The line of the learner's file that is running: the innermost frame in their file."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == FILENAME:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _plain(value):
    """A value of the learner's state as JSON can carry it (their objects are shown, not run)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)[:200]


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


def main() -> None:
    channel = Channel(int(sys.argv[1]))
    sys.path.insert(0, sys.argv[2])
    import anthropic  # before the start: a child started ahead of Run has its SDK ready (sandboxed.warm)
    import httpx2

    start = channel.receive()

    state_box = {}
    refused = {"last": False}

    def learner_state():
        state = state_box.get("state")
        if not isinstance(state, dict):
            return {"turn_count": None, "transition_reason": None}
        return {"turn_count": _plain(state.get("turn_count")),
                "transition_reason": _plain(state.get("transition_reason"))}

    class ChannelTransport(httpx2.BaseTransport):
        """Each request the SDK makes goes to the keeper, who answers it (or refuses it) as the API would."""

        def handle_request(self, request):
            try:
                body = json.loads(request.read())
            except ValueError:
                body = None
            answer = channel.ask({"kind": "call", "body": body, "line": learner_line(), "state": learner_state()})
            refused["last"] = answer.get("status") != 200
            if "sse" in answer:
                return httpx2.Response(answer["status"], content=answer["sse"].encode(),
                                       headers={"content-type": "text/event-stream"})
            return httpx2.Response(answer.get("status", 500), json=answer.get("body"),
                                   headers={"request-id": "req_loopscope"})

    def tool(name, tool_input, tool_use_id=None):
        answer = channel.ask({"kind": "tool", "name": name, "input": tool_input, "tool_use_id": tool_use_id,
                              "line": learner_line()})
        text = ToolText(answer.get("output", ""))
        text.is_error = bool(answer.get("is_error"))
        return text

    def run_tool(block):
        """Run one tool_use block's tool (the chapter's run_tool): its output, a str."""
        get = block.get if isinstance(block, dict) else (lambda k: getattr(block, k, None))
        return tool(get("name"), get("input"), get("id"))

    def run_bash(command):
        """Run one command with the chapter's bash tool: its output, a str."""
        return tool("bash", {"command": command})

    client = anthropic.Anthropic(api_key="no-key-in-the-sandbox", base_url="http://model.loopscope.invalid",
                                 http_client=httpx2.Client(transport=ChannelTransport()), max_retries=0)
    source = start["source"]
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
    names = {"__name__": "your_loop", "__file__": FILENAME, "client": client, "MODEL": start["model"],
             "SYSTEM": start["system"], "TOOLS": start["tools"], "MAX_TOKENS": start.get("max_tokens", 8000),
             "run_tool": run_tool, "run_bash": run_bash,
             "LoopState": LoopState}
    state = LoopState(messages=[{"role": "user", "content": start["task"]}], turn_count=1, transition_reason=None)
    state_box["state"] = state
    try:
        code = compile(source, FILENAME, "exec")
    except SyntaxError as error:
        channel.send({"kind": "end", "outcome": "syntax_error", "line": error.lineno, "column": error.offset,
                      "message": f"{type(error).__name__}: {error.msg}"})
        return
    channel.send({"kind": "ready"})  # the keeper's clock starts here: the SDK's import is not the learner's time
    try:
        exec(code, names)
        loop = names.get("agent_loop")
        if not callable(loop):
            raise NameError("your file defines no function agent_loop(state)")
        try:
            first = next(iter(inspect.signature(loop).parameters), None)
        except (TypeError, ValueError):
            first = None
        loop(state["messages"] if first == "messages" else state)
    except BaseException as error:  # noqa: BLE001 - whatever their code raised, SystemExit included, is theirs
        if refused["last"] and isinstance(error, anthropic.BadRequestError):  # the API's 400: a broken rule
            channel.send({"kind": "end", "outcome": "refused", "state": learner_state()})
            return
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == FILENAME]
        said = "".join(traceback.format_exception_only(type(error), error)).strip()
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)) + said + "\n"
        channel.send({"kind": "end", "outcome": "exception", "traceback": text,
                      "line": frames[-1].lineno if frames else None, "message": said.splitlines()[-1] if said else "",
                      "state": learner_state()})
        return
    channel.send({"kind": "end", "outcome": "returned", "state": learner_state()})


if __name__ == "__main__":
    try:
        main()
    except OSError:  # their code closed the channel: the keeper records the run as ended without a word
        pass
    sys.stdout.flush()
    os._exit(0)  # no interpreter shutdown running the learner's finalizers or threads
