"""The recording endpoint: an HTTP server on 127.0.0.1 that a command takes for the model's API.

Every request is answered by the recorder (loop/yours/recorder.py), the one Your loop uses: offline, the scripted
model answers a model call and counts tokens, and any other endpoint is answered that the offline model does not
serve it (kept as a side call). With an upstream, each request goes on to `upstream + its path`, with the
command's own headers (its key among them) untouched but for the connection's own; the answer comes back to the
command as it arrives, a stream chunk by chunk, while the recorder keeps a bounded copy of it. No header is kept,
logged or shown: the recorder sees bodies alone, and a key the command sent is hidden from what it keeps.

It answers loopback peers only, and only requests addressed to this machine by name (a web page that renamed
itself 127.0.0.1, or a browser's cross-site request with an Origin, is refused).
"""

from __future__ import annotations

import ipaddress
import json
import sys
from typing import Callable
from urllib.parse import urlsplit

from ..engine import scripted, wire
from ..engine.server import Handler, serve
from ..text.redact import HIDDEN, redact, secret_name
from ..yours.recorder import NOT_A_MODEL_CALL, Recorder, call_most
from . import events

# Headers that belong to one connection, not to the request: never passed on (RFC 9110 §7.6.1), nor the length
# (the body goes as it came) and the encodings asked (the copy kept must be readable: identity is asked instead).
HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
       "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding", "proxy-connection"}
NAMES = {"127.0.0.1", "localhost", "::1"}  # what a request to this endpoint may name as its host
NOT_SERVED = "Loopscope's offline model does not serve {path}: it answers the Messages API (/v1/messages), its " \
             "token counting and OpenAI Chat Completions (/v1/chat/completions)"
UNREACHABLE = "Loopscope could not reach the upstream {host}: {error}"
REFUSED_PEER = "this recording endpoint answers only this machine (loopback)"


def loopback(address: str) -> bool:
    """Is `address` a loopback address (127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6)?"""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def secrets_of(headers) -> list[str]:
    """The keys a request's headers carry (x-api-key, Authorization's token, any header named as a secret is)."""
    found = []
    for name, value in headers.items():
        lower = name.lower()
        if lower in ("authorization", "proxy-authorization", "x-api-key", "api-key") or secret_name(name.replace("-", "_")):
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token.strip():
                found.append(token.strip())
    return [v for v in found if len(v) >= 4]


class RecordingHandler(Handler):
    """Answers a command's requests through `recorder`; with `upstream`, forwards them there."""

    recorder: Recorder
    upstream: str | None = None
    client = None  # the httpx client that reaches the upstream (one a server: its connections are kept)
    on_call: Callable[[], None] | None = None  # told after each request is answered (live.py prints the stages)

    def send_json(self, status: int, body: dict, headers: dict | None = None) -> None:
        if self.command != "HEAD":
            return super().send_json(status, body, headers)
        self.send_response(status)  # a HEAD's answer: its headers, no body
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "0")
        self.end_headers()

    def refuse_peer(self) -> bool:
        """Answer 403 to anything but a loopback peer naming this machine, without a browser's Origin."""
        host = self.headers.get("host") or ""
        name = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
        if loopback(self.client_address[0]) and name.lower() in NAMES and self.headers.get("origin") is None:
            return False
        self.close_connection = True
        self.send_json(403, scripted.error_body(REFUSED_PEER, "permission_error"))
        return True

    def do_POST(self):
        self._any("POST")

    def do_GET(self):
        self._any("GET")

    def do_PUT(self):
        self._any("PUT")

    def do_DELETE(self):
        self._any("DELETE")

    def do_PATCH(self):
        self._any("PATCH")

    def do_HEAD(self):
        self._any("HEAD")

    def _any(self, method: str) -> None:
        if self.refuse_peer():
            return
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        try:
            if self.upstream:
                self._forward(method, body)
            else:
                self._answer(method, body)
        finally:
            if self.on_call is not None:
                self.on_call()

    # -- offline: the recorder's answer --
    def _answer(self, method: str, body: bytes) -> None:
        path = urlsplit(self.path).path
        if method == "POST" and (wire.dialect(path) or path.rstrip("/").endswith("/messages/count_tokens")):
            answer = self.recorder.call(method, self.path, body)
            if answer is None:
                return self.send_json(503, scripted.error_body("the recording has stopped", "overloaded_error"))
            return self._send(answer.status, answer.content_type, answer.data)
        self.recorder.side(method, self.path, 404, NOT_A_MODEL_CALL)
        self.send_json(404, scripted.error_body(NOT_SERVED.format(path=path[:200]), "not_found_error"))

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # -- upstream: passed on, and kept --
    def _forward(self, method: str, body: bytes) -> None:
        import httpx2 as httpx

        path = urlsplit(self.path).path
        keys = secrets_of(self.headers)
        kind = wire.dialect(path) if method == "POST" else None
        begun = None
        if kind is not None:
            kept = body
            for key in keys:  # a key the command put in its body too is no more kept than its header
                kept = kept.replace(key.encode(), HIDDEN.encode())
            begun = self.recorder.begin(kind, kept)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP]
        headers.append(("accept-encoding", "identity"))
        base = urlsplit(self.upstream)
        url = self.upstream.rstrip("/") + self.path
        copy, most = bytearray(), call_most()
        status, content_type = 502, ""
        try:
            request = self.client.build_request(method, url, headers=headers, content=body)
            response = self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            words = UNREACHABLE.format(host=base.netloc, error=redact(str(exc) or type(exc).__name__, keys))
            answer = scripted.error_body(words, "api_error")
            self.send_json(502, answer)
            self._keep(kind, begun, path, method, 502, json.dumps(answer).encode(), "application/json", keys)
            return
        try:
            status, content_type = response.status_code, response.headers.get("content-type", "")
            self.send_response(status)
            for name, value in response.headers.multi_items():
                if name.lower() not in HOP:
                    self.send_header(name, value)
            if method == "HEAD" or status in (204, 304):  # an answer without a body
                if response.headers.get("content-length") is not None:
                    self.send_header("content-length", response.headers["content-length"])
                self.end_headers()
                self.wfile.flush()
            else:
                self._pass_on(response, copy, most)
        except (httpx.HTTPError, OSError):
            self.close_connection = True  # the upstream or the command went away mid-answer: keep what came
        finally:
            response.close()
        self._keep(kind, begun, path, method, status, bytes(copy), content_type, keys,
                   encoded=response.headers.get("content-encoding", "identity") not in ("identity", ""))

    def _pass_on(self, response, copy: bytearray, most: int) -> None:
        """The answer's body to the command chunk by chunk, as it arrives; up to `most` bytes of it kept in `copy`."""
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in response.iter_raw():
            if not chunk:
                continue
            if len(copy) <= most:
                copy += chunk[:most + 1 - len(copy)]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _keep(self, kind, begun, path, method, status, data, content_type, keys, encoded=False) -> None:
        """What came back, kept: a model call's answer into its exchange, anything else as a side call."""
        if kind is None:
            what = "count_tokens" if path.rstrip("/").endswith("/count_tokens") else NOT_A_MODEL_CALL
            self.recorder.side(method, self.path, status, what)
            return
        if begun is None:  # the recording is full or stopped: the command goes on, unrecorded
            return
        exchange, _ = begun
        text = data.decode("utf-8", "replace")
        for key in keys:
            text = text.replace(key, HIDDEN)
        if encoded or len(data) > call_most():
            answer: object = scripted.error_body("the answer was not kept: it was encoded, or larger than Loopscope "
                                                 "keeps", "not_kept")
            status = status if status != 200 else 502
        elif "text/event-stream" in content_type:
            stream_status, answer = (events.message if kind == wire.MESSAGES else events.completion)(text.encode())
            status = status if status != 200 else stream_status
        else:
            try:
                answer = json.loads(text)
            except ValueError:
                answer = scripted.error_body(text[:2000], "api_error")
                status = status if status != 200 else 502
        self.recorder.finish(exchange, status, answer, len(data))


def start(recorder: Recorder, upstream: str | None = None, on_call: Callable[[], None] | None = None,
          host: str = "127.0.0.1"):
    """The endpoint, serving in a thread; `server.server_address` says where. `host` is for tests: the endpoint
    answers loopback peers only wherever it listens."""
    attributes = {"recorder": recorder, "upstream": upstream, "on_call": staticmethod(on_call) if on_call else None}
    if upstream:
        import httpx2 as httpx

        # Long answers stream for minutes: no read timeout beyond the API's own; the environment's proxy is used.
        attributes["client"] = httpx.Client(timeout=httpx.Timeout(30.0, read=600.0), follow_redirects=False)
    handler = type("RecordingHandler", (RecordingHandler,), attributes)
    server = serve(0, handler=handler, host=host)
    server.handle_error = _quiet  # type: ignore[method-assign]
    return server


def _quiet(request, client_address) -> None:
    """A connection that broke: one line, no traceback (which could quote what the request held)."""
    error = sys.exc_info()[1]
    print(f"loopscope record: a connection from {client_address[0]} ended: {type(error).__name__}", file=sys.stderr)
