"""Transcript format v2: threads and rewritten histories survive a save, a load and a journal, step by step."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loop.files import transcript
from loop.engine.trace import MAIN, Step, Thread, Trace
from loop.files.transcript import Journal, TranscriptError, journal_line
from tests.searches import examples


def message(role: str, n: int) -> dict:
    return {"role": role, "content": f"{role} {n}"}


# One operation a step: (which thread, what it does, how much).
OPS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["append", "append", "append", "micro", "auto"]),
                         st.integers(1, 3)), min_size=1, max_size=40)


def build(ops) -> tuple[Trace, list]:
    """A trace made by appending and rewriting, and a deep copy of each step's history as it was made."""
    trace = Trace(meta={"task": "t", "system": "s", "tools": []})
    counter = [0]
    held = []

    def fresh(role):
        counter[0] += 1
        return message(role, counter[0])

    for which, op, k in ops:
        tid = MAIN if which == 0 or len(trace.threads) == 1 and which == 2 else f"task-{which}"
        if tid not in trace.threads:
            trace.add_thread(Thread(tid, parent=MAIN, parent_tool_use_id=f"toolu_{which}", system="sub",
                                    tools=[{"name": "bash"}], label=f"child {which}"))
        messages = trace.threads[tid].messages
        detail: dict = {}
        rewritten: list = []
        stage = "user_request"
        if op == "append" or not messages:
            messages.extend(fresh("user" if len(messages) % 2 == 0 else "assistant") for _ in range(k))
        elif op == "micro":
            stage = "compact"
            slots = sorted({(k * 7 + j) % len(messages) for j in range(k)})
            detail = {"kind": "micro", "replaced": [{"index": j, "message": messages[j]} for j in slots]}
            for j in slots:
                messages[j] = {"role": messages[j]["role"], "content": f"[placeholder {counter[0]}]"}
            rewritten = slots
        else:
            stage = "compact"
            detail = {"kind": "auto", "history_before": list(messages)}
            messages[:] = [fresh("user") for _ in range(k)]
            rewritten = list(range(k))
        trace.add(Step(0, stage, 1, None, None, len(messages), 0, 0, None, 0.0, detail, thread=tid), rewritten)
        held.append(copy.deepcopy(messages))
    return trace, held


@settings(max_examples=examples(150), deadline=None)
@given(OPS)
def test_every_history_comes_back_from_the_file_and_the_journal(ops):
    trace, held = build(ops)
    for i in range(len(trace)):
        assert trace.messages_at(i) == held[i]
    loaded = transcript.loads(transcript.dumps(trace))
    journal = Journal()
    for n, step in enumerate(trace.steps):
        journal.add(json.loads(json.dumps(journal_line(trace, step))), f"line {n}")
    again = transcript.from_dict(journal.transcript(trace.meta))
    for i in range(len(trace)):
        assert loaded.messages_at(i) == held[i], i
        assert again.messages_at(i) == held[i], i
        start, end = 1, 3
        assert loaded.window_at(i, start, end) == held[i][start:end]
    assert list(loaded.threads) == list(trace.threads)
    assert transcript.dumps(loaded) == transcript.dumps(trace)


@pytest.fixture(scope="module")
def data() -> dict:
    trace, _ = build([(0, "append", 2), (1, "append", 1), (1, "append", 2), (0, "micro", 1), (0, "append", 1),
                      (0, "auto", 1), (0, "append", 1)])
    return json.loads(transcript.dumps(trace))


def error(data: dict, change) -> str:
    broken = copy.deepcopy(data)
    change(broken)
    with pytest.raises(TranscriptError) as caught:
        transcript.loads(json.dumps(broken))
    return str(caught.value)


def test_the_file_names_each_thread_and_each_steps_thread(data):
    assert [t["id"] for t in data["threads"]] == ["main", "task-1"]
    child = data["threads"][1]
    assert (child["parent"], child["parent_tool_use_id"], child["system"], child["label"]) == \
           ("main", "toolu_1", "sub", "child 1")
    assert "messages" not in data["threads"][0]  # the main thread's are the top-level messages, written once
    assert [s["thread"] for s in data["steps"]] == ["main", "task-1", "task-1", "main", "main", "main", "main"]
    assert data["steps"][3]["detail"]["kind"] == "micro" and data["steps"][5]["detail"]["kind"] == "auto"


@pytest.mark.parametrize("change, said", [
    (lambda d: d["steps"][1].update(thread="task-9"), "steps[1].thread: names no thread of this transcript: 'task-9'"),
    (lambda d: d["threads"].pop(0), "threads: no thread with id 'main' (the main loop)"),
    (lambda d: d["threads"][1].update(parent="nobody"), "threads[1].parent: names no thread of this transcript: 'nobody'"),
    (lambda d: d["threads"][1].update(parent=None), "threads[1].parent: a sub-agent's thread names its parent thread"),
    (lambda d: d["threads"].append(dict(d["threads"][1])), "threads[2].id: 'task-1' is used by an earlier thread"),
    (lambda d: d["threads"][1].pop("messages"), "threads[1].messages: missing, or not a list"),
    (lambda d: d["threads"][0].update(messages=[]),
     "threads[0].messages: differs from the top-level messages (both are the main thread's final history)"),
    (lambda d: d["steps"][3]["detail"].update(kind="huge"),
     "steps[3].detail.kind: one of micro, auto, manual, imported, resume, found 'huge'"),
    (lambda d: d["steps"][3]["detail"].pop("replaced"),
     "steps[3].detail: a compact step needs what it replaced: `replaced` or `history_before`"),
    (lambda d: d["steps"][3]["detail"]["replaced"][0].update(index=40),
     "steps[3].detail.replaced: index 40 is outside the history"),
    (lambda d: d["steps"][5]["detail"]["history_before"].pop(),
     "steps[5].detail.history_before: holds 2 messages; the thread's step before it has 3"),
    (lambda d: d["steps"][4].update(n_messages=1),  # seen where the history before the summary is compared
     "steps[5].detail.history_before: holds 3 messages; the thread's step before it has 1"),
    (lambda d: d["steps"][1].update(n_messages=4), "steps[1].n_messages: 4 does not fit a history of 3 messages (after 0)"),
    (lambda d: d["steps"][0].update(n_messages=5),
     "steps[3].n_messages: a compact step that replaces messages in place keeps their number; the thread's step "
     "before it has 5"),
    (lambda d: d["steps"][6].update(n_messages=3),
     "steps[6].n_messages: 3 does not fit the thread's final history of 2 messages"),
])
def test_each_broken_part_of_a_thread_or_a_rewrite_is_named(data, change, said):
    assert error(data, change) == said


def test_a_version_1_file_loads_as_one_thread(data):
    v1 = {"format": "loopscope-transcript", "version": 1, "task": "t",
          "messages": [message("user", 1), message("assistant", 2)],
          "steps": [{"stage": "user_request", "turn_count": 1, "n_messages": 1},
                    {"stage": "append_assistant", "turn_count": 1, "n_messages": 2}]}
    trace = transcript.loads(json.dumps(v1))
    assert list(trace.threads) == [MAIN] and [s.thread for s in trace.steps] == [MAIN, MAIN]
    assert trace.messages_at(0) == v1["messages"][:1] and trace.messages_at(1) == v1["messages"]
    saved = json.loads(transcript.dumps(trace))
    assert saved["version"] == 2 and transcript.loads(json.dumps(saved)).messages == v1["messages"]


def test_check_reports_a_broken_history_that_was_sent_before_a_compaction():
    """The final history is fine, but the one sent before the compaction held an orphan tool_result."""
    orphan = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]}
    first = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}, orphan]
    call = {"request": {"model": "m"}, "response": {"content": [], "stop_reason": "end_turn"}}
    data = {"format": "loopscope-transcript", "version": 2, "messages": [{"role": "user", "content": "summary"},
                                                                         {"role": "assistant", "content": "done"}],
            "steps": [
                {"stage": "user_request", "turn_count": 1, "n_messages": 3},
                {"stage": "call_model", "turn_count": 1, "n_messages": 3, "detail": call},
                {"stage": "compact", "turn_count": 1, "n_messages": 1,
                 "detail": {"kind": "imported", "history_before": first}},
                {"stage": "call_model", "turn_count": 1, "n_messages": 1, "detail": call},
                {"stage": "append_assistant", "turn_count": 1, "n_messages": 2}]}
    trace = transcript.loads(json.dumps(data))
    found = [(where, str(v)) for where, v in transcript.violations(trace)]
    assert found == [("steps[1]", "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                      "toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                      "message.")]
    assert trace.history_before(2) == first and trace.messages_at(3) == [{"role": "user", "content": "summary"}]
