"""Every HTTP(S) request a learner's program makes, answered in-process: runs INSIDE the sandbox (inside.py loads it).

The sandbox has no network. Rather than a network of its own, the program's HTTP libraries are routed, at their
own level, to one function, `ask(method, url, body) -> (status, reason, content_type, data)`, which the bootstrap
sends over the channel to the keeper outside; the keeper answers by the request's path (loop/engine/wire.py).
Whatever host, scheme or port the program names, no socket is opened and https needs no certificate:

    httpx2 (the anthropic and openai SDKs), httpx   HTTPTransport.handle_request (and the async one)
    urllib3 (requests)                              HTTPConnectionPool.urlopen
    http.client (urllib.request)                    HTTPConnection.connect: a socket that is the channel

Streaming or not: the answer comes whole, as the bytes the API sends (server-sent events when streamed).
The standard library only, besides the libraries it patches; it imports nothing of Loopscope.
"""

import io

Ask = None  # the bootstrap's function: (method, url, body bytes) -> (status, reason, content type, data)


def install(ask) -> None:
    """Route every HTTP library present to `ask` (a library imported later than this is not seen: call it after)."""
    global Ask
    Ask = ask
    _http_client()
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        _httpx(module)
    try:
        import urllib3.connectionpool
    except ImportError:
        return
    _urllib3(urllib3)


def _bytes(body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        return _bytes(body.read())
    return b"".join(_bytes(part) for part in body)  # an iterable of chunks


def _httpx(module) -> None:
    def handle_request(self, request):
        status, reason, content_type, data = Ask(request.method, str(request.url), request.read())
        return module.Response(status, headers={"content-type": content_type, "request-id": "req_loopscope"},
                               content=data, request=request)

    async def handle_async_request(self, request):
        status, reason, content_type, data = Ask(request.method, str(request.url), await request.aread())
        return module.Response(status, headers={"content-type": content_type, "request-id": "req_loopscope"},
                               content=data, request=request)

    module.HTTPTransport.handle_request = handle_request
    module.AsyncHTTPTransport.handle_async_request = handle_async_request


def _urllib3(urllib3) -> None:
    from urllib3.response import HTTPResponse

    def urlopen(self, method, url, body=None, headers=None, retries=None, redirect=True, assert_same_host=True,
                timeout=None, pool_timeout=None, release_conn=None, chunked=False, body_pos=None,
                preload_content=True, decode_content=True, **response_kw):
        whole = url if "://" in url else f"{self.scheme}://{self.host}:{self.port}{url}"
        status, reason, content_type, data = Ask(method, whole, _bytes(body))
        return HTTPResponse(body=io.BytesIO(data), headers={"content-type": content_type,
                                                            "content-length": str(len(data))},
                            status=status, reason=reason, preload_content=preload_content,
                            decode_content=decode_content, request_method=method, request_url=whole)

    urllib3.connectionpool.HTTPConnectionPool.urlopen = urlopen


class _Wire:
    """What http.client takes for its socket: it writes the request into it, then reads the answer from it."""

    def __init__(self, url: str):
        self.url, self.sent = url, bytearray()

    def sendall(self, data) -> None:
        self.sent += _bytes(data)

    send = sendall

    def makefile(self, mode="rb", *args, **kwargs):
        head, _, body = bytes(self.sent).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = (lines[0].split(" ") + ["", ""])[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        if "chunked" in headers.get("transfer-encoding", ""):
            body = _unchunked(body)
        status, reason, content_type, data = Ask(method, self.url + path, body)
        answer = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {len(data)}\r\n"
                  f"connection: close\r\n\r\n").encode("latin-1", "replace") + data
        return io.BytesIO(answer)

    def settimeout(self, *args) -> None:
        pass

    def setsockopt(self, *args) -> None:
        pass

    def close(self) -> None:
        pass


def _unchunked(data: bytes) -> bytes:
    out, rest = bytearray(), data
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if not n:
            break
        out += rest[:n]
        rest = rest[n + 2:]
    return bytes(out)


def _http_client() -> None:
    import http.client

    def connect(self):
        scheme = "https" if isinstance(self, http.client.HTTPSConnection) else "http"
        self.sock = _Wire(f"{scheme}://{self.host}:{self.port}")

    http.client.HTTPConnection.connect = connect
    http.client.HTTPSConnection.connect = connect

