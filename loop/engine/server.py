"""The scripted model behind a real HTTP socket: an Anthropic- and OpenAI-compatible server.

`python -m loop serve` starts it on 127.0.0.1, so any Messages API client (the
`anthropic` SDK with `base_url=`, or `python -m loop run --model X` with
ANTHROPIC_BASE_URL) can talk to the offline model over the network stack, and
so can an OpenAI Chat Completions client (`/v1/chat/completions`, wire.py).
Tests extend `Handler` to inject faults.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from . import scripted, wire


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    context_window: int | None = None  # tokens a request may hold; a longer prompt gets the API's 400

    def log_message(self, format, *args):  # quiet: the tests and the CLI print what matters
        pass

    def send_json(self, status: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self) -> dict | None:
        length = int(self.headers.get("content-length") or 0)
        try:
            return json.loads(self.rfile.read(length))
        except ValueError:
            return None

    recorder = None  # an object whose call(method, url, body bytes) -> wire.Answer (None: stop) answers every POST

    def do_POST(self):
        if self.recorder is not None:  # a program's calls, answered and kept by a recorder (loop/yours/recorder.py)
            length = int(self.headers.get("content-length") or 0)
            answer = self.recorder.call("POST", self.path, self.rfile.read(length))  # the headers are not passed on
            if answer is None:
                return self.send_json(503, scripted.error_body("the recording has stopped", "overloaded_error"))
            self.send_response(answer.status)
            self.send_header("content-type", answer.content_type)
            self.send_header("content-length", str(len(answer.data)))
            self.end_headers()
            self.wfile.write(answer.data)
            return
        kind = wire.dialect(self.path)
        if kind is None:
            return self.send_json(404, scripted.error_body(f"no route {self.path}", "not_found_error"))
        body = self.read_body()
        if body is None:
            return self.send_json(400, scripted.error_body("the request body is not JSON"))
        if kind == wire.CHAT:  # OpenAI Chat Completions, answered in its own shape (wire.py, chat.py)
            status, answer = wire.respond(kind, body, lambda request: scripted.respond(
                request, retry=self.retry(), context_window=self.context_window))
            reply = wire.encode(kind, status, answer, *wire.streams(body))
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.data)))
            self.end_headers()
            self.wfile.write(reply.data)
            return
        self.answer(body)

    def retry(self) -> int:
        """How many times the client tried this request before (the SDK numbers its attempts)."""
        try:
            return max(0, int(self.headers.get("x-stainless-retry-count") or 0))
        except ValueError:
            return 0

    def answer(self, body: dict) -> None:
        status, answer = scripted.respond(body, retry=self.retry(), context_window=self.context_window)
        pace = scripted.pace(body) if status == 200 else 0.0
        if status == 200 and body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            if not pace:
                data = scripted.sse_bytes(answer)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("connection", "close")  # the stream ends when the connection does
            self.end_headers()
            for chunk in scripted.sse_chunks(answer, pace):  # block by block, as a model writes them
                self.wfile.write(chunk)
                self.wfile.flush()
            self.close_connection = True
            return
        if pace:
            time.sleep(pace * scripted.blocks_written(answer))
        self.send_json(status, answer)


def serve(port: int = 0, handler: type[Handler] = Handler, host: str = "127.0.0.1",
          context_window: int | None = None, recorder=None) -> ThreadingHTTPServer:
    """Start a server in a background thread; `server.server_address` says where. With `context_window`, a prompt
    longer than that many tokens is refused as the API refuses it; with `recorder` (loop/yours/recorder.py), every
    request is answered and recorded by it, whatever program sends it."""
    if context_window is not None:
        handler = type(handler.__name__, (handler,), {"context_window": context_window})
    if recorder is not None:
        handler = type(handler.__name__, (handler,), {"recorder": recorder})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    # A short poll interval lets shutdown() return quickly (tests start and stop many servers).
    Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
