"""The scripted model behind a real HTTP socket: an Anthropic-compatible server.

`python -m loop serve` starts it on 127.0.0.1, so any Messages API client (the
`anthropic` SDK with `base_url=`, or `python -m loop run --model X` with
ANTHROPIC_BASE_URL) can talk to the offline model over the network stack.
Tests extend `Handler` to inject faults.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from . import scripted


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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

    def do_POST(self):
        if not self.path.split("?")[0].endswith("/v1/messages"):
            return self.send_json(404, scripted.error_body(f"no route {self.path}", "not_found_error"))
        body = self.read_body()
        if body is None:
            return self.send_json(400, scripted.error_body("the request body is not JSON"))
        self.answer(body)

    def answer(self, body: dict) -> None:
        status, answer = scripted.respond(body)
        if status == 200 and body.get("stream"):
            data = scripted.sse_bytes(answer)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_json(status, answer)


def serve(port: int = 0, handler: type[Handler] = Handler, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """Start a server in a background thread; `server.server_address` says where."""
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    # A short poll interval lets shutdown() return quickly (tests start and stop many servers).
    Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
