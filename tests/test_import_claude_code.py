"""Claude Code session logs: real ones written by others, and small ones written here for one case each."""

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.synthetic import claude_code_log
from loop.engine import rules
from loop.files import transcript
from loop.engine.fork import state_at
from loop.importers import ImportFailed, Thread, import_bytes
from tests.searches import examples
from tests.test_import_roundtrip import histories

FIXTURES = Path(__file__).resolve().parent / "data" / "claude-code"  # real logs (tests/data/README.md)
REAL_LOGS = sorted(FIXTURES.glob("*.jsonl"))


def lines_of(path: Path) -> list:
    return [json.loads(line) if line.strip().startswith(("{", "[")) else None for line in path.read_text().splitlines()]


class Log:
    """Writes records the way Claude Code does: one line a content block, chained by parentUuid."""

    def __init__(self, agent: str | None = None, sidechain: bool = False):
        self.records: list[dict] = []
        self.n = 0
        self.agent = agent
        self.sidechain = sidechain

    def add(self, kind: str, parent: str | None, content, *, mid: str | None = None, **extra) -> str:
        self.n += 1
        uid = f"{'s' if self.sidechain else 'u'}{self.n:04d}{self.agent or ''}"
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message = {"id": mid or f"msg_{uid}", "type": "message", "role": "assistant", "model": "claude-test",
                       "content": content, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
        record = {"parentUuid": parent, "isSidechain": self.sidechain, "type": kind, "message": message, "uuid": uid,
                  "sessionId": "sess", "timestamp": f"2025-06-01T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z", **extra}
        if self.agent:
            record["agentId"] = self.agent
        self.records.append(record)
        return uid

    def history(self, messages: list, parent: str | None = None) -> str | None:
        """`messages` as Claude Code logs them: each block of a response a line, each result a line hung off
        the line of its own tool_use."""
        uses: dict = {}
        for i, message in enumerate(messages):
            if message["role"] == "assistant":
                mid = f"msg_{self.agent or ''}{i}"
                for block in message["content"] if isinstance(message["content"], list) else [message["content"]]:
                    content = [block] if isinstance(block, dict) else block
                    parent = self.add("assistant", parent, content, mid=mid)
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        uses[block["id"]] = parent
            elif rules.tool_results(message):
                for block in message["content"]:
                    parent = self.add("user", uses.get(block["tool_use_id"], parent), [block],
                                      toolUseResult={"stdout": str(block["content"]), "interrupted": False})
            else:
                parent = self.add("user", parent, message["content"])
        return parent

    def bytes(self, order=None) -> bytes:
        records = self.records if order is None else order(list(self.records))
        return "".join(json.dumps(r) + "\n" for r in records).encode()


TASK = [
    {"role": "user", "content": "count the lines"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Two at once."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "wc -l a"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "wc -l b"}},
        {"type": "tool_use", "id": "toolu_3", "name": "Read", "input": {"file_path": "c"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "c: 1 line"},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 a"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "wc: b: No such file", "is_error": True}]},
    {"role": "assistant", "content": [{"type": "text", "text": "a has 3 lines, b is missing, c has 1."}]},
]


# -- the real logs ---------------------------------------------------------------------------------------------------

def test_the_real_logs_are_there():
    assert len(REAL_LOGS) >= 4, f"expected the real logs in {FIXTURES}"


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.name)
def test_every_real_log_imports_and_every_view_can_be_built(path):
    imported = import_bytes(path.read_bytes(), path.name)
    trace = imported.trace
    assert imported.format == "claude-code" and imported.thread == "main"
    assert trace.messages and trace.steps
    assert trace.steps[0].stage == "user_request"
    # Pairs, and the LoopState of every step, rebuild from the trace alone.
    pairs = rules.pairs(trace.messages)
    assert len([p for p in pairs if p.use_index is not None]) == sum(len(rules.tool_uses(m)) for m in trace.messages)
    for i in range(len(trace)):
        state = state_at(trace, i)
        assert state.messages == trace.messages_at(i)
        assert state.turn_count == trace.steps[i].turn_count
    last = state_at(trace, len(trace) - 1)
    assert last.messages == trace.messages
    # Saved and loaded again, it is the same trace.
    back = transcript.loads(transcript.dumps(trace), strict=False)
    assert back.messages == trace.messages and back.steps == trace.steps


def test_every_odd_record_of_edge_cases_is_named_by_its_line():
    imported = import_bytes((FIXTURES / "edge_cases.jsonl").read_bytes(), "edge_cases.jsonl")
    said = "\n".join(imported.warnings)
    assert "passed over user records whose message has no content ×1: line 10" in said  # "contenst"
    assert "passed over user records whose message is not an object ×1: line 11" in said  # "message": "error"
    assert "passed over lines that are JSON but not a record (an object) ×3: line 13, line 15, line 16" in said
    assert "passed over records without a type ×1: line 14" in said
    assert "passed over records that are not messages (summary) ×1: line 19" in said
    assert "repaired content items that were bare strings into text blocks ×1: line 18.content[0]" in said
    # Its MultiEdit call was never answered: kept, shown as an orphan, and the API's rule is named.
    orphan = next(p for p in rules.pairs(imported.trace.messages) if p.tool_use_id == "tool_edge_002")
    assert orphan.status == "orphan"
    assert any("(line 9): breaks an API rule, kept as recorded: `tool_use` ids were found without `tool_result` "
               "blocks immediately after: tool_edge_002" in w for w in imported.warnings)
    # The failing tool's result is shown as the failure it was.
    failed = next(s for s in imported.trace.steps if s.stage == "run_tool" and s.detail["name"] == "FailingTool")
    assert failed.detail["is_error"] is True and failed.detail["recorded"] is True
    # Every text of the file made it in, special characters and all.
    assert any("中文" in rules.blocks(m)[0].get("text", "") for m in imported.trace.messages)


def test_the_tools_own_account_is_shown_beside_the_result():
    path = FIXTURES / "representative_messages.jsonl"
    records = [r for r in lines_of(path) if r]
    tool_record = next(r for r in records if "toolUseResult" in r)
    tool_use_id = tool_record["message"]["content"][0]["tool_use_id"]
    trace = import_bytes(path.read_bytes()).trace
    step = next(s for s in trace.steps if s.stage == "run_tool" and s.detail["tool_use_id"] == tool_use_id)
    assert step.detail["tool_use_result"] == tool_record["toolUseResult"]


def test_the_chain_of_a_real_log_gives_its_order():
    path = FIXTURES / "todowrite_examples.jsonl"
    lines = path.read_text().splitlines()
    straight = import_bytes(path.read_bytes())
    backwards = import_bytes(("\n".join(reversed(lines)) + "\n").encode())
    assert backwards.trace.messages == straight.trace.messages
    assert [s.stage for s in backwards.trace.steps] == [s.stage for s in straight.trace.steps]
    assert "passed over records that are not messages (summary) ×1: line 12" in straight.warnings


# -- one case each -----------------------------------------------------------------------------------------------------

def test_one_response_written_line_by_line_becomes_one_message_and_its_results_one_write_back():
    log = Log()
    log.history(TASK)
    imported = import_bytes(log.bytes())
    assert imported.trace.messages == TASK
    assert imported.warnings == []
    stages = [s.stage for s in imported.trace.steps]
    assert stages == ["user_request", "call_model", "append_assistant", "decide", "run_tool", "run_tool", "run_tool",
                      "write_back", "call_model", "append_assistant", "decide"]
    assert [p.status for p in rules.pairs(imported.trace.messages)] == ["paired"] * 3
    first_call = imported.trace.steps[1].detail
    assert first_call["response"]["stop_reason"] == "tool_use" and first_call["stop_reason_inferred"] is True
    assert first_call["request"] == {"model": "claude-test"}


def test_the_chain_not_the_line_order_decides():
    log = Log()
    log.history(TASK)
    shuffled = log.bytes(order=lambda rs: random.Random(7).sample(rs, len(rs)))
    assert shuffled != log.bytes()
    assert import_bytes(shuffled).trace.messages == TASK


def test_records_that_are_not_messages_are_passed_over_and_counted_even_inside_the_chain():
    log = Log()
    first = log.add("user", None, "hi")
    log.records.append({"type": "system", "subtype": "turn_duration", "uuid": "sys1", "parentUuid": first,
                        "timestamp": "2025-06-01T10:00:01.500Z"})
    log.records.append({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})
    log.records.append({"type": "queue-operation", "operation": "enqueue"})  # read for the prompts typed mid-turn
    log.records.append({"type": "brand-new-kind", "uuid": "n1"})
    log.add("assistant", "sys1", [{"type": "text", "text": "hello"}])
    imported = import_bytes(log.bytes())
    assert [m["content"] for m in imported.trace.messages] == ["hi", [{"type": "text", "text": "hello"}]]
    assert imported.warnings == [
        "passed over records that are not messages (system) ×1: line 2",
        "passed over records that are not messages (file-history-snapshot) ×1: line 3",
        "passed over records that are not messages (brand-new-kind) ×1: line 5",
    ]


def test_an_edited_message_forks_the_chain_and_the_newer_branch_is_imported():
    log = Log()
    ask = log.add("user", None, "write a poem")
    answer = log.add("assistant", ask, [{"type": "text", "text": "Roses are red"}])
    log.add("user", answer, "make it about cats")  # later edited: this branch is abandoned
    old = log.records[-1]["uuid"]
    log.add("assistant", old, [{"type": "text", "text": "Cats are grey"}])
    newer = log.add("user", answer, "make it about dogs")
    log.add("assistant", newer, [{"type": "text", "text": "Dogs are loyal"}])
    imported = import_bytes(log.bytes())
    assert [rules.blocks(m)[0]["text"] for m in imported.trace.messages] == [
        "write a poem", "Roses are red", "make it about dogs", "Dogs are loyal"]
    assert imported.warnings == ["passed over 2 message records on abandoned branches of the chain (a message "
                                 "edited or a response retried); the branch written last is imported (passed "
                                 "over: line 3, line 4)"]


def test_a_sidechain_is_a_thread_of_its_own_to_choose():
    main = Log()
    ask = main.add("user", None, "look around, with a helper")
    task = main.add("assistant", ask, [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                                        "input": {"prompt": "find the tests"}}])
    side = Log(agent="a9", sidechain=True)
    side.history([{"role": "user", "content": "find the tests"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_s1", "name": "Glob",
                                                     "input": {"pattern": "tests/*"}}]},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s1", "content": "t.py"}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "tests/t.py"}]}])
    done = main.add("user", task, [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "tests/t.py"}],
                    toolUseResult={"status": "completed", "agentId": "a9"})
    main.add("assistant", done, [{"type": "text", "text": "The tests are in tests/t.py."}])
    records = main.records[:2] + side.records + main.records[2:]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()

    imported = import_bytes(data, "session.jsonl")
    assert imported.threads == [
        Thread("main", "main conversation: look around, with a helper", 4),
        Thread("agent-a9", "sub-agent a9: find the tests", 4),
    ]
    assert imported.thread == "main"
    assert len(imported.trace.messages) == 4 and "toolu_s1" not in json.dumps(imported.trace.messages)
    step = next(s for s in imported.trace.steps if s.stage == "run_tool" and s.thread == "main")
    assert step.detail["tool_use_result"] == {"status": "completed", "agentId": "a9"}
    # Both threads are in the one trace: the sub-agent's, linked to the Task call, inside its run_tool step.
    child = imported.trace.threads["agent-a9"]
    assert (child.parent, child.parent_tool_use_id) == ("main", "toolu_task")
    assert child.messages[0]["content"] == "find the tests" and step.detail["thread"] == "agent-a9"
    inside = imported.trace.steps_of("agent-a9")
    assert imported.trace.opened_at("agent-a9") < step.index and inside[-1] == step.index - 1

    sub = import_bytes(data, "session.jsonl", thread="agent-a9")
    assert sub.thread == "agent-a9"
    assert sub.trace.meta["imported"]["thread"] == "agent-a9"
    assert [p.status for p in rules.pairs(sub.trace.messages)] == ["paired"]
    assert sub.trace.messages[0]["content"] == "find the tests"

    with pytest.raises(ImportFailed) as failed:
        import_bytes(data, "session.jsonl", thread="agent-zz")
    assert str(failed.value) == "session.jsonl: no thread 'agent-zz' in this log; its threads: main, agent-a9"


def test_sidechains_without_an_agent_id_are_told_apart_by_their_chains():
    main = Log()
    main.history([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}])
    one, two = Log(sidechain=True), Log(sidechain=True)
    one.n, two.n = 100, 200
    one.history([{"role": "user", "content": "helper one"}, {"role": "assistant", "content": [{"type": "text", "text": "1"}]}])
    two.history([{"role": "user", "content": "helper two"}, {"role": "assistant", "content": [{"type": "text", "text": "2"}]}])
    data = "".join(json.dumps(r) + "\n" for r in main.records + one.records + two.records).encode()
    imported = import_bytes(data)
    assert [(t.id, t.label, t.n_records) for t in imported.threads] == [
        ("main", "main conversation: go", 2),
        ("sidechain-s0101", "sub-agent s0101: helper one", 2),
        ("sidechain-s0201", "sub-agent s0201: helper two", 2),
    ]
    assert import_bytes(data, thread="sidechain-s0201").trace.messages[0]["content"] == "helper two"


def test_a_sub_agent_file_alone_imports_its_thread_and_says_so():
    side = Log(agent="b7", sidechain=True)
    side.history(TASK)
    imported = import_bytes(side.bytes(), "agent-b7.jsonl")
    assert imported.thread == "agent-b7" and imported.trace.messages == TASK
    assert imported.warnings == [
        "the log holds no main conversation (isSidechain false); imported the sub-agent thread agent-b7"]


def test_a_log_cut_short_while_being_written_imports_what_came_before():
    log = Log()
    log.history(TASK)
    data = log.bytes()
    cut = data[: data.rindex(b"\n", 0, len(data) - 1) + 40]  # the last line loses all but its first 40 bytes
    imported = import_bytes(cut, "live.jsonl")
    last_line = cut.count(b"\n") + 1
    assert imported.warnings[0].startswith(f"line {last_line}: cut short, not valid JSON (")
    assert imported.warnings[0].endswith("the lines before it are imported")
    assert imported.trace.messages == TASK[:3]


def test_a_record_written_twice_is_kept_once():
    log = Log()
    log.history(TASK[:2])
    records = log.records[:2] + [log.records[1]] + log.records[2:]
    imported = import_bytes("".join(json.dumps(r) + "\n" for r in records).encode())
    assert imported.trace.messages[1] == TASK[1]
    assert "records written twice (same uuid, same content); kept once ×1: line 3 (as line 2)" in imported.warnings


def test_the_generated_benchmark_log_imports_whole():
    data = claude_code_log(600, seed=3)
    assert data.count(b"\n") == 600
    imported = import_bytes(data, "generated.jsonl")
    assert [t.id for t in imported.threads] == ["main", "agent-a1b2c3d4"]
    assert rules.check(imported.trace.messages, as_request=False) == []
    assert all(p.status == "paired" for p in rules.pairs(imported.trace.messages))
    noise = [w for w in imported.warnings if w.startswith("passed over records that are not messages")]
    queued = [w for w in imported.warnings if w.startswith("prompts queued while the model worked")]
    assert noise and len(noise) + len(queued) == len(imported.warnings)
    counted = sum(int(w.split(" ×")[1].split(":")[0]) for w in noise)
    records = [json.loads(line) for line in data.decode().splitlines()]
    # queue-operation records are read (a prompt typed mid-turn); the rest is passed over and counted
    assert counted == sum(r["type"] not in ("user", "assistant", "queue-operation") for r in records)


def test_results_and_an_interruption_in_one_record_stay_one_write_back():
    log = Log()
    ask = log.add("user", None, "two things")
    one = log.add("assistant", ask, [TASK[1]["content"][1]], mid="m1")
    two = log.add("assistant", one, [TASK[1]["content"][2]], mid="m1")
    first = log.add("user", one, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 a"}])
    log.add("user", first, [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "stopped", "is_error": True},
                            {"type": "text", "text": "[Request interrupted by user]"}])
    assert two
    messages = import_bytes(log.bytes()).trace.messages
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 a"},
                                      {"type": "tool_result", "tool_use_id": "toolu_2", "content": "stopped",
                                       "is_error": True},
                                      {"type": "text", "text": "[Request interrupted by user]"}]
    assert rules.check(messages, as_request=False) == []


def test_a_long_log_imports_whole():
    # How long it takes (about 0.15 s for 5,000 records) is bench/replay.py's to measure and print.
    imported = import_bytes(claude_code_log(5000))
    assert len(imported.trace.messages) > 2000


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.randoms(use_true_random=False))
def test_any_history_logged_the_claude_code_way_imports_back_to_itself(messages, rng):
    log = Log()
    log.history(messages)
    for _ in range(rng.randint(0, 4)):  # noise beside the chain
        log.records.insert(rng.randint(0, len(log.records)), {"type": "file-history-snapshot", "snapshot": {}})
    imported = import_bytes(log.bytes(order=lambda rs: rng.sample(rs, len(rs))))
    assert imported.trace.messages == json.loads(json.dumps(messages))
    assert not [w for w in imported.warnings if "API rule" in w]
