"""Files that cannot be read say why in one line; files that can be partly read say what was left out."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop.files import transcript
from loop.importers import DEFAULT_MAX_BYTES, ImportFailed, import_bytes, import_file
from tests.searches import examples


def failure(data: bytes, name: str = "f.json", **kwargs) -> str:
    with pytest.raises(ImportFailed) as failed:
        import_bytes(data, name, **kwargs)
    return str(failed.value)


def test_not_utf8_names_the_line_and_the_byte():
    assert failure(b'[{"role": "user", "content": "ok"},\n {"role": "user", "content": "caf\xe9"}]') == \
        "f.json: not UTF-8 text: line 2, byte 69 (0xe9) cannot be decoded"


def test_utf16_is_named_as_such():
    data = json.dumps([{"role": "user", "content": "hi"}]).encode("utf-16")
    assert failure(data) == "f.json: the file is UTF-16 text; Loopscope reads UTF-8 (save it again as UTF-8)"


def test_a_utf8_byte_order_mark_is_fine():
    imported = import_bytes("\ufeff".encode() + json.dumps([{"role": "user", "content": "hi"}]).encode())
    assert imported.trace.messages == [{"role": "user", "content": "hi"}]


def test_a_file_over_the_cap_is_refused_before_it_is_parsed():
    data = json.dumps([{"role": "user", "content": "x" * 500}]).encode()
    assert failure(data, max_bytes=100) == (
        f"f.json: the file is {len(data):,} bytes, over the import limit of 100 bytes; nothing was read "
        "(raise the limit with max_bytes, or --max-mb on the command line)")
    assert import_bytes(data, max_bytes=len(data)).trace.messages[0]["content"] == "x" * 500


def test_the_default_cap_is_100_mb(monkeypatch):
    import loop.importers.formats as formats

    def never(*args, **kwargs):
        raise AssertionError("a file over the cap was decoded or parsed")

    monkeypatch.setattr(formats, "decode", never)
    monkeypatch.setattr(formats, "parse", never)
    # Not JSON at all: had it been parsed, the error would be a JSON one.
    huge = b"\xff" * (DEFAULT_MAX_BYTES + 1)
    said = failure(huge, "huge.jsonl")
    assert said.startswith("huge.jsonl: the file is 100.0 MB, over the import limit of 100.0 MB; nothing was read")


def test_import_file_checks_the_size_before_reading(tmp_path):
    path = tmp_path / "sparse.jsonl"
    with path.open("wb") as f:
        f.truncate(DEFAULT_MAX_BYTES + 1)  # a sparse file: nothing is written, nothing should be read
    with pytest.raises(ImportFailed) as failed:
        import_file(path)
    assert str(failed.value).startswith("sparse.jsonl: the file is 100.0 MB, over the import limit of 100.0 MB")
    with pytest.raises(ImportFailed) as failed:
        import_file(tmp_path / "missing.json")
    assert str(failed.value) == "missing.json: cannot read it (No such file or directory)"


@pytest.mark.parametrize("data, said", [
    (b"", "f.json: the file is empty"),
    (b"  \n\n ", "f.json: the file is empty"),
    (b'{"messages": [', "f.json: line 1: not valid JSON (Expecting value, column 15)"),
    (b'{\n  "messages": [\n    {"role": "user",, "content": "x"}\n  ]\n}',
     "f.json: line 3: not valid JSON (Expecting property name enclosed in double quotes, column 21)"),
    (b"{oops\n{oops\n", "f.json: line 1: not valid JSON (Expecting property name enclosed in double quotes, column 2)"),
    (b'{"hello": "world"}', "f.json: valid JSON but not a transcript of any known format: it is an object with "
                            "keys hello. Loopscope reads a Loopscope transcript, a Claude Code session log "
                            "(.jsonl), an OpenAI Codex CLI rollout (.jsonl), an Anthropic messages list, request body or list of responses, OpenAI chat "
                            "messages or a request body, or a learn-claude-code trace"),
    (b"42", "f.json: valid JSON but not a transcript of any known format: it is a single int. Loopscope reads"),
    (b"[]", "f.json: valid JSON but not a transcript of any known format: it is an empty list."),
    (b'{"foo": 1}\n{"foo": 2}\n', "f.json: JSON Lines, but not a log of any known format: the first line holds an "
                                  "object with keys foo."),
    (b'{"type": "summary", "summary": "s", "leafUuid": "x"}\n{"type": "summary", "summary": "t"}\n',
     "f.json: read as claude-code, but no message could be read: passed over records that are not messages "
     "(summary) ×2: line 1, line 2"),
    (b"[" * 100_000 + b"]" * 100_000, "f.json: its JSON is nested too deeply to read"),
    (b'{"format": "loopscope-transcript", "version": 99, "messages": [], "steps": []}',
     "f.json: a Loopscope transcript that cannot be loaded: version: this Loopscope reads versions 1 to 3, the file is "
     "version 99"),
])
def test_what_cannot_be_read_is_said_in_one_line(data, said):
    message = failure(data)
    assert message.startswith(said)
    assert "\n" not in message


def test_a_bad_line_in_the_middle_of_a_log_is_passed_over_and_named():
    lines = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        "this line is not JSON",
        {"type": "assistant", "uuid": "b", "parentUuid": "a",
         "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}},
    ]
    data = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines).encode()
    imported = import_bytes(data)
    assert len(imported.trace.messages) == 2
    assert imported.warnings == ["passed over lines that are not valid JSON ×1: line 2"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["user", "assistant", "tool_use", "tool_result", "text", "message", "t1"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.sampled_from(["role", "content", "type", "id", "tool_use_id", "name", "input", "text", "messages",
                         "uuid", "parentUuid", "message", "isSidechain", "cycles", "request", "response",
                         "tool_calls", "function", "arguments", "tool_call_id", "format", "steps", "stop_reason"]),
        inner, max_size=6),
    max_leaves=30)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(json_values.map(lambda v: json.dumps(v).encode()),
                 st.lists(json_values, min_size=1, max_size=6).map(
                     lambda vs: "\n".join(json.dumps(v) for v in vs).encode()),
                 st.binary(max_size=200)))
def test_any_input_imports_or_fails_with_a_clear_message_never_a_crash(data):
    try:
        imported = import_bytes(data, "fuzz")
    except ImportFailed as exc:
        assert str(exc).startswith("fuzz: ") and "did not expect" not in str(exc)
        return
    trace = imported.trace
    assert trace.steps
    back = transcript.loads(transcript.dumps(trace), strict=False)
    assert back.messages == trace.messages and len(back.steps) == len(trace.steps)


def _near(kind: str):
    """Records shaped almost like the real thing, with anything in their fields."""
    ids = st.sampled_from(["a", "b", "c", "d", None])
    prompts = st.sampled_from(["go", "find it", ""])
    blocks = st.lists(st.one_of(json_values, st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking"])},
        optional={"id": ids, "tool_use_id": ids, "text": json_values, "content": json_values,
                  "input": st.one_of(json_values, st.fixed_dictionaries({"prompt": prompts})),
                  "name": st.sampled_from(["Task", "Agent", "task", "bash", "compact"]),
                  "is_error": json_values})), max_size=4)
    content = st.one_of(st.text(max_size=5), prompts, blocks, json_values)
    if kind == "claude-code":
        return st.fixed_dictionaries(
            {"type": st.sampled_from(["user", "assistant", "summary", "system"]), "uuid": ids, "parentUuid": ids},
            optional={"isSidechain": st.one_of(st.booleans(), json_values),
                      "agentId": st.one_of(st.sampled_from(["a1", "a2"]), json_values), "timestamp": json_values,
                      "toolUseResult": st.one_of(json_values, st.fixed_dictionaries({"agentId": st.sampled_from(
                          ["a1", "a2", None])})), "logicalParentUuid": ids,
                      "subtype": st.sampled_from(["compact_boundary", "turn_duration", None]),
                      "compactMetadata": st.one_of(json_values, st.fixed_dictionaries(
                          {}, optional={"trigger": json_values, "preTokens": json_values})),
                      "isCompactSummary": json_values,
                      "message": st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"])},
                                                       optional={"content": content, "id": ids,
                                                                 "stop_reason": json_values, "usage": json_values})})
    return st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system"])}, optional={
        "content": content, "tool_calls": st.lists(st.fixed_dictionaries({"id": ids}, optional={
            "function": st.fixed_dictionaries({}, optional={"name": json_values, "arguments": json_values})}),
            max_size=3), "tool_call_id": ids, "stop_reason": json_values, "usage": json_values, "type": json_values})


def _near_course_trace():
    opt = st.fixed_dictionaries
    return opt({"cycles": st.lists(st.one_of(json_values, opt({}, optional={
        "elapsed_ms": json_values,
        "request": opt({}, optional={"messages": st.one_of(st.lists(_near("messages"), max_size=4), json_values),
                                     "model": json_values, "system": json_values}),
        "response": opt({}, optional={"content": json_values, "stop_reason": json_values, "usage": json_values}),
        "tool_executions": st.one_of(json_values, st.lists(opt({}, optional={"name": json_values,
                                                                           "output": json_values}), max_size=3)),
    })), max_size=4)}, optional={"prompt": json_values, "total_cycles": json_values, "total_input_tokens": json_values})


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.lists(_near("claude-code"), min_size=1, max_size=8).map(lambda rs: "\n".join(json.dumps(r) for r in rs).encode()),
    st.lists(_near("messages"), min_size=1, max_size=8).map(lambda ms: json.dumps(ms).encode()),
    st.fixed_dictionaries({"messages": st.lists(_near("messages"), max_size=6)}, optional={
        "tools": json_values, "model": json_values, "system": json_values}).map(lambda b: json.dumps(b).encode()),
    _near_course_trace().map(lambda t: json.dumps(t).encode()),
))
def test_almost_valid_logs_and_histories_import_or_fail_clearly(data):
    try:
        imported = import_bytes(data, "fuzz")
    except ImportFailed as exc:
        assert "did not expect" not in str(exc), str(exc)
        return
    assert reads_back(imported.trace).messages == imported.trace.messages


def reads_back(trace):
    """The trace saved and loaded again: every thread's history at every step as it was (and checked)."""
    back = transcript.loads(transcript.dumps(trace), strict=False)
    for i in range(len(trace)):
        assert back.messages_at(i) == trace.messages_at(i)
    transcript.violations(back)
    return back


def _zipped(files: list) -> list:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files:
            z.writestr(name, data)
    return [("log.zip", out.getvalue())]


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_near("claude-code"), min_size=1, max_size=6).map(
    lambda rs: "\n".join(json.dumps(r) for r in rs).encode()), min_size=1, max_size=4).flatmap(
    lambda logs: st.sampled_from([[(f"agent-{i}.jsonl", d) for i, d in enumerate(logs)],
                                  _zipped([(f"s/subagents/agent-{i}.jsonl", d) for i, d in enumerate(logs)])])))
def test_a_session_given_as_several_files_or_a_zip_imports_or_fails_clearly(files):
    from loop.importers import import_files

    try:
        imported = import_files(files)
    except ImportFailed as exc:
        assert "did not expect" not in str(exc), str(exc)
        return
    reads_back(imported.trace)


def test_a_recorded_response_past_the_end_of_the_history_is_no_crash():
    # found by the fuzz test: the second cycle's response belongs to a message the history does not have
    data = (b'{"cycles": [{"elapsed_ms": null, "tool_executions": [], "response": {"content": []}},'
            b' {"request": {"messages": []}, "response": {"content": ""}}]}')
    try:
        imported = import_bytes(data, "cycles.json")
    except ImportFailed as exc:
        assert "did not expect" not in str(exc), str(exc)
    else:
        assert imported.format


def _sessions() -> list[bytes]:
    """Small sessions with compactions and sub-agents (sidechains in the file), to change a field of."""
    from tests.synthetic import claude_code_session

    out = []
    for seed in range(3):
        main, files = claude_code_session(records=160, compactions=2, agents=2, seed=seed)
        out.append(main)
    return out


SESSIONS = _sessions()


@settings(max_examples=examples(75), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_session_with_compactions_and_sub_agents_with_any_field_changed_imports_or_fails_clearly(data):
    from tests.fuzzing import mutated

    changed = data.draw(mutated(SESSIONS))
    try:
        imported = import_bytes(changed, "fuzz")
    except ImportFailed as exc:
        assert "did not expect" not in str(exc), str(exc)
        return
    reads_back(imported.trace)
