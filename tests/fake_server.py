"""A fake Anthropic-compatible server on 127.0.0.1 for the tests.

It answers like the scripted model (loop/engine/server.py) and can be told to fail:
`server.fail(status, times=1, headers=..., body=...)` queues HTTP errors,
`server.fail("timeout")` sleeps past the client's timeout, `server.fail("drop")`
closes the connection mid-stream, `server.fail("not-json")` sends garbage, and
`server.fail("pass")` answers one request as usual between two faults.
`server.ask("cmd", ["a", "b"], {"name": "read_file", "input": {...}})` makes it a
model that asks for chosen tool calls, one turn each (a list: several at once),
then ends its turn: a hostile model, as a steered one would be.
`server.huge(200 * 2**20)` answers the next call with one text block of that many
bytes, made as it is sent (never held whole): JSON, or SSE events when the call
streams; `declared=True` sends its Content-Length first, `encoding="gzip"` sends it
compressed (a few hundred KB on the wire).
Every request body it received is kept in `server.requests`, and every
request's headers in `server.headers`.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import deque

from loop.engine import scripted
from loop.engine.server import Handler, serve


class FakeAnthropic:
    def __init__(self, context_window: int | None = None):
        self.context_window = context_window  # a prompt longer than this is refused as too long, as the API does
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.faults: deque = deque()
        self.asks: deque | None = None  # turns of tool calls to ask for (see ask)
        self.lock = threading.Lock()
        self.server = None

    # -- control --
    def fail(self, kind, *, times: int = 1, headers: dict | None = None, body: dict | None = None,
             delay: float = 5.0) -> None:
        """Queue `times` failures of `kind`: an HTTP status, "timeout", "drop" or "not-json"."""
        with self.lock:
            for _ in range(times):
                self.faults.append((kind, headers or {}, body, delay))

    def huge(self, size: int, *, declared: bool = False, encoding: str | None = None, times: int = 1) -> None:
        """Answer the next `times` calls with a text block of `size` bytes, made as it is sent (see the docstring)."""
        with self.lock:
            for _ in range(times):
                self.faults.append(("huge", {}, {"size": size, "declared": declared, "encoding": encoding}, 0.0))

    def ask(self, *turns) -> None:
        """Answer the next calls with these tool calls, one turn each, then with end_turn."""
        with self.lock:
            self.asks = deque(turns)

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
                    asks = fake.asks
                    turn = asks.popleft() if fault is None and asks else None
                if fault is None and asks is not None:
                    return self.send_json(200, _asking(body, turn, len(fake.requests)))
                if fault is None:
                    return super().answer(body)
                kind, headers, error, delay = fault
                if kind == "pass":
                    return super().answer(body)
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
                if kind == "huge":
                    return _send_huge(self, body, **error)
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

        self.server = serve(0, FaultyHandler, context_window=self.context_window)
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


CHUNK = 64 * 1024


def _send_huge(handler, request: dict, size: int, declared: bool, encoding: str | None) -> None:
    """One answer whose text block is `size` bytes of "a", written chunk by chunk (at most CHUNK held at once)."""
    streamed = bool(request.get("stream"))
    message = {"id": "msg_huge", "type": "message", "role": "assistant", "model": request.get("model", "huge"),
               "content": [], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    text = b"a" * CHUNK
    if streamed:
        delta = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": ' \
                b'{"type": "text_delta", "text": "' + text + b'"}}\n\n'
        head = (f"event: message_start\ndata: {json.dumps({'type': 'message_start', 'message': message})}\n\n"
                'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
                '"content_block": {"type": "text", "text": ""}}\n\n').encode()
        tail = ('event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n'
                'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn", '
                '"stop_sequence": null}, "usage": {"output_tokens": 1}}\n\n'
                'event: message_stop\ndata: {"type": "message_stop"}\n\n').encode()
        body_of = delta
        kind = "text/event-stream"
    else:
        whole = json.dumps({**message, "content": [{"type": "text", "text": "<TEXT>"}]}).encode()
        head, tail = whole.split(b"<TEXT>")
        body_of = text
        kind = "application/json"
    n = max(1, size // CHUNK)
    length = len(head) + n * len(body_of) + len(tail)
    pack = zlib.compressobj(wbits=31) if encoding == "gzip" else None
    handler.send_response(200)
    handler.send_header("content-type", kind)
    if declared and pack is None:
        handler.send_header("content-length", str(length))
    else:
        handler.send_header("connection", "close")  # the body ends when the connection does
        handler.close_connection = True
    if pack is not None:
        handler.send_header("content-encoding", "gzip")
    handler.end_headers()
    try:
        for piece in (head, *(body_of for _ in range(n)), tail):
            handler.wfile.write(pack.compress(piece) if pack is not None else piece)
        if pack is not None:
            handler.wfile.write(pack.flush())
    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: what a capped client does
        handler.close_connection = True


def _asking(body: dict, turn, n: int) -> dict:
    """A Messages API response asking for `turn`'s tool calls (None: the turn ends)."""
    calls = [] if turn is None else turn if isinstance(turn, list) else [turn]
    content = [{"type": "tool_use", "id": f"toolu_probe_{n}_{i}", "name": c.get("name", "bash") if isinstance(c, dict)
                else "bash", "input": c.get("input", {}) if isinstance(c, dict) else {"command": c}}
               for i, c in enumerate(calls)] or [{"type": "text", "text": "done"}]
    return {"id": f"msg_probe_{n}", "type": "message", "role": "assistant", "model": body.get("model", "probe"),
            "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def last_json(server: FakeAnthropic) -> dict:
    return json.loads(json.dumps(server.requests[-1]))
