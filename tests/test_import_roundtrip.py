"""Any valid history imports cleanly and survives the transcript format unchanged."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop.engine import rules
from loop.files import transcript
from loop.importers import import_bytes
from tests.searches import examples

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@st.composite
def histories(draw, max_turns: int = 6) -> list:
    """A valid Messages API history: requests, answers, tool_use blocks each answered by the next message."""
    n_ids = 0
    messages: list = []

    def request() -> dict:
        if draw(st.booleans()):
            return {"role": "user", "content": draw(text)}
        return {"role": "user", "content": [{"type": "text", "text": draw(text)}]}

    messages.append(request())
    for _ in range(draw(st.integers(1, max_turns))):
        content = []
        if draw(st.booleans()):
            content.append({"type": "text", "text": draw(text)})
        uses = []
        for _ in range(draw(st.integers(0 if content else 1, 3))):
            n_ids += 1
            use = {"type": "tool_use", "id": f"toolu_{n_ids:04d}", "name": draw(st.sampled_from(["bash", "read_file"])),
                   "input": {"command": draw(text)}}
            uses.append(use)
            content.append(use)
        messages.append({"role": "assistant", "content": content})
        if uses:
            results = []
            for use in draw(st.permutations(uses)):
                result = {"type": "tool_result", "tool_use_id": use["id"],
                          "content": draw(st.one_of(text, st.just([{"type": "text", "text": "ok"}])))}
                if draw(st.booleans()):
                    result["is_error"] = True
                results.append(result)
            messages.append({"role": "user", "content": results})
        elif draw(st.booleans()):
            messages.append(request())  # the loop ended; the person asks again
        else:
            break
    if messages[-1]["role"] == "user" and not rules.tool_results(messages[-1]):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": draw(text)}]})
    return messages


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_a_valid_history_imports_without_warnings_and_round_trips(messages):
    original = json.loads(json.dumps(messages))
    imported = import_bytes(json.dumps(messages, ensure_ascii=False).encode(), "history.json")
    assert imported.format == "anthropic-messages"
    assert imported.warnings == []
    assert imported.trace.messages == original
    back = transcript.loads(transcript.dumps(imported.trace))  # strict: a valid history loads as a live run's does
    assert back.messages == original
    assert back.steps == imported.trace.steps


@settings(max_examples=examples(150), deadline=None)
@given(histories())
def test_derived_steps_follow_the_chapter(messages):
    trace = import_bytes(json.dumps(messages).encode()).trace
    stages = [s.stage for s in trace.steps]
    uses = [u for m in messages for u in rules.tool_uses(m)]
    assert stages.count("call_model") == sum(m["role"] == "assistant" for m in messages)
    assert stages.count("run_tool") == len(uses)
    assert stages.count("write_back") == sum(bool(rules.tool_results(m)) for m in messages)
    # Each run_tool shows the result its tool_use really got, and the history only ever grows.
    answers = {r["tool_use_id"]: r for m in messages for r in rules.tool_results(m)}
    assert [s.detail["tool_result"] for s in trace.steps if s.stage == "run_tool"] == [answers[u["id"]] for u in uses]
    sizes = [s.n_messages for s in trace.steps]
    assert sizes == sorted(sizes) and sizes[-1] == len(messages)
    for i, step in enumerate(trace.steps):
        assert trace.messages_at(i) == messages[: step.n_messages]
    # turn_count goes up by one at each write_back and starts again at 1 with each new request.
    for before, step in zip(trace.steps, trace.steps[1:]):
        if step.stage == "write_back":
            assert (step.turn_count, step.transition_reason) == (before.turn_count + 1, "tool_result")
        elif step.stage == "user_request" and before.stage == "decide":
            assert step.turn_count == 1
        else:
            assert step.turn_count == before.turn_count
