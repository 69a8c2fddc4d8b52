"""A recorded history becomes the steps a live run would have made.

An import knows only the messages (and, for some formats, the responses and
tool runs recorded beside them). `trace_from_history` walks the history by the
chapter's rules and emits the same stages, in the same order, with the same
`turn_count`, `transition_reason` and `n_messages` as `Run.execute` would:

    user message              -> user_request
    assistant message         -> call_model, append_assistant, decide
      each of its tool_use    -> run_tool (its result read from the next message)
    user message of results   -> write_back  (turn_count += 1, "tool_result")

so every view of a live run (history, pairs, LoopState, diagram) works on an
imported one unchanged. Nothing here runs a tool or calls a model.

A step's `detail` holds what runner.py puts there, less what the source did
not record (no `duration_ms` unless recorded, no `retries`), plus:
    call_model    "recorded": a response was recorded beside the history;
                  "stop_reason_inferred": the stop_reason was filled in from the content;
                  "cycle": the course trace's cycle number
    run_tool      "recorded": false when no tool_result answered the tool_use (the step
                  then carries an is_error tool_result saying so, in detail only);
                  "tool_use_result": a Claude Code log's tool-specific account of the run;
                  "tool_execution": the course trace's {name, input, output}
    user_request  "note": why a user message past the first is a step of its own
"""

from __future__ import annotations

from ..blocks import tool_result
from ..rules import blocks, tool_results, tool_uses
from ..runner import GO_ON, why_ended
from ..tools import ToolOutput
from ..trace import Step, Trace
from ..transcript import MAX_COUNT
from .common import SETTINGS, id_key

NOT_RECORDED = "(no tool_result was recorded for this tool_use)"


def message_text(message: dict) -> str:
    """The text of a message, or a note of what it holds when it has no text."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
    if texts:
        return "\n".join(str(t) for t in texts)
    kinds = [b.get("type") if isinstance(b, dict) else type(b).__name__ for b in blocks(message)]
    return "(" + ", ".join(str(k) for k in kinds) + ")" if kinds else "(empty)"


def trace_from_history(messages: list, meta: dict, responses: dict | None = None, tool_details: dict | None = None,
                       *, times: dict | None = None, warnings: list | None = None) -> Trace:
    """The trace a live run would have recorded for `messages`.

    `messages` becomes the trace's history as it is (not copied). Optional facts
    recorded beside it:
      responses    {index of an assistant message: the response as recorded}: its
                   `stop_reason`, `usage`, `id`, `model`, ... (`content` too, when
                   the recorded response differs from the message); "request" (the
                   settings of that call), "duration_ms" and "detail" (more facts for
                   the call_model step) are read off it.
      tool_details {tool_use id (common.id_key): extra facts for its run_tool step}, e.g. the
                   tool-specific `toolUseResult` of a Claude Code log.
      times        {message index: seconds since the epoch}.
    A missing stop_reason is inferred as the API would give it: "tool_use" when
    the message has tool_use blocks, else "end_turn". What cannot be derived
    (a tool_use nobody answered, ...) is appended to `warnings`.
    """
    responses = responses or {}
    tool_details = tool_details or {}
    times = times or {}
    notes = warnings if warnings is not None else []
    settings = {k: meta[k] for k in SETTINGS if meta.get(k) is not None}
    steps: list[Step] = []
    # The chapter's LoopState, as the walk goes.
    turn_count, transition_reason, stop_reason, ended = 1, None, None, None
    input_tokens = output_tokens = 0
    write_backs: set[int] = set()  # user messages that answer the previous assistant's tool_use blocks

    def add(stage: str, n_messages: int, detail: dict, at: float) -> None:
        steps.append(Step(
            index=len(steps), stage=stage, turn_count=turn_count, transition_reason=transition_reason,
            stop_reason=stop_reason, n_messages=n_messages, input_tokens=input_tokens,
            output_tokens=output_tokens, ended=ended, time=at, detail=detail,
        ))

    for i, message in enumerate(messages):
        at = float(times.get(i) or 0.0)
        role = message.get("role") if isinstance(message, dict) else None
        if role == "user" and i in write_backs:
            # Stage 5: the results go back as one user message; the loop goes round again.
            turn_count += 1
            transition_reason = "tool_result"
            ended = None
            add("write_back", i + 1, {"results": len(tool_results(message))}, at)
        elif role == "user":
            # Stage 1. A user message anywhere else is a new request (after the model's answer)
            # or one the person or the harness slipped in before the next call.
            detail = {"task": message_text(message)}
            if i == 0 or (isinstance(messages[i - 1], dict) and messages[i - 1].get("role") == "assistant"):
                if i > 0:
                    detail["note"] = "a new request in the same conversation: the loop starts again on the history so far"
                turn_count, transition_reason, stop_reason, ended = 1, None, None, None
            else:
                detail["note"] = ("a user message that is not a write-back of tool_results (typed by the person, or "
                                  "added by the agent's harness) before the next call")
            add("user_request", i + 1, detail, at)
        elif role == "assistant":
            recorded = responses.get(i) or {}
            content = blocks(message)
            uses = tool_uses(message)
            if i == 0:
                notes.append("messages.0: the history starts with an assistant message (no user request was recorded)")
            elif isinstance(messages[i - 1], dict) and messages[i - 1].get("role") == "assistant":
                notes.append(f"messages.{i}: an assistant message follows another assistant message "
                             "(the API would join them into one)")
            # Stage 2: the call, as far as the record tells it.
            request = dict(settings)
            request.update({k: v for k, v in (recorded.get("request") or {}).items() if k != "messages"})
            response = {k: v for k, v in recorded.items() if k not in ("request", "duration_ms", "detail")}
            response.setdefault("content", content)
            if not isinstance(response.get("stop_reason"), (str, type(None))):
                notes.append(f"messages.{i}: the recorded stop_reason {response['stop_reason']!r} is not a string; "
                             "inferred from the content instead")
                response["stop_reason"] = None
            inferred = response.get("stop_reason") is None
            if inferred:
                response["stop_reason"] = "tool_use" if uses else "end_turn"
            stop_reason = response["stop_reason"]
            usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
            input_tokens += _tokens(usage.get("input_tokens"))
            output_tokens += _tokens(usage.get("output_tokens"))
            ended = None
            # Facts the source did not record are left out, not guessed (docs/transcript-format.md).
            timing = {"duration_ms": recorded["duration_ms"]} if recorded.get("duration_ms") is not None else {}
            add("call_model", i, {"request": request, "response": response, **timing, "recorded": bool(recorded),
                                  "stop_reason_inferred": inferred, **(recorded.get("detail") or {})}, at)
            # Stage 3: the assistant response itself goes into the history.
            add("append_assistant", i + 1, {}, at)
            # Stage 4: anything but stop_reason "tool_use" ends the loop.
            continues = stop_reason == "tool_use" and bool(uses)
            if not continues:
                transition_reason = None
                ended = stop_reason if stop_reason != "tool_use" else "tool_use without a tool_use block"
            add("decide", i + 1, {"continues": continues,
                                  "why": GO_ON if continues else why_ended(stop_reason)}, at)
            if uses and not continues:
                notes.append(f"messages.{i}: stop_reason {stop_reason!r} ends the chapter's loop, yet the message has "
                             f"{len(uses)} tool_use block(s); they are shown as the log went on")
            if not uses:
                continue
            following = messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
            answers = {}
            if following is not None and following.get("role") == "user" and tool_results(following):
                answers = {id_key(b.get("tool_use_id")): b for b in tool_results(following)}
                write_backs.add(i + 1)
            # Stage 4, again for each tool_use: what the log says the tool gave back.
            for use in uses:
                key = id_key(use.get("id"))
                result = answers.get(key)
                if result is None:
                    result = tool_result(use.get("id"), ToolOutput(NOT_RECORDED, is_error=True))
                    notes.append(f"messages.{i}: tool_use {use.get('id')} ({use.get('name')}) has no tool_result "
                                 + ("in the next message" if following is not None else "(the history ends here)"))
                detail = {"tool_use_id": use.get("id"), "name": use.get("name"), "input": use.get("input"),
                          "output": result.get("content"), "is_error": bool(result.get("is_error")),
                          "tool_result": result, "given_by_user": False, "recorded": key in answers}
                detail.update(tool_details.get(key) or {})
                add("run_tool", i + 1, detail, float(times.get(i + 1) or at) if key in answers else at)
    trace = Trace(meta=meta, messages=messages, steps=steps)
    trace.first()
    return trace


def cover_the_rest(trace: Trace) -> str | None:
    """Steps for the messages a transcript holds past its last step; what was done, said in one line (None: nothing).

    A transcript cut after its history was written (by hand, or by a tool that
    kept `messages` and dropped steps) would replay without its last messages and
    say nothing. When its steps are the ones the chapter's rules give for the
    history, the missing ones are derived here; otherwise the warning says where
    the replay stops.
    """
    covered = trace.steps[-1].n_messages if trace.steps else 0
    total = len(trace.messages)
    if covered >= total:
        return None
    which = f"the last {total - covered} message(s) (messages.{covered} to messages.{total - 1})"
    derived = trace_from_history(trace.messages, trace.meta, warnings=[]).steps
    k = len(trace.steps)
    if k < len(derived) and [(s.stage, s.n_messages) for s in trace.steps] == [(s.stage, s.n_messages) for s in derived[:k]]:
        trace.steps.extend(derived[k:])
        return (f"{which} had no step in the file: steps {k + 1} to {len(trace.steps)} were derived from the "
                "history by the chapter's rules")
    return f"{which} are in the file, but no step reaches them and none could be derived: the replay ends before them"


def _tokens(value: object) -> int:
    """A recorded token count, or 0 for one that is no count (a string, a 400-digit number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_COUNT else 0
