"""One line of plain text a step: what the stage did. The CLI prints these, live and in replay."""

from __future__ import annotations

import json

from . import rules
from .trace import STAGE_TITLES, Trace


def short(value: object, width: int = 80) -> str:
    """One line of at most `width` characters; JSON for anything that is not a string."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def describe(trace: Trace, index: int) -> str:
    """`[k] turn t · stage: what happened` for step `index`."""
    step = trace.steps[index]
    d = step.detail
    head = f"[{index + 1}] turn {step.turn_count} · {STAGE_TITLES.get(step.stage, step.stage)}"
    if step.stage == "user_request":
        what = f"messages ← user: {short(d.get('task', ''), 100)}"
    elif step.stage == "call_model":
        response = d.get("response", {})
        content = response.get("content") if isinstance(response.get("content"), list) else []
        kinds = [b.get("type") if isinstance(b, dict) else type(b).__name__ for b in content]
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        what = (f"stop_reason={response.get('stop_reason')} · content {kinds} · "
                f"tokens in {usage.get('input_tokens')} out {usage.get('output_tokens')}")
    elif step.stage == "append_assistant":
        message = trace.messages[step.n_messages - 1] if step.n_messages else {}
        texts = [str(b.get("text", "")) for b in rules.blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
        what = f"messages ← assistant ({step.n_messages} messages)" + (f": {short(' '.join(texts), 100)}" if texts else "")
    elif step.stage == "decide":
        what = ("go on: " if d.get("continues") else "the loop ends: ") + str(d.get("why", ""))
    elif step.stage == "run_tool":
        flag = " [is_error]" if d.get("is_error") else ""
        what = f"{d.get('name')} {short(d.get('input'), 60)} → {short(d.get('output', ''), 80)}{flag} ({d.get('tool_use_id')})"
    elif step.stage == "write_back":
        what = (f"messages ← user: {d.get('results')} tool_result block(s); turn_count={step.turn_count}, "
                f"transition_reason={step.transition_reason}")
    else:
        what = str(d.get("why", ""))
    return f"{head}: {what}"
