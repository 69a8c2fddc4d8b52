"""The recorder and answerer of a program's model calls: one place that answers a request and keeps what it saw.

Given a request as it came over the wire (its method, URL and body bytes), it picks the API by the path
(loop/engine/wire.py), answers in that API's shape with the model (the offline scripted model by default),
and records the exchange: the body sent, the response or the API's refusal. Request headers (keys) are
never seen here. Everything is bounded before it is parsed or kept: a body's size, its nesting, the calls a
run may make and the bytes a recording holds.

The keeper of a learner's sandboxed program (sandboxed.py) calls it for each call frame; a local HTTP endpoint
can call it for any program (`serve(recorder)` in loop/engine/server.py's terms: `recorder.http`). A call another
server answers (`python -m loop record --upstream`) is kept by the same bounds in two halves: `begin` with the
request, `finish` with what came back. Token counting (`/v1/messages/count_tokens`) is answered and kept as a side
call, not a model call.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..engine import answer_cap, scripted, wire
from ..files.transcript import NumberTooLong, parse_json, too_deep
from ..text.catalogs import N_, size_words
from ..text.redact import HIDDEN
from . import recording as rec
from .lines import checked_made
from .recording import Exchange, LearnerState, Recording

DEPTH = 64  # levels of lists and objects a request may nest (a real one: under 10)
OFFLINE_KEPT = 20  # addresses answered "no network" a recording names
SIDE_KEPT = 200  # requests to no model call a recording names (side_calls)
COUNT_TOKENS = "count_tokens"  # a side call's `what`: the Messages API's token counting
NOT_A_MODEL_CALL = "not_a_model_call"  # a side call's `what`: an endpoint that is no model call

TOO_MANY_CALLS = N_("stopped after {n} model calls")
TOO_LARGE = N_("a model call of {size} is more than Loopscope takes ({most}): nothing of it was kept")
TOO_MUCH = N_("the recording reached {most}, the most a run may hold: stopped there")
NOT_JSON = "the request body is not JSON"
TOO_LARGE_BODY = "the request body is larger than Loopscope takes"
TOO_DEEP = "the request body nests more than {depth} levels"


@dataclass
class Stop:
    """Why the recorder stopped the run: an outcome of recording.py and a sentence."""

    outcome: str
    note: str
    values: dict


def call_most() -> int:
    """The largest model call body taken: the model's own cap (LOOPSCOPE_MAX_RESPONSE_BYTES, 8 MiB)."""
    return answer_cap.limit()


class Recorder:
    """Answers model calls by path and records them into `recording`; thread-safe."""

    def __init__(self, recording: Recording, model: wire.Model | None = None, *, max_calls: int = rec.MAX_CALLS,
                 max_bytes: int = rec.MAX_BYTES, hide: list[str] = ()):
        self.recording, self.model = recording, model or scripted.respond
        self.max_calls, self.max_bytes = max_calls, max_bytes
        # each as the body may spell it (as it is, or escaped in a JSON string): hidden before it is sent or kept
        self.hide = sorted({form.encode() for secret in hide if secret for form in (
            secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1])}, key=len, reverse=True)
        self.size = 0  # bytes recorded so far
        self.stop: Stop | None = None
        self.lock = threading.Lock()

    def count(self, n: int) -> bool:
        """Count `n` more bytes kept; False (and the run stopped) past the recording's most."""
        self.size += n
        if self.size > self.max_bytes and self.stop is None:
            self.stop = Stop(rec.KILLED, TOO_MUCH, {"most": size_words(self.max_bytes)})
        return self.stop is None

    def call(self, method: str, url: str, body: bytes, *, line: int | None = None, file: str | None = None,
             state: dict | None = None, made: object = None) -> wire.Answer | None:
        """The answer to one HTTP request; None when the run is stopped instead (`stop` says why). `line`, `file`,
        `state` and `made` (the lines that made its messages) are what the program says of it: kept as its word."""
        with self.lock:
            return self._call(method, url, body, line, file, state, made)

    def _call(self, method, url, body, line, file, state, made=None) -> wire.Answer | None:
        if self.stop is not None:
            return None
        path = urlsplit(str(url)).path
        if method.upper() == "POST" and path.rstrip("/").endswith("/messages/count_tokens"):
            return self._count(path, body)
        kind = wire.dialect(path) if method.upper() == "POST" else None
        if kind is None:
            if len(self.recording.offline) < OFFLINE_KEPT:
                self.recording.offline.append(str(url)[:300])
            return wire.encode(wire.MESSAGES, *wire.no_network(str(url)[:300]), False)
        begun = self._begin(kind, body, line, file, state, made)
        if begun is None:
            return None
        exchange, request = begun
        if isinstance(request, str):  # not JSON, or too deep: the API's 400, in its shape
            status, answer = 400, scripted.error_body(request)
            if kind == wire.CHAT:
                from ..engine import chat

                answer = chat.error(400, answer)
        else:
            status, answer = wire.respond(kind, request, self.model)
        self._finish(exchange, status, answer)
        reply = wire.encode(kind, status, answer, *wire.streams(request))
        self.count(len(reply.data))
        return reply

    def begin(self, kind: str, body: bytes) -> tuple[Exchange, object] | None:
        """A model call of API `kind` that another server answers, its request kept (bounded as `call` keeps one):
        (its exchange, the body parsed or why it is no JSON: a str); None when the recording is stopped or full."""
        with self.lock:
            return self._begin(kind, body, None, None, None)

    def finish(self, exchange: Exchange, status: int, answer: object, size: int) -> None:
        """What the other server answered `exchange`: its response (status 200) or its error, `size` bytes."""
        with self.lock:
            if self.count(size):
                self._finish(exchange, status, answer)

    def side(self, method: str, url: str, status: int, what: str) -> None:
        """A request to no model call, answered or forwarded: kept by its path (never its query or headers)."""
        with self.lock:
            self._side(method, url, status, what)

    def _side(self, method, url, status, what) -> None:
        if len(self.recording.side_calls) < SIDE_KEPT:
            self.recording.side_calls.append({"method": str(method)[:10], "path": urlsplit(str(url)).path[:300],
                                              "status": status, "what": what})

    def _count(self, path: str, body: bytes) -> wire.Answer:
        """Token counting, as the scripted model counts (about 4 characters a token of the request's JSON)."""
        request = _parsed(body) if len(body) <= call_most() else TOO_LARGE_BODY
        if isinstance(request, dict) and isinstance(request.get("messages"), list):
            status, answer = 200, {"input_tokens": scripted.input_tokens(request)}
        else:
            status, answer = 400, scripted.error_body(request if isinstance(request, str) else
                                                      "messages: Field required")
        self._side("POST", path, status, COUNT_TOKENS)
        return wire.encode(wire.MESSAGES, status, answer, False)

    def _begin(self, kind, body, line, file, state, made=None) -> tuple[Exchange, object] | None:
        if self.stop is not None:
            return None
        for secret in self.hide:  # a key the learner set never leaves the sandbox, whatever their code sends
            body = body.replace(secret, HIDDEN.encode())
        if len(body) > call_most():
            self.stop = Stop(rec.KILLED, TOO_LARGE, {"size": size_words(len(body)), "most": size_words(call_most())})
            return None
        if len(self.recording.exchanges) >= self.max_calls:
            self.stop = Stop(rec.TOO_MANY_CALLS, TOO_MANY_CALLS, {"n": self.max_calls})
            return None
        if not self.count(len(body)):
            return None
        request = _parsed(body)
        state = state if isinstance(state, dict) else {}
        exchange = Exchange(request=request if isinstance(request, dict) else {"body": request}, line=_int(line),
                            state=LearnerState(_plain(state.get("turn_count")), _plain(state.get("transition_reason"))),
                            dialect=kind, file=file if isinstance(file, str) else None, made=checked_made(made))
        self.recording.exchanges.append(exchange)
        return exchange, request

    @staticmethod
    def _finish(exchange: Exchange, status: int, answer: object) -> None:
        if status == 200 and isinstance(answer, dict):
            exchange.response = answer
        else:
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            error = error if isinstance(error, dict) else {"message": error}
            exchange.error = {"status": status, "type": error.get("type"), "message": error.get("message")}

    def refused(self) -> bool:
        """Did the last call get the API's 400 for a broken request (the loop broke a rule there)?"""
        last = self.recording.exchanges[-1] if self.recording.exchanges else None
        return last is not None and (last.error or {}).get("status") == 400


def _parsed(body: bytes) -> object:
    """The body as JSON, or the words of why it is none (a str)."""
    try:
        value = parse_json(body)
    except (ValueError, NumberTooLong, RecursionError, UnicodeDecodeError):
        return NOT_JSON
    if too_deep(value, DEPTH):
        return TOO_DEEP.format(depth=DEPTH)
    return value


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)[:200]


def json_bytes(value: object) -> bytes:
    return json.dumps(value).encode()
