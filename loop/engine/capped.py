"""A cap on the size of a model's answer: a server that sends 200 MB must not fill the class server's memory.

A real answer within `max_tokens` is a few hundred KB at most. The real
model's HTTP client reads every response through `CappedTransport`: a body
whose Content-Length is over the cap is refused before a byte of it is read;
any other body is counted as the client reads it (decoded, so a small gzip
that unpacks to 200 MB is counted as 200 MB), streamed or not, and reading
stops with `ResponseTooLarge` past the cap. So at most about the cap is ever
held, and nothing of the refused answer reaches the trace or the runs store.

`ResponseTooLarge` is one of the SDK's own errors but not a connection error:
the SDK passes it up as it is and does not retry it (a retry would only fetch
the same oversized answer again), and neither does the complete loop.
"""

from __future__ import annotations

from typing import Iterator

import anthropic
import httpx2
from httpx2._decoders import IdentityDecoder  # the decoder the client picks for no Content-Encoding

from ..text.catalogs import size_words

from .answer_cap import DEFAULT, TOO_LARGE, VARIABLE, limit  # noqa: F401 (the cap's own names, said here too)


class ResponseTooLarge(anthropic.AnthropicError):
    """The model's server sent more than `limit` bytes: refused, the rest left unread."""

    def __init__(self, limit: int, request: httpx2.Request | None = None):
        self.limit, self.request = limit, request
        super().__init__(TOO_LARGE.format(size=size_words(limit)))


class CappedTransport(httpx2.BaseTransport):
    """Another transport's responses, each refused past `limit` bytes of body (see the module's docstring)."""

    def __init__(self, inner: httpx2.BaseTransport, limit: int):
        self.inner, self.limit = inner, limit

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        try:
            declared = int(response.headers.get("content-length", ""))
        except ValueError:
            declared = None
        if declared is not None and declared > self.limit:
            response.close()
            raise ResponseTooLarge(self.limit, request)
        headers = response.headers.copy()
        # Decoded here, where it is counted: the client then has nothing left to decode.
        decoder = httpx2.Response(200, headers=headers)._get_content_decoder()
        headers.pop("content-encoding", None)
        if not isinstance(decoder, IdentityDecoder):
            headers.pop("content-length", None)
        stream = _CappedStream(response.stream, decoder, self.limit, request)
        return httpx2.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, inner, decoder, limit: int, request: httpx2.Request):
        self.inner, self.decoder, self.limit, self.request = inner, decoder, limit, request
        self.read = 0

    def __iter__(self) -> Iterator[bytes]:
        for raw in self.inner:
            yield from self._counted(self.decoder.decode(raw))
        yield from self._counted(self.decoder.flush())

    def _counted(self, chunks) -> Iterator[bytes]:
        for chunk in chunks:
            self.read += len(chunk)
            if self.read > self.limit:
                raise ResponseTooLarge(self.limit, self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


def cap(client: httpx2.Client, limit_bytes: int | None = None) -> httpx2.Client:
    """`client`, every transport of it (the direct one, and a proxy's from the environment) capped."""
    limit_bytes = limit_bytes or limit()
    # The client's own transports are wrapped, not replaced: passing `transport=` would drop the proxies
    # (HTTPS_PROXY) and connection limits the SDK's client sets up.
    client._transport = CappedTransport(client._transport, limit_bytes)
    client._mounts = {pattern: None if transport is None else CappedTransport(transport, limit_bytes)
                      for pattern, transport in client._mounts.items()}
    return client
