"""Run a learner's `agent_loop` in this process and record it as the sandboxed runner does (no sandbox).

The learner's names are bound as the page binds them: `client` (a real `anthropic.Anthropic` whose transport
is the offline model), `MODEL`, `SYSTEM`, `TOOLS`, `MAX_TOKENS` (the scenario's), `run_tool(block)` and
`run_bash(command)` over the scenario's tool box in a temporary workspace. Every request, response and tool
run is recorded at the transport and the tool box, one Exchange a call with the tools run after it, the
learner's line read from the stack, and which of their lines made each message sent, watched as the sandbox's
bootstrap watches it (loop/yours/watching.py, here in this process). A refused call stops the run there (the
learner's code never sees the 400), as does the call past `max_calls`.
"""

from __future__ import annotations

import inspect
import json
import linecache
import sys
import traceback

import anthropic
import httpx2

from loop.engine import scripted
from loop.engine.language import system_prompt
from loop.engine.model import MAX_TOKENS, SCRIPTED_URL, SYSTEM as CHAPTER_SYSTEM
from loop.engine.runner import new_workspace
from loop.engine.scenarios import SCENARIOS
from loop.engine.toolsets import default_toolbox
from loop.yours import recording as rec
from loop.yours.lines import checked_made, checked_place
from loop.yours.recording import Exchange, LearnerState, Recording, ToolRun
from loop.yours.watching import Watcher

FILE = "your_loop.py"


class ToolText(str):
    """What run_tool / run_bash return, as in the sandbox: the output, a str, that also says whether the run failed."""

    is_error = False


class _Stop(BaseException):
    """Ends the run from the transport or the tool box: not an Exception, so neither the SDK nor the learner's
    `except Exception` catches it."""

    def __init__(self, outcome: str, message: str = ""):
        super().__init__(message)
        self.outcome, self.message = outcome, message


def _line() -> int | None:
    """The learner's line that is running now: the innermost frame of their file."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == FILE:
            return frame.f_lineno
        frame = frame.f_back
    return None


def _state_of(state: object) -> LearnerState:
    get = state.get if isinstance(state, dict) else (lambda key: getattr(state, key, None))
    return LearnerState(turn_count=get("turn_count"), transition_reason=get("transition_reason"))


def record(source: str, scenario: str = "list-files", lang: str = "en", max_calls: int = rec.MAX_CALLS,
           toolset: str = "s01", owner: object = None, on_wait=None) -> Recording:
    """Run `source`'s `agent_loop` on `scenario` and return what the channel and the tool box saw (`owner` and
    `on_wait`, the sandboxed runner's line for a sandbox, have nothing to wait for here)."""
    recording = Recording(source=source, scenario=scenario, lang=lang)
    linecache.cache[FILE] = (len(source), None, source.splitlines(True), FILE)  # tracebacks show their code
    try:
        code = compile(source, FILE, "exec")
    except SyntaxError as exc:
        recording.outcome = rec.SYNTAX_ERROR
        recording.error_line, recording.error_column, recording.message = exc.lineno, exc.offset, exc.msg
        return recording
    spec = SCENARIOS[scenario]
    state = {"messages": [{"role": "user", "content": spec.task_in(lang)}], "turn_count": 1,
             "transition_reason": None}

    watcher = Watcher(lambda name: name == FILE, lambda name: name)

    def handle(request: httpx2.Request) -> httpx2.Response:
        if len(recording.exchanges) >= max_calls:
            raise _Stop(rec.TOO_MANY_CALLS, f"stopped after {max_calls} model calls")
        body = json.loads(request.content)
        made = checked_made(watcher.sent(body.get("messages"), sys._getframe(1)))
        exchange = Exchange(request=body, line=_line(), state=_state_of(state), made=made)
        recording.exchanges.append(exchange)
        status, answer = scripted.respond(body)
        if status != 200:
            error = answer.get("error", {})
            exchange.error = {"status": status, "type": error.get("type"), "message": error.get("message")}
            raise _Stop(rec.REFUSED, exchange.error["message"] or "")
        exchange.response = answer
        return httpx2.Response(status, json=answer, headers={"request-id": "req_scripted"})

    client = anthropic.Anthropic(api_key=scripted.PLACEHOLDER_KEY, base_url=SCRIPTED_URL, max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))
    with default_toolbox(new_workspace(), timeout=10, toolset=spec.toolset or toolset) as tools:
        def run(name: str, tool_input: dict, tool_use_id: str | None) -> str:
            output = tools.run(name, tool_input)
            if recording.exchanges:
                recording.exchanges[-1].tool_runs.append(ToolRun(
                    name=name, input=tool_input, output=output.content, is_error=bool(output.is_error),
                    tool_use_id=tool_use_id, line=_line()))
            text = ToolText(output.content)
            text.is_error = bool(output.is_error)
            return text

        def run_tool(block) -> str:
            get = block.get if isinstance(block, dict) else (lambda key: getattr(block, key, None))
            return run(get("name"), dict(get("input") or {}), get("id"))

        def run_bash(command: str) -> str:
            return run("bash", {"command": command}, None)

        names = {"__name__": "your_loop", "client": client, "MODEL": scripted.MODEL_NAME,
                 "SYSTEM": system_prompt(lang, CHAPTER_SYSTEM), "TOOLS": tools.specs(),
                 "MAX_TOKENS": min(spec.max_tokens, MAX_TOKENS),
                 "run_tool": run_tool, "run_bash": run_bash}
        try:
            exec(code, names)
            agent_loop = names["agent_loop"]
            takes_messages = list(inspect.signature(agent_loop).parameters)[:1] == ["messages"]
            watcher.start()
            try:
                agent_loop(state["messages"] if takes_messages else state)
            finally:
                watcher.stop()
                if watcher.left is not None:
                    recording.left = checked_place({"file": watcher.left[0], "line": watcher.left[1]})
        except _Stop as stop:
            recording.outcome, recording.message = stop.outcome, stop.message
        except Exception as exc:  # noqa: BLE001  their code's exception, with their frames only
            theirs = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILE]
            recording.outcome = rec.EXCEPTION
            recording.message = f"{type(exc).__name__}: {exc}"
            recording.error_line = theirs[-1].lineno if theirs else None
            recording.traceback = "".join(traceback.format_list(theirs)) + recording.message + "\n"
    return recording
