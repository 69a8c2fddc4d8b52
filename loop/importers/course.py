"""The course's recorded traces (shareAI-lab/learn-claude-code, web/src/data/traces/*.json).

    {version, prompt, model, total_cycles, total_input_tokens, total_output_tokens,
     cycles: [{cycle, elapsed_ms, request: {model, system, messages, tools, max_tokens},
               response: {id, model, stop_reason, content, usage},
               tool_executions: [{name, input, output}]}]}

Each cycle is one call of the model. The history is what the requests sent
(each request's `messages` is the whole history up to that call), then the
last response, then the results of its tools if it asked for some. The
response is kept as recorded beside the history: where the recorder did not
understand a block it wrote `{"type": "unknown", "raw": "..."}`, which is shown
raw, while the next request carries the block as it was really sent.
"""

from __future__ import annotations

from ..blocks import tool_result
from ..rules import tool_uses
from ..tools import ToolOutput
from .common import SETTINGS, Parsed, clean_content, id_key
from .notes import Notes


def looks_like(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("cycles"), list)


def read(trace: dict, notes: Notes) -> Parsed:
    parsed = Parsed()
    history: list = []
    cycles = [c for c in trace["cycles"] if isinstance(c, dict)]
    if len(cycles) < len(trace["cycles"]):
        notes.warn(f"cycles: {len(trace['cycles']) - len(cycles)} item(s) are not objects; passed over")
    first_request = next((c["request"] for c in cycles if isinstance(c.get("request"), dict)), {})
    settings = {k: first_request[k] for k in SETTINGS if k in first_request}
    for k, cycle in enumerate(cycles):
        name = f"cycle {cycle.get('cycle', k + 1)}"
        request = cycle.get("request") if isinstance(cycle.get("request"), dict) else {}
        sent = request.get("messages")
        if isinstance(sent, list):
            # What the call really sent is the history up to it.
            if len(sent) < len(history):
                notes.warn(f"{name}: its request sent {len(sent)} messages, fewer than the {len(history)} the cycles "
                           "before it add up to; the request's are kept")
            elif k > 0 and len(sent) > len(history):
                notes.warn(f"{name}: its request sent {len(sent)} messages, more than the {len(history)} the cycles "
                           "before it add up to; the request's are kept")
            history = []
            for j, m in enumerate(sent):
                content = clean_content(m.get("content"), f"{name}.request.messages[{j}]", notes) if isinstance(m, dict) else None
                if content is None or m.get("role") not in ("user", "assistant"):
                    notes.warn(f"{name}.request.messages[{j}]: not a user or assistant message with content; passed over")
                    continue
                history.append({"role": m["role"], "content": content})
            parsed.origins = [f"{name}.request.messages[{j}]" for j in range(len(history))]
        elif k == 0:
            history = [{"role": "user", "content": str(trace.get("prompt", ""))}]
            parsed.origins = ["prompt"]
            notes.warn(f"{name}: the request's messages were not recorded; the history starts from the prompt")
        else:
            notes.warn(f"{name}: the request's messages were not recorded; the history is built from the responses "
                       "and tool_executions before it")
        response = cycle.get("response")
        if not isinstance(response, dict):
            notes.warn(f"{name}: no response was recorded; the trace ends before it")
            break
        content = clean_content(response.get("content"), f"{name}.response", notes)
        if content is None:
            notes.warn(f"{name}: the response has no content; the trace ends before it")
            break
        index = len(history)
        recorded = dict(response)
        recorded["content"] = content
        recorded["request"] = {key: request[key] for key in SETTINGS if key in request}
        if cycle.get("elapsed_ms") is not None:
            recorded["duration_ms"] = cycle["elapsed_ms"]
        recorded["detail"] = {"cycle": cycle.get("cycle", k + 1)}
        parsed.responses[index] = recorded
        history.append({"role": "assistant", "content": content})
        parsed.origins.append(f"{name}.response")
        uses = tool_uses(history[-1])
        recorded_runs = cycle.get("tool_executions")
        executions = [e for e in recorded_runs if isinstance(e, dict)] if isinstance(recorded_runs, list) else []
        if len(executions) != len(uses):
            notes.warn(f"{name}: {len(uses)} tool_use block(s) but {len(executions)} tool_execution(s) recorded")
        results = []
        for use, execution in zip(uses, executions):
            if execution.get("name") != use.get("name"):
                notes.warn(f"{name}: tool_execution {execution.get('name')!r} recorded for tool_use "
                           f"{use.get('name')!r} ({use.get('id')})")
            parsed.tool_details[id_key(use.get("id"))] = {"tool_execution": execution}
            results.append(tool_result(use.get("id"), ToolOutput(execution.get("output", ""))))
        if results:
            # Stage 5 as the recorder ran it; the next request, if any, replaces this with what it sent.
            history.append({"role": "user", "content": results})
            parsed.origins.append(f"{name}.tool_executions")
    # Where the recorder's response differs from what the next request sent, say so once a cycle.
    for index, recorded in parsed.responses.items():
        if index < len(history) - 1 and recorded["content"] != history[index]["content"]:
            unknown = sum(1 for b in recorded["content"] if isinstance(b, dict) and b.get("type") == "unknown")
            why = f" ({unknown} block(s) recorded as type 'unknown')" if unknown else ""
            notes.warn(f"cycle {recorded['detail']['cycle']}: the response as recorded{why} differs from the assistant message "
                       f"the next request sent; call_model shows the response, the history (messages.{index}) what was sent")
    _check_totals(trace, cycles, notes)
    parsed.messages = history
    parsed.meta = {**settings, "task": trace.get("prompt") or "",
                   "course_trace": {k: v for k, v in trace.items() if k != "cycles"}}
    if trace.get("model") and "model" not in parsed.meta:
        parsed.meta["model"] = trace["model"]
    return parsed


def _check_totals(trace: dict, cycles: list, notes: Notes) -> None:
    if isinstance(trace.get("total_cycles"), int) and trace["total_cycles"] != len(cycles):
        notes.warn(f"total_cycles says {trace['total_cycles']}, the file holds {len(cycles)} cycle(s)")
    usages = [c["response"]["usage"] for c in cycles
              if isinstance(c.get("response"), dict) and isinstance(c["response"].get("usage"), dict)]
    for side in ("input", "output"):
        total = trace.get(f"total_{side}_tokens")
        found = sum(u.get(f"{side}_tokens") for u in usages if type(u.get(f"{side}_tokens")) is int)
        if type(total) is int and total != found:
            notes.warn(f"total_{side}_tokens says {total}, the cycles' usage adds up to {found}")
