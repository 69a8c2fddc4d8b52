"""A fake Anthropic-compatible server on 127.0.0.1 for the tests.

It answers like the scripted model (loop/server.py) and can be told to fail:
`server.fail(status, times=1, headers=..., body=...)` queues HTTP errors,
`server.fail("timeout")` sleeps past the client's timeout, `server.fail("drop")`
closes the connection mid-stream, `server.fail("not-json")` sends garbage.
Every request body it received is kept in `server.requests`, and every
request's headers in `server.headers`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque

from loop import scripted
from loop.server import Handler, serve


class FakeAnthropic:
    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.faults: deque = deque()
        self.lock = threading.Lock()
        self.server = None

    # -- control --
    def fail(self, kind, *, times: int = 1, headers: dict | None = None, body: dict | None = None,
             delay: float = 5.0) -> None:
        """Queue `times` failures of `kind`: an HTTP status, "timeout", "drop" or "not-json"."""
        with self.lock:
            for _ in range(times):
                self.faults.append((kind, headers or {}, body, delay))

    def recover(self) -> None:
        with self.lock:
            self.faults.clear()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    # -- lifetime --
    def __enter__(self) -> "FakeAnthropic":
        fake = self

        class FaultyHandler(Handler):
            def answer(self, body):
                with fake.lock:
                    fake.requests.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fault = fake.faults.popleft() if fake.faults else None
                if fault is None:
                    return super().answer(body)
                kind, headers, error, delay = fault
                if kind == "timeout":
                    time.sleep(delay)
                    return super().answer(body)
                if kind == "drop":
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(b'event: message_start\ndata: {"type": "message_start"')
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if kind == "not-json":
                    data = b"<html>502 Bad Gateway</html>"
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                status = int(kind)
                kinds = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 429: "rate_limit_error", 500: "api_error",
                         529: "overloaded_error"}
                payload = error or scripted.error_body(f"fake {status}", kinds.get(status, "api_error"))
                self.send_json(status, payload, headers)

        self.server = serve(0, FaultyHandler)
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def last_json(server: FakeAnthropic) -> dict:
    return json.loads(json.dumps(server.requests[-1]))
