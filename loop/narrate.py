"""One line of plain text a step: what the stage did. The CLI prints these, live and in replay."""

from __future__ import annotations

import json

from . import rules
from .trace import MAIN, STAGE_TITLES, Trace


def _short(value: object, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def head(trace: Trace, index: int) -> str:
    """`[k] turn t · stage`, with the sub-agent's thread before the turn when the step is one of its."""
    step = trace.steps[index]
    where = "" if step.thread == MAIN else f"{step.thread} · "
    return f"[{index + 1}] {where}turn {step.turn_count} · {STAGE_TITLES.get(step.stage, step.stage)}"


def describe(trace: Trace, index: int) -> str:
    """`[k] turn t · stage: what happened` for step `index`."""
    step = trace.steps[index]
    d = step.detail
    head_ = head(trace, index)
    if step.stage == "user_request":
        what = f"messages ← user: {_short(d.get('task', ''))}"
    elif step.stage == "call_model":
        response = d.get("response", {})
        content = response.get("content") if isinstance(response.get("content"), list) else []
        kinds = [b.get("type") if isinstance(b, dict) else type(b).__name__ for b in content]
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        what = (f"stop_reason={response.get('stop_reason')} · content {kinds} · "
                f"tokens in {usage.get('input_tokens')} out {usage.get('output_tokens')}")
    elif step.stage == "append_assistant":
        message = (trace.window_at(index, step.n_messages - 1, step.n_messages) or [{}])[0]
        texts = [str(b.get("text", "")) for b in rules.blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
        what = f"messages ← assistant ({step.n_messages} messages)" + (f": {_short(' '.join(texts))}" if texts else "")
    elif step.stage == "decide":
        what = ("go on: " if d.get("continues") else "the loop ends: ") + str(d.get("why", ""))
    elif step.stage == "run_tool" and d.get("thread"):
        what = f"{d.get('name')} → the subagent's answer ({d.get('thread')}): {_short(d.get('output', ''), 80)}"
    elif step.stage == "run_tool":
        flag = " [is_error]" if d.get("is_error") else ""
        what = f"{d.get('name')} {_short(d.get('input'), 60)} → {_short(d.get('output', ''), 80)}{flag} ({d.get('tool_use_id')})"
    elif step.stage == "write_back":
        what = (f"messages ← user: {d.get('results')} tool_result block(s); turn_count={step.turn_count}, "
                f"transition_reason={step.transition_reason}")
    elif step.stage == "compact":
        what = (f"{d.get('kind')}: {d.get('why', '')} · messages {d.get('messages_before')} → "
                f"{d.get('messages_after')} · about {d.get('tokens_before')} → {d.get('tokens_after')} tokens")
    else:
        what = str(d.get("why", ""))
    return f"{head_}: {what}"
