"""What a learner's loop did, as seen from OUTSIDE their code: the channel to the model and the tool box.

Nothing here is what the learner's code reports about itself: each request is the JSON body their client
really sent, each response what the model really answered, each tool run what the tool box really ran. Only
`LearnerState` is read from their objects, and it is shown beside the chapter's LoopState, never trusted.
A recording is plain data (JSON-able, `to_dict`/`from_dict`): it crosses from the sandbox's keeper to the
trace builder, and is kept in the transcript with the learner's source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..engine import chat

# How a run of the learner's code ended (Recording.outcome)
RETURNED = "returned"  # agent_loop returned by itself
EXCEPTION = "exception"  # their code raised (traceback: their frames only)
SYNTAX_ERROR = "syntax_error"  # it did not compile (error_line, error_column)
REFUSED = "refused"  # the model's API refused a request (a 400): the loop broke a rule there
TOO_MANY_CALLS = "too_many_calls"  # stopped after MAX_CALLS model calls
TIMEOUT = "timeout"  # stopped after MAX_SECONDS
KILLED = "killed"  # the sandbox killed it (memory, processes, output), or the keeper stopped it (a limit)
MISSING_MODULE = "missing_module"  # it imports a module the sandbox does not have (message: which, and what is)
OUTCOMES = (RETURNED, EXCEPTION, SYNTAX_ERROR, REFUSED, TOO_MANY_CALLS, TIMEOUT, KILLED, MISSING_MODULE)

MAX_CALLS = 50  # model calls a run, shared by the page and the CLI
MAX_SECONDS = 60  # wall-clock seconds a run
MAX_TOOL_RUNS = 300  # tool runs a run: the tool box's, and the commands the program reports it ran
MAX_BYTES = 8 * 2**20  # bytes of requests, answers and tool output a recording holds

# Who ran a tool (ToolRun.by)
BY_TOOL_BOX = "loopscope"  # Loopscope's tool box, asked through the given run_tool / run_bash: seen by the keeper
BY_PROGRAM = "program"  # the learner's own code (subprocess, os.system): their program's report, shown as theirs


@dataclass
class ToolRun:
    """One tool the learner's code ran through `run_tool(block)` or `run_bash(command)`, as the tool box ran it."""

    name: str
    input: dict
    output: str
    is_error: bool = False
    tool_use_id: str | None = None  # the block's id when it came through run_tool(block)
    line: int | None = None  # the learner's line that called it
    by: str = BY_TOOL_BOX  # BY_TOOL_BOX, or BY_PROGRAM: a command their own code ran (no output: theirs to keep)
    file: str | None = None  # their file of `line`, as their folder names it, when it is not the one run


@dataclass
class LearnerState:
    """The learner's own `state` as their code left it when it made a call (None: they do not keep it)."""

    turn_count: object = None
    transition_reason: object = None


@dataclass
class Exchange:
    """One model call as the channel saw it, then the tools run before the next call."""

    request: dict  # the body their client sent: model, system, messages, tools, max_tokens, …
    response: dict | None = None  # the Messages API response body; None when refused
    error: dict | None = None  # {"status": 400, "type": "invalid_request_error", "message": "…"} when refused
    line: int | None = None  # the learner's line that sent it (the innermost frame in their file)
    state: LearnerState = field(default_factory=LearnerState)
    tool_runs: list[ToolRun] = field(default_factory=list)
    dialect: str = "anthropic"  # the API the request spoke (loop/engine/wire.py): "anthropic" or "openai"
    file: str | None = None  # their file of `line`, when it is not the one run
    # Which line of theirs made each message sent, as their program reports it (watching.py; lines.py checks it):
    # [{"i": index in the request's messages, "line", "file", "blocks": [[block index, line, file], ...]}, ...]
    made: list = field(default_factory=list)

    def as_messages(self) -> tuple[dict, dict | None]:
        """(request, response) in the Messages API's form, whatever API the call spoke: an OpenAI chat request
        and its completion translated (loop/engine/chat.py), the tool_calls' ids kept."""
        if self.dialect != "openai":
            return self.request, self.response
        request = chat.messages_request(self.request) if isinstance(self.request, dict) else {}
        return request, chat.message(self.response) if self.response is not None else None


@dataclass
class Recording:
    source: str  # the learner's file, as run
    scenario: str
    lang: str
    exchanges: list[Exchange] = field(default_factory=list)
    outcome: str = RETURNED
    traceback: str | None = None  # their frames only, their line numbers
    error_line: int | None = None  # of the exception or the syntax error
    error_column: int | None = None
    message: str | None = None  # one line: the exception, the syntax error, why it was stopped
    seconds: float = 0.0
    sandbox: str = "bubblewrap"  # how it ran: "bubblewrap", or "plain" where bubblewrap cannot run (docs/security.md)
    output: str = ""  # what their code printed (stdout and stderr), cut at sandboxed.OUTPUT_MOST bytes
    final_state: LearnerState | None = None  # their state when agent_loop ended (None: unknown, or killed)
    file: str = "your_loop.py"  # the file run, as its folder names it
    status: int | None = None  # the exit status of the learner's process, as the keeper saw it
    offline: list[str] = field(default_factory=list)  # addresses it asked for that no model answers (no network)
    said: dict | None = None  # `message` as a Note's JSON (catalogs.Note.to_json), to be said in any language
    left: dict | None = None  # {"line", "file"} where their loop returned after its last call, as their program says
    files: dict = field(default_factory=dict)  # the project's modules it imported, as run: path -> text (bounded)
    # requests to no model call it answered or forwarded, as {method, path, status, what}: token counting, an
    # endpoint the offline model does not serve (a recording of a command, `python -m loop record`)
    side_calls: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Recording":
        exchanges = []
        for e in data.get("exchanges", []):
            runs = [ToolRun(**r) for r in e.get("tool_runs", [])]
            state = LearnerState(**(e.get("state") or {}))
            exchanges.append(Exchange(**{**e, "tool_runs": runs, "state": state}))
        final = data.get("final_state")
        return cls(**{**data, "exchanges": exchanges, "final_state": LearnerState(**final) if final else None})
