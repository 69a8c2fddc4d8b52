"""Stage 2's model: the official `anthropic` SDK, real or scripted.

Both kinds go through the same `Anthropic` client. The scripted model is
reached through an in-process HTTP transport, so the SDK really serialises the
request and really parses the response; only the network is left out.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable

import anthropic
import httpx2

from . import capped, keys, scripted
from .defaults import MAX_TOKENS, SYSTEM  # noqa: F401 (said here too: the model's defaults)
from ..text.catalogs import N_

SCRIPTED = scripted.SCRIPTED
SCRIPTED_URL = "http://scripted.loopscope.invalid"


@dataclass
class ModelConfig:
    """Which model to call and how. `model="scripted"` needs no key and no network."""

    model: str = SCRIPTED
    api_key: str | None = field(default=None, repr=False)  # never printed, saved or logged
    base_url: str | None = None
    system: str = SYSTEM
    max_tokens: int = MAX_TOKENS
    stream: bool = False
    timeout: float = 120.0
    max_retries: int = 2
    context_window: int | None = None  # the scripted model's, set small by a scenario; a real model's is the API's
    # Set only when `api_key` is the server's, lent to a browser (loop/engine/keys.py); never saved
    allowance: keys.Allowance | None = field(default=None, repr=False, compare=False)

    @property
    def scripted(self) -> bool:
        return self.model == SCRIPTED


@dataclass
class Reply:
    """One model call: the response as the SDK parsed it and the request as the SDK sent it."""

    response: dict
    request: dict  # the body sent, without `messages` (the trace keeps those once)
    duration_ms: float
    retries: int = 0


NEEDS_KEY = N_("The model {model} needs an API key: set ANTHROPIC_API_KEY or enter one, or choose the scripted "
                "model, which needs none.")
NO_ID = N_("The response's content.{n} is a tool_use block without {missing}, so no tool_result could answer it; "
           "the step was not taken. Retry, or try another model.")


@dataclass(frozen=True)
class Observer:
    """Who watches one model call as it happens: the text as it streams in, and every attempt the SDK makes.

    A page passes one to `Run.step` / `Run.execute` for the call it draws; the
    command line passes none. Attempts are numbered from 1, retries included.
    """

    on_text: Callable[[str], None] | None = None
    on_attempt: Callable[[int, int], None] | None = None  # (attempt k, of at most n)
    on_block: Callable[[dict], None] | None = None  # a content block complete in the stream (early tool start)


NOBODY = Observer()


class MissingKey(RuntimeError):
    """A real model was chosen with no API key and no base URL."""

    def __init__(self, model: str):
        self.model = model
        super().__init__(NEEDS_KEY.format(model=repr(model)))


def scripted_transport(context_window: int | None = None) -> httpx2.MockTransport:
    """An HTTP transport that answers `/v1/messages` with the scripted model, in-process.

    It reads the SDK's retry header (a scenario may fail its first attempts) and
    refuses a prompt longer than `context_window`, as the API does. A scenario
    may take time to write its answer (`scripted.pace`): the stream then comes
    block by block, as a real model's does.
    """

    def handle(request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/v1/messages"):
            return httpx2.Response(404, json=scripted.error_body(f"no route {request.url.path}", "not_found_error"))
        try:
            body = json.loads(request.content)
        except ValueError:
            return httpx2.Response(400, json=scripted.error_body("the request body is not JSON"))
        status, answer = scripted.respond(body, retry=retries_of(request), context_window=context_window)
        pace = scripted.pace(body) if status == 200 else 0.0
        if status == 200 and body.get("stream"):
            return httpx2.Response(200, content=scripted.sse_chunks(answer, pace),
                                   headers={"content-type": "text/event-stream"})
        if pace:
            time.sleep(pace * scripted.blocks_written(answer))  # the same answer takes as long unstreamed
        return httpx2.Response(status, json=answer, headers={"request-id": "req_scripted"})

    return httpx2.MockTransport(handle)


def make_client(config: ModelConfig, on_request: Callable | None = None) -> anthropic.Anthropic:
    """The SDK client for `config`: in-process for the scripted model, over HTTP otherwise.

    `on_request` sees every HTTP attempt the SDK makes, retries included.
    """
    if config.scripted:
        return anthropic.Anthropic(
            api_key=scripted.PLACEHOLDER_KEY,
            base_url=SCRIPTED_URL,
            http_client=httpx2.Client(transport=scripted_transport(config.context_window)),
            max_retries=0,
            # answered in-process: a recorded agent's large max_tokens (Claude Code asks 128,000) is no long wait,
            # and a timeout of its own keeps the SDK from refusing it as a request that needs streaming
            timeout=config.timeout,
        )
    base_url = config.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    # The environment's key goes only to the environment's own base URL (keys.py), whoever made the config.
    key = config.api_key or keys.server_key_for(base_url, os.environ.get("ANTHROPIC_API_KEY"))
    if not key and not base_url:
        raise MissingKey(config.model)
    # A local Anthropic-compatible server often needs no key, but the SDK wants one.
    hooks = {"request": [on_request] if on_request else [], "response": [_no_long_waits]}
    http_client = capped.cap(anthropic.DefaultHttpxClient(event_hooks=hooks, timeout=config.timeout))
    return anthropic.Anthropic(api_key=key or "no-key", base_url=base_url, timeout=config.timeout,
                               max_retries=config.max_retries, http_client=http_client)


LONGEST_WAIT = 60.0  # seconds; a learner at a page should not wait longer for one retry


def _no_long_waits(response) -> None:
    """Turn a retry the server asks to delay by more than LONGEST_WAIT into an error shown at once.

    The SDK honours any `retry-after`, even hours: the page would hang that long.
    Its own `x-should-retry: false` makes it give up instead, and the error
    message says how long the server asked to wait.
    """
    headers = response.headers
    wait = None
    try:
        if "retry-after-ms" in headers:
            wait = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            wait = float(headers["retry-after"])
    except ValueError:
        return  # an HTTP date: the SDK parses those itself
    if wait is not None and wait > LONGEST_WAIT:
        headers["x-should-retry"] = "false"


def retries_of(request: httpx2.Request) -> int:
    """How many times the SDK had retried before sending `request`.

    The SDK retries by its own rules (429, 5xx, timeouts; retry-after; backoff) and
    numbers every attempt in this header: reading it makes the retries visible
    without redoing them.
    """
    try:
        return max(0, int(request.headers.get("x-stainless-retry-count") or 0))
    except ValueError:
        return 0


class InvalidResponse(RuntimeError):
    """A 200 answer the loop cannot use, such as a tool_use block without an id."""

    def __init__(self, n: int, missing: str):
        self.n, self.missing = n, missing
        super().__init__(NO_ID.format(n=n, missing=missing))


def _check_tool_uses(response: dict) -> None:
    for n, block in enumerate(response["content"]):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            missing = [k for k in ("id", "name") if not block.get(k)]
            if missing:
                raise InvalidResponse(n, " or ".join(missing))


class Model:
    """Calls the model for stage 2 and returns a `Reply`."""

    def __init__(self, config: ModelConfig, client: anthropic.Anthropic | None = None):
        self.config = config
        self.client = client or make_client(config, on_request=self._attempt)
        self._observer = NOBODY  # the observer of the call under way

    def _attempt(self, request) -> None:
        if self.config.allowance is not None:  # the server's key: within its limits, or nothing is sent
            try:
                self.config.allowance.before_call()
            except keys.KeyRefused as exc:
                raise _NotSent(exc) from None
        if self._observer.on_attempt:
            self._observer.on_attempt(retries_of(request) + 1, self.config.max_retries + 1)

    @property
    def name(self) -> str:
        return scripted.MODEL_NAME if self.config.scripted else self.config.model

    def create(self, messages: list, tools: list | None, observer: Observer | None = None, *,
               system: str | None | object = ..., max_tokens: int | None = None, attempt: int = 1) -> Reply:
        """One call with system, messages, tools and max_tokens, as the chapter makes it; `observer` watches it.

        A sub-agent passes its own `system`; a summary call (compaction) passes none, no tools and a smaller
        `max_tokens`, as the course's s06 does. `attempt` > 1 is the complete loop's own retry of a call: the
        SDK's retry header says so, as it does for the SDK's own retries.
        """
        self._observer = observer or NOBODY
        try:
            return self._create(messages, tools, self.config.system if system is ... else system,
                                max_tokens or self.config.max_tokens, attempt)
        except _NotSent as exc:
            raise exc.refusal from None
        finally:
            self._observer = NOBODY

    def _create(self, messages: list, tools: list | None, system: str | None, max_tokens: int,
                attempt: int = 1) -> Reply:
        kwargs = dict(model=self.name, messages=messages, max_tokens=max_tokens)
        if system is not None:
            kwargs["system"] = system
        if tools is not None:
            kwargs["tools"] = tools
        if attempt > 1:
            kwargs["extra_headers"] = {"x-stainless-retry-count": str(attempt - 1)}
        started = time.perf_counter()
        on_text, on_block = self._observer.on_text, self._observer.on_block
        if self.config.stream:
            with self.client.messages.stream(**kwargs) as stream:
                complete = False
                for event in stream:
                    if event.type == "text" and on_text:
                        on_text(event.text)
                    elif event.type == "content_block_stop" and on_block:
                        on_block(event.content_block.to_dict())
                    complete = complete or event.type == "message_stop"
                if not complete:  # the connection closed mid-answer
                    raise _bad_answer(stream.response, "the stream ended before message_stop")
                message = stream.get_final_message()
                answer = stream.response
            retries = retries_of(answer.request)  # a stream reports no retries_taken: its last request says
        else:
            raw = self.client.messages.with_raw_response.create(**kwargs)
            try:
                message = raw.parse()
            except ValueError as exc:  # e.g. a proxy's HTML page sent as application/json
                raise _bad_answer(raw.http_response, f"the body is not JSON ({exc})") from None
            if not isinstance(message, anthropic.BaseModel):  # parsed as text: not a JSON answer at all
                raise _bad_answer(raw.http_response, f"expected JSON, got {raw.http_response.headers.get('content-type')!r}")
            answer = raw.http_response
            retries = raw.retries_taken
        took = (time.perf_counter() - started) * 1000
        response = message.to_dict()
        if self.config.allowance is not None:
            self.config.allowance.after_call(response.get("usage"))
        if not isinstance(response.get("content"), list):  # the later stages read it
            raise _bad_answer(answer, "it has no `content` list")
        _check_tool_uses(response)
        request = {k: v for k, v in json.loads(answer.request.content).items() if k != "messages"}
        return Reply(response=response, request=request, duration_ms=round(took, 3), retries=retries)


class _NotSent(anthropic.AnthropicError):
    """A refusal raised before an HTTP attempt. The SDK neither wraps nor retries its own error type."""

    def __init__(self, refusal: keys.KeyRefused):
        self.refusal = refusal
        super().__init__(str(refusal))


def _bad_answer(response: httpx2.Response, why: str) -> anthropic.APIResponseValidationError:
    """The SDK's own error for an answer that is not a Messages API response, so `errors.explain` can word it."""
    return anthropic.APIResponseValidationError(response, None, message=why)
