"""An import's warnings in every language: each is a message of the catalogs with its data as values, said in
English for the command line and the transcript, and in the page's language on Replay (tests/test_app_i18n.py
opens the page in Japanese and Chinese with the files below)."""

import ast
import json
import re
import tempfile
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from loop import start
from loop.files import transcript
from loop.text.catalogs import N_, N_n, catalog_path
from loop.importers import ImportFailed, Note, import_bytes, import_files
from loop.files.transcript import NUMBER_TOO_LONG
from loop.importers.isolated import import_files_isolated, import_isolated
from loop.importers.notes import Notes, on_line
from loop.text.catalogs import AND
from loop.files.runs import RunsStore, owner_key
from tests.test_import_claude_code import TASK, Log
from tests.test_import_formats import BASH, DATA, HISTORY

ROOT = Path(__file__).resolve().parent.parent
IMPORTERS = ROOT / "loop" / "importers"
# Not an importer's warnings: why Replay does not list a sessions folder (tests/test_app_replay_sessions.py)
NOT_WARNINGS = {"sessions.py"}
LANGS = ("ja", "zh")


def dumps(value) -> bytes:
    return json.dumps(value).encode()


# -- files that make an import say many kinds of warning (at most 10 each, as the page lists 10, but many.json) ----

def _log_lines() -> bytes:
    """A Claude Code log with lines that are no records: not JSON, no object, no type, no message, cut short."""
    log = Log()
    log.history(TASK)
    records: list = list(log.records)
    records[1:1] = [{"type": "summary", "summary": "counting"}, {"uuid": "x1"}, [1, 2],
                    {"type": "user", "uuid": "x2", "message": {"role": "user"}},
                    {"type": "assistant", "uuid": "x3", "message": "error"}]
    text = "".join(json.dumps(r) + "\n" for r in records)
    return (text + "{not json\n" * 6 + json.dumps(log.records[-1]) + "\n" + '{"type": "user", "mess').encode()


def _log_chain() -> bytes:
    """A Claude Code log whose chain forks, repeats, loops and breaks."""
    log = Log()
    ask = log.add("user", None, "write a poem")
    answer = log.add("assistant", ask, [{"type": "text", "text": "Roses are red"}])
    old = log.add("user", answer, "make it about cats")  # edited later: an abandoned branch
    log.add("assistant", old, [{"type": "text", "text": "Cats are grey"}])
    newer = log.add("user", answer, ["make it about dogs"])  # a bare string where a block belongs
    log.add("assistant", newer, [{"type": "tool_use", "id": "toolu_d", "name": "Bash", "input": {"command": "ls"}}],
            mid="msg_d")
    records = list(log.records)
    records.insert(3, records[2])  # written twice
    records.append(dict(records[-1], message=dict(records[-1]["message"], content="another")))  # its uuid again
    records.append(dict(records[0], uuid="lost", parentUuid="gone"))  # a parent not in the file
    records += [dict(records[0], uuid="a1", parentUuid="a2"), dict(records[0], uuid="a2", parentUuid="a1")]  # a loop
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _sub_agent_alone() -> bytes:
    side = Log(agent="b7", sidechain=True)
    side.add("user", None, "count the lines")
    side.add("assistant", None, [{"type": "text", "text": "3 lines."}])  # no parentUuid: nothing chains them
    return side.bytes()


def _odd_messages() -> bytes:
    return dumps([HISTORY[0], {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "s1", "name": "web_search"}, "a bare string", 42]},
        "not a message", {"role": "model", "content": "x"}, {"role": "user"}])


def _broken_pairs() -> bytes:
    ended = dict(HISTORY[1], type="message", stop_reason="end_turn", id="msg_e")  # a tool_use, yet end_turn
    return dumps([HISTORY[0], ended, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_zzz", "content": "lost"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]}, {"role": "assistant", "content": "b"}])


def _openai_calls() -> bytes:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"du a"}}
    return dumps({"model": "gpt-x", "messages": [
        {"role": "user", "content": "Size?"},
        {"role": "assistant", "content": None, "tool_calls": [
            call, "not a call", dict(call, id="call_3", type="custom", function={"name": "du", "arguments": "{}"})]},
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "ok", "function_call": {"name": "bash", "arguments": "{}"}}],
        "tools": "bash"})


def _harness_s_log() -> bytes:
    """A Claude Code log with what its harness writes itself (a caveat marked isMeta, a <synthetic> message) and an
    auto compaction whose summary the log does not hold."""
    from tests.test_import_claude_code_harness import CAVEAT, at, jsonl, record

    return jsonl([
        record("user", "m0", None, CAVEAT, ts=at(1), isMeta=True),
        record("user", "u1", "m0", "Run the tests", ts=at(2)),
        record("assistant", "a1", "u1", [{"type": "text", "text": "No response requested."}], ts=at(3),
               model="<synthetic>", stop="end_turn"),
        {"parentUuid": None, "logicalParentUuid": "a1", "isSidechain": False, "type": "system",
         "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info", "uuid": "c1",
         "sessionId": "5c1d7f4e", "timestamp": at(4), "compactMetadata": {"trigger": "auto", "preTokens": 160_000}},
        record("user", "u2", "c1", "Go on", ts=at(5)),
        record("assistant", "a2", "u2", [{"type": "text", "text": "Done."}], ts=at(6), stop="end_turn")])


def _openai_wrapped() -> bytes:
    """A recorded OpenAI request as a proxy keeps it: the body under `request`, with options no step shows."""
    return dumps({"provider": "openai", "baseURL": "https://api.example.test/v1", "request": {
        "model": "gpt-x", "temperature": 0.2, "stream": True,
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}], "messages": [
            {"role": "user", "content": "Size?"}, {"role": "assistant", "content": "4 KB"}]}})


def _openai_arguments() -> bytes:
    def call(n: int, arguments: str) -> dict:
        return {"id": f"call_{n}", "type": "function", "function": {"name": "bash", "arguments": arguments}}

    too_long, too_deep = "[" + "1" * 5000 + "]", "[" * 250 + "]" * 250
    return dumps([{"role": "user", "content": "Size?"},
                  {"role": "assistant", "tool_calls": [call(1, too_long), call(2, too_deep)]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "4 a"},
                  {"role": "tool", "tool_call_id": "call_2", "content": "8 b"}])


def _openai_roles() -> bytes:
    return dumps({"model": "gpt-x", "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "Size?"}, {"type": "input_audio", "input_audio": {}}]},
        {"role": "assistant", "content": "Which file?"},
        {"role": "system", "content": "Now in French."},
        {"role": "critic", "content": "hm"},
        {"role": "user", "content": None},
        {"role": "tool", "content": "4 a"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": BASH["input_schema"]}},
                  {"type": "web_search"}]})


def _course_rebuilt() -> bytes:
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    for cycle in raw["cycles"]:
        del cycle["request"]["messages"]
    raw.update(total_output_tokens=1, total_cycles=9)
    raw["cycles"].insert(2, "not a cycle")
    raw["cycles"][1]["tool_executions"][0]["name"] = "other"
    raw["cycles"][-1]["response"]["content"] = None
    return dumps(raw)


def _course_as_sent() -> bytes:
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    raw["cycles"][2]["tool_executions"].append(dict(raw["cycles"][2]["tool_executions"][0]))
    sub = raw["cycles"][3]["request"]
    sub["system"], sub["messages"] = "another system prompt", [{"role": "user", "content": "a task nobody asked for"}]
    return dumps(raw)


def _course_cut() -> bytes:
    raw = json.loads((DATA / "course_s01_trace.json").read_text())
    raw["cycles"][0]["response"]["content"] = raw["cycles"][0]["response"]["content"][1:]  # no thinking, as recorded
    raw["cycles"][1]["request"]["messages"].append({"role": "system", "content": "not in a history"})
    del raw["cycles"][3]["response"]
    return dumps(raw)


def _responses(tool_use: bool) -> bytes:
    content = HISTORY[1]["content"] if tool_use else HISTORY[3]["content"]
    return dumps([{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": content,
                   "stop_reason": 7, "usage": {"input_tokens": 1, "output_tokens": 2}}])


def _transcripts() -> tuple[bytes, bytes, bytes]:
    run = start(scenario="two-tools")
    run.run_to_end()
    whole = json.loads(transcript.dumps(run.trace))
    branch = dict(whole, steps=[dict(whole["steps"][0], stage="decide")])
    threads = json.loads((ROOT / "samples" / "subagent.json").read_text())  # the rules derive no sub-agent's steps
    threads["steps"] = threads["steps"][:8]
    return dumps(dict(whole, steps=whole["steps"][:6], branches=[branch])), dumps(branch), dumps(threads)


def _journal() -> bytes:
    """A run saved in the runs folder (`python -m loop runs export`), with a line that is no step."""
    run = start(scenario="list-files")
    run.run_to_end()
    with tempfile.TemporaryDirectory() as folder:
        store, owner = RunsStore(Path(folder)), owner_key("browser:warnings")
        store.save(owner, "r1", run.trace, writer="tab")
        lines = list(store.journal(owner, "r1"))
    return "\n".join([*lines[:2], json.dumps({"step": "not one"}), *lines[2:]]).encode() + b"\n"


def _many_orphans() -> bytes:
    """More broken rules than a warning each: 22 results nobody asked for."""
    messages = [HISTORY[0], HISTORY[3]]
    for n in range(22):
        orphan = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "?"}
        messages += [{"role": "user", "content": [orphan]}, {"role": "assistant", "content": [{"type": "text", "text": "?"}]}]
    return dumps(messages)


def _session() -> list[tuple[str, bytes]]:
    main = Log()
    main.history([{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}])
    side = Log(agent="zz", sidechain=True)
    side.n = 300
    side.history([{"role": "user", "content": "an orphan task"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_q", "name": "Bash",
                                                     "input": {"command": "ls"}}]}])
    side.add("user", side.records[-1]["uuid"], "not a result")
    return [("session.jsonl", main.bytes()), ("agent-zz.jsonl", side.bytes()), ("empty.jsonl", b"\n")]


def _claude_code_as_written() -> bytes:
    """A Claude Code log with what real sessions hold: two records glued on one line, a prompt queued and never
    sent, a request that names a message the log does not hold, a record kind no version here writes."""
    from tests.test_import_claude_code_real import record, text
    lines = [json.dumps(r) for r in (
        {"type": "queue-operation", "operation": "enqueue", "content": "and the docs", "timestamp": "2025-12-01T10:00:09.000Z"},
        record("user", "u1", None, "hi", 1),
        record("assistant", "a1", "u1", text("Hello."), 2, stop="end_turn", requestRef="r1"),
        {"type": "api-request", "id": "r1", "params": {"model": "m"}, "keep": 0, "tail": ["0" * 64]},
        {"type": "atis-latch", "atis": ""})]
    return ("\n".join([lines[0], lines[1] + lines[2], *lines[3:]]) + "\n").encode()


def _codex_odd() -> bytes:
    """A Codex rollout with what a reader passes over: an unknown record, events, a developer message, a role and
    an item of no counterpart, arguments that are no JSON, a stopped turn, a line that is no record."""
    wrap = lambda kind, payload: {"timestamp": "2026-01-05T09:00:00.000Z", "type": kind, "payload": payload}  # noqa: E731
    records = [wrap("session_meta", {"id": "s", "cwd": "/w", "cli_version": "0.77.0"}),
               wrap("response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}),
               wrap("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
               wrap("response_item", {"type": "message", "role": "tool", "content": []}),
               wrap("response_item", {"type": "ghost_snapshot"}),
               wrap("response_item", {"type": "function_call", "name": "shell", "arguments": "{not json", "call_id": "c1"}),
               wrap("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
               wrap("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
               wrap("event_msg", {"type": "brand_new_event"}),
               wrap("brand_new_record", {}),
               {"timestamp": "2026-01-05T09:00:00.000Z", "type": "event_msg", "payload": 7}]
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _compacted_odd() -> list[tuple[str, bytes]]:
    """A session compacted on the way, with its compaction's own call, and a block of a kind no API writes after
    the compaction."""
    from tests.test_import_claude_code_real import compacted_session
    files = compacted_session()
    name, data = files[0]
    lines = [json.loads(line) for line in data.splitlines()]
    lines[-1]["message"]["content"].append({"type": "brand_new_block"})
    return [(name, "".join(json.dumps(r) + "\n" for r in lines).encode()), *files[1:]]


def _tool_calls_as_text() -> bytes:
    return dumps([{"role": "user", "content": "What is in /tmp?"},
                  {"role": "assistant", "content": '<tool_call>{"name": "ls"}</tool_call>'}])


def _refused_uploads() -> list[list[tuple[str, bytes]]]:
    """Other agents' files, refused with their names."""
    from tests.test_import_claude_code_real import DATA as REAL
    tars = [{"id": "e1", "type": "user_message", "timestamp": 1, "content": "hi"},
            {"id": "e2", "type": "assistant_message", "timestamp": 2, "content": "hello"}]
    return [[("gemini.json", (REAL / "gemini_cli_session.json").read_bytes())], [("tars.json", dumps(tars))]]


def broken_uploads() -> list[list[tuple[str, bytes]]]:
    """Uploads (each one file, or a session of several) that make the importers warn in most of the ways they can."""
    cut, branch, threads = _transcripts()
    files = {"lines.jsonl": _log_lines(), "chain.jsonl": _log_chain(), "agent-b7.jsonl": _sub_agent_alone(),
             "odd.json": _odd_messages(), "pairs.json": _broken_pairs(), "calls.json": _openai_calls(), "wrapped.json": _openai_wrapped(), "harness.jsonl": _harness_s_log(),
             "arguments.json": _openai_arguments(), "roles.json": _openai_roles(), "rebuilt.json": _course_rebuilt(),
             "sent.json": _course_as_sent(), "short.json": _course_cut(), "responses.json": _responses(True),
             "answer.json": _responses(False), "cut.json": cut, "branch.json": branch, "subagent.json": threads,
             "r1.jsonl": _journal(), "many.json": _many_orphans(), "real.jsonl": _claude_code_as_written(),
             "rollout.jsonl": _codex_odd(), "text.json": _tool_calls_as_text(),
             "recorded.json": dumps({"provider": "openai", "request": {"model": "m", "messages": [
                 {"role": "user", "content": "hi"}]}}),
             "traj.json": (DATA / "logs" / "mini_swe_agent.traj.json").read_bytes()}
    return [[(name, data)] for name, data in files.items()] + [_session(), _compacted_odd()]


def imported(upload: list[tuple[str, bytes]]):
    return import_bytes(upload[0][1], upload[0][0]) if len(upload) == 1 else import_files(upload)


def msgid(message: str | tuple[str, str]) -> str:
    """A message as the catalogs key it: itself, or the singular of one with a plural form (N_n)."""
    return message[0] if isinstance(message, tuple) else message


def messages_of(note: Note) -> set[str]:
    """The message of `note` and of every note among its values."""
    found = {msgid(note.message)}
    for value in note.values.values():
        if isinstance(value, list) and len(value) > 1:
            found.add(AND)  # the places of a counted warning, joined in the language
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Note):
                found |= messages_of(item)
    return found


# -- every warning is a message of the catalogs -------------------------------------------------------------------

def _marked(node: ast.AST, constants: dict, path: Path) -> list[str]:
    """The messages `node` (a message argument) can be: N_("…") (N_n("…", "…"): its singular), a constant set to
    one, or either of two."""
    if isinstance(node, ast.IfExp):
        return _marked(node.body, constants, path) + _marked(node.orelse, constants, path)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (node.func.id, len(node.args)) in \
            (("N_", 1), ("N_n", 2)) and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
        return [node.args[0].value]
    if isinstance(node, ast.Name) and node.id in constants:
        return [constants[node.id]]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in constants:
        return [constants[node.attr]]  # transcript.AT: a constant of a module scanned with this one
    raise AssertionError(f"{path.name}:{node.lineno}: a warning's message must be marked with N_(\"…\") where it is "
                         f"written (or be a constant that is), not {ast.unparse(node)!r}")


# ImportFailed passing on a reason made elsewhere: a Note, an UnknownThread's note, NumberTooLong's one message
# (marked in transcript.py), too_big's note, another agent's format named (others.py), the child's note (isolated.py).
PASSED_ON = {"failed.py": ("message",), "reading.py": ("str(exc)",),
             "files.py": ("too_big(total, max_bytes)", "too_big(len(data), max_bytes)"),
             "formats.py": ("exc.note", "stranger"),
             "isolated.py": ("Note.from_json(error) if isinstance(error, dict) else str(error)",),
             "follow.py": ("exc.note",)}


def _constants(trees) -> dict[str, str]:
    """{NAME: message} of each module-level NAME = N_("…") (or N_n("…", "…"))."""
    return {target.id: node.value.args[0].value for tree in trees for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) in ("N_", "N_n") for target in node.targets}


def warning_messages() -> set[str]:
    """Every message the importers give `notes.warn`, `notes.count`, `Note` or `ImportFailed`, read from their code."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(IMPORTERS.glob("*.py"))
             if path.name not in NOT_WARNINGS}
    constants = _constants(trees.values())
    found = set(constants.values())
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            func = node.func
            says = (isinstance(func, ast.Name) and func.id in ("Note", "ImportFailed")) or (
                isinstance(func, ast.Attribute) and func.attr in ("warn", "count")
                and "notes" in ast.unparse(func.value))
            if not says:
                continue
            message = node.args[0]
            if path.name == "notes.py" and isinstance(message, (ast.Name, ast.Attribute, ast.Subscript)) \
                    and ast.unparse(message) in ("message", "self.message", 'value["message"]'):
                continue  # Notes and Note passing on a message made elsewhere
            if ast.unparse(message) in PASSED_ON.get(path.name, ()):
                continue
            found.update(_marked(message, constants, path))
    return found | {NUMBER_TOO_LONG, AND}  # ImportFailed(str(exc)) of a NumberTooLong; a list's values, joined


def untranslated(said: set[str], lang: str) -> list[str]:
    """The messages of `said` that the catalog of `lang` lacks, or holds empty or fuzzy."""
    with catalog_path(lang).open("rb") as f:
        entries = {msgid(m.id): m for m in read_po(f, locale=lang) if m.id}
    return sorted(m for m in said if m not in entries or entries[m].fuzzy
                  or not all(entries[m].string if isinstance(entries[m].string, tuple) else [entries[m].string]))


def test_every_warning_the_importers_say_is_a_message_translated_in_every_catalog():
    said = warning_messages()
    assert len(said) > 70  # the scan found the importers' warnings
    for lang in LANGS:
        left = untranslated(said, lang)
        assert not left, f"{lang}: run `make messages`, then translate:\n" + "\n".join(left)


def test_the_scan_finds_a_warning_that_is_not_marked(tmp_path, monkeypatch):
    (tmp_path / "new.py").write_text('def read(notes, n):\n    notes.warn(f"line {n}: something new")\n')
    monkeypatch.setattr(f"{__name__}.IMPORTERS", tmp_path)
    with pytest.raises(AssertionError, match="new.py:2: a warning's message must be marked"):
        warning_messages()


def test_the_broken_files_make_most_kinds_of_warning_or_failure_and_only_those_of_the_code():
    said = warning_messages()
    made: set[str] = set()
    for upload in broken_uploads():
        notes = imported(upload).notes
        most = 21 if upload[0][0] == "many.json" else 10
        assert 0 < len(notes) <= most, (upload[0][0], [n.render() for n in notes])
        for note in notes:
            made |= messages_of(note)
    from tests.test_app_i18n import unreadable_uploads

    for upload in unreadable_uploads() + _refused_uploads():  # and the reasons a file cannot be read
        with pytest.raises(ImportFailed) as failed:
            import_files(upload)
        made |= messages_of(failed.value.note)
    assert made <= said | loader_messages(), made - said - loader_messages()  # the loader's: why a transcript fails
    made &= said
    # 0.8, not the 0.9 of warnings alone: the limits (size, count, memory, time) are not reached by small files
    assert len(made) >= 0.8 * len(said), sorted(said - made)


# -- said in a language, data kept as it is ------------------------------------------------------------------------

def test_a_warning_is_said_in_the_language_asked_and_its_data_as_it_is():
    note = Note(N_("line {line}: cut short, not valid JSON ({error}, column {column}); the lines before it are "
                   "imported"), line=12, error="Expecting value", column=3)
    assert note.render() == ("line 12: cut short, not valid JSON (Expecting value, column 3); the lines before it "
                             "are imported")
    ja = note.render("ja")
    assert ja.startswith("12 行目: ") and "Expecting value" in ja and "imported" not in ja
    assert "`Expecting value`" in note.render("zh", data=lambda v: str(v) if isinstance(v, int) else f"`{v}`")


def test_a_counted_warning_names_its_first_places_in_the_language_asked():
    notes = Notes()
    for n in range(1, 8):
        notes.count(N_("passed over lines that are not valid JSON"), on_line(n))
    notes.count(N_("passed over records that are not messages ({kind})"), on_line(9), kind="summary")
    assert notes.render() == [
        "passed over lines that are not valid JSON ×7: line 1, line 2, line 3, line 4, line 5, …",
        "passed over records that are not messages (summary) ×1: line 9"]
    assert notes.render("ja") == [
        "正しい JSON ではない行を読み飛ばしました（7 件）: 1 行目、2 行目、3 行目、4 行目、5 行目 など",
        "message ではない summary のレコードを読み飛ばしました（1 件）: 9 行目"]
    assert notes.render("zh")[0] == "跳过了不是有效 JSON 的行（7 处）：第 1 行、第 2 行、第 3 行、第 4 行、第 5 行 等"


def test_the_notes_cross_the_process_boundary_of_an_upload_whole():
    uploads = broken_uploads()
    for upload in (uploads[0], uploads[-1]):  # a file; a session of several files
        here = imported(upload)
        there = import_isolated(upload[0][1], upload[0][0]) if len(upload) == 1 else import_files_isolated(upload)
        assert there.notes == here.notes and there.warnings == here.warnings
        assert [n.render("zh") for n in there.notes] == [n.render("zh") for n in here.notes]


def test_why_a_broken_transcript_cannot_be_loaded_crosses_the_process_boundary_of_an_upload_whole():
    from tests.test_app_i18n import broken_transcripts

    # An upload's own process (importers/isolated.py) answers a refusal as {"error": note.to_json()} in JSON, and the
    # server makes it a Note again with Note.from_json. Every one of the loader's reasons makes that round trip here;
    # a real upload's process (a second of Python a file) says one reason of each kind of value a reason holds:
    # none, text, a number, a list, a number said as a Note, a reason inside a branch's.
    through_a_process = {"no-messages.json", "stage.json", "fit.json", "fields.json", "turn-count.json", "branch.json"}
    for name, data in broken_transcripts():
        with pytest.raises(ImportFailed) as here:
            import_bytes(data, name)
        crossed = [Note.from_json(json.loads(json.dumps({"error": here.value.note.to_json()}))["error"])]
        if name in through_a_process:
            through_a_process.remove(name)
            with pytest.raises(ImportFailed) as there:
                import_isolated(data, name)
            crossed.append(there.value.note)
        for note in crossed:
            assert note == here.value.note, name
            assert note.render("ja") == here.value.note.render("ja") and str(ImportFailed(note)) == str(here.value)
    assert not through_a_process  # each was among the broken transcripts


def test_the_transcript_keeps_the_warnings_in_english():
    done = imported(broken_uploads()[0])
    assert done.trace.meta["imported"]["warnings"] == done.warnings
    assert done.warnings[0] == ("passed over lines that are not valid JSON ×6: line 15, line 16, line 17, line 18, "
                                "line 19, …")


# -- why a Loopscope transcript cannot be loaded: the same, from the loader (loop/files/transcript.py, and the journals) --

LOADER = [ROOT / "loop" / "files" / name for name in ("transcript.py", "journal.py", "runs.py")]
PATH = re.compile(r"^[\w\[\].]*$")  # a "where" written out: a JSON path such as steps[3].stage, data in every language


def loader_messages(paths: list[Path] = LOADER) -> set[str]:
    """Every reason the loader gives (`_need`, `TranscriptError`, `Note`), read from its code; each must be marked
    N_ where it is written, and a place it names (`_need`'s where) a JSON path or a Note."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in paths}
    constants = _constants(trees.values())
    found: set[str] = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = ast.unparse(node.func)
            if name == "_need" and len(node.args) >= 3:
                where = node.args[1]
                literal = [v.value for v in getattr(where, "values", [where]) if isinstance(v, ast.Constant)]
                assert all(PATH.match(str(part)) for part in literal), \
                    f"{path.name}:{node.lineno}: a place in words is a Note, not {ast.unparse(where)!r}"
                if ast.unparse(node.args[2]) != "what":  # one of a list of messages, each marked N_ in the list
                    found.update(_marked(node.args[2], constants, path))
            elif name in ("N_", "N_n"):
                found.update(_marked(node, constants, path))
            elif name in ("TranscriptError", "transcript.TranscriptError", "Note"):
                message = node.args[0]
                if ast.unparse(message) in ("message", "what", "exc.note.with_values(where=f'branches[{i}].{where}')"):
                    continue  # passing on a message marked where it was made
                found.update(_marked(message, constants, path))
    return found


def test_every_reason_the_loader_gives_is_a_message_translated_in_every_catalog():
    said = loader_messages()
    assert len(said) > 45  # the scan found the loader's reasons
    for lang in LANGS:
        left = untranslated(said, lang)
        assert not left, f"{lang}: run `make messages`, then translate:\n" + "\n".join(left)


@pytest.mark.parametrize("line, found", [
    ('_need(ok, "steps", f"missing {n}")', "a warning's message must be marked"),
    ('raise TranscriptError(f"steps[{i}]: unknown stage {stage!r}")', "a warning's message must be marked"),
    ('_need(ok, "top level", N_("not an object"))', "a place in words is a Note"),
])
def test_the_scan_finds_a_loader_reason_in_english_only(tmp_path, line, found):
    (tmp_path / "transcript.py").write_text(f"def check(ok, n, i, stage):\n    {line}\n")
    with pytest.raises(AssertionError, match=f"transcript.py:2: {found}"):
        loader_messages([tmp_path / "transcript.py"])


def test_a_loader_reason_is_english_on_the_command_line_and_in_the_language_asked_on_a_page():
    with pytest.raises(transcript.TranscriptError) as failed:
        transcript.loads(json.dumps({"format": "loopscope-transcript", "version": 1, "messages": [],
                                     "steps": [{"stage": "think", "turn_count": 0, "n_messages": 0}]}))
    assert str(failed.value) == "steps[0].stage: unknown stage 'think'"
    code = lambda v: str(v) if isinstance(v, int) else f"`{v}`"  # noqa: E731 (the page's way: data as code)
    assert failed.value.note.render("ja", code) == "`steps[0].stage`: 知らない段階です: `'think'`"
    assert failed.value.note.render("zh", code) == "`steps[0].stage`：未知的阶段：`'think'`"
    one = Note(N_n("holds {n} message; the thread's step before it has {before}",
                   "holds {n} messages; the thread's step before it has {before}"), n=1, before=2)
    assert one.render() == "holds 1 message; the thread's step before it has 2"
    assert one.with_values(n=3).render() == "holds 3 messages; the thread's step before it has 2"
    assert Note.from_json(json.loads(json.dumps(one.to_json()))) == one  # as an upload's child process sends it
