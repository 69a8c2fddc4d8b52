"""Hostile files: every reader reads them or refuses them with its own error, and what it reads renders.

The strategies and checks are tests/fuzzing.py's (bench/fuzz.py runs 10,000 of
them); here a few hundred run under pytest, then the specific crashes they found
stay pinned by name. A "crash" is any exception other than ImportFailed or
TranscriptError, an ImportFailed that only wraps one (import_bytes' "did not
expect" catch-all), or a failure to render what was read: the history, the
pending results and the pairs at each step, the Markdown export, the
narration, the tables of loop/views/parts.py and saving the transcript again,
beneath a page's depth of stack.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop.files import transcript
from loop.views import parts as views
from loop.importers import ImportFailed, import_bytes
from tests.fuzzing import (LEGACY_BROWSER, LEGACY_RUN, NAME, READ, REFUSED, check_file, check_import, check_journal,
                           check_session, corrupted_journal, deep, huge, import_journal, mutated, random_bytes, render,
                           seeds, session_files, transcript_seeds, truncated)
from tests.searches import examples

DATA = Path(__file__).parent / "data"

FUZZ = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))

# The formats the seeds are in (the first test checks each has a seed). The searches below take each format on
# every run, a few cases each: drawn from all the seeds at once, a format could go a run unseen.
FORMATS = ("loopscope", "loopscope-journal", "claude-code", "course-trace", "anthropic-messages", "anthropic-request",
           "anthropic-responses", "openai-chat", "codex-rollout")


@pytest.fixture(scope="module")
def folder():
    path = Path(tempfile.mkdtemp(prefix="loopscope-fuzz-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_seeds_cover_every_format_and_each_imports_as_itself():
    kinds, threaded = {}, []
    for kind, data in seeds():
        kinds[kind] = kinds.get(kind, 0) + 1
        imported = import_bytes(data, "seed")
        assert imported.format == kind
        assert render(imported.trace) == ()
        threaded.append(imported.trace)
    assert set(kinds) == set(FORMATS)
    assert kinds["claude-code"] >= 4 and kinds["loopscope"] >= 5
    assert sum(t.has_threads for t in threaded) >= 4 and sum(t.has_compaction for t in threaded) >= 4


# -- the strategies, a few hundred cases -----------------------------------------
# Enough of each kind to catch a reader that breaks on it again; the 10,000 cases that look for new ones are
# bench/fuzz.py's, and what they found is pinned by name below.

def assert_read_or_refused(outcomes) -> None:
    """What a user relies on, whatever file they give: each reader reads it, and then every view of it draws and
    saving it keeps its histories; or it refuses it with its own message, naming the file where it has one."""
    for outcome in outcomes:
        assert outcome.result in (READ, REFUSED), outcome.said
        if outcome.result == REFUSED:
            assert outcome.said.strip(), f"{outcome.reader} refused the file without a word"
            if outcome.reader == "import_bytes":
                assert outcome.said.startswith(f"{NAME}:"), outcome.said
        else:
            assert outcome.differs == (), f"{outcome.reader}: steps {outcome.differs} read back differently"


@settings(max_examples=examples(100), **FUZZ)
@given(random_bytes)
def test_random_bytes(data):
    assert_read_or_refused(check_file(data))




def of_format(kind: str) -> list[bytes]:
    return [data for seed_kind, data in seeds() if seed_kind == kind]


@pytest.mark.parametrize("kind", FORMATS)
@settings(max_examples=examples(10), **FUZZ)
@given(data=st.data())
def test_real_files_cut_anywhere(kind, data):
    assert_read_or_refused(check_file(data.draw(truncated(of_format(kind)))))


@pytest.mark.parametrize("kind", FORMATS)
@settings(max_examples=examples(8), **FUZZ)
@given(data=st.data())
def test_any_field_of_a_real_file_given_a_value_of_any_type(kind, data):
    assert_read_or_refused([check_import(data.draw(mutated(of_format(kind))))])


@settings(max_examples=examples(40), **FUZZ)
@given(mutated(transcript_seeds()))
def test_any_field_of_a_transcript_given_a_value_of_any_type(data):
    assert_read_or_refused(check_file(data))


@settings(max_examples=examples(30), **FUZZ)
@given(deep())
def test_deep_nesting(data):
    assert_read_or_refused(check_file(data))


@settings(max_examples=examples(8), **FUZZ)
@given(huge())
def test_huge_strings(data):
    assert_read_or_refused(check_file(data))


@settings(max_examples=examples(40), **FUZZ)
@given(corrupted_journal())
def test_a_corrupted_journal_of_a_saved_run(folder, data):
    run = check_journal(data, folder)
    assert_read_or_refused([run, check_import(data)])
    if run.result == READ:  # the runs list says as many steps as the run opens with, and its settings come back
        assert run.listed == run.loaded and isinstance(run.settings, dict), run


@settings(max_examples=examples(25), **FUZZ)
@given(session_files())
def test_a_sessions_files_changed_cut_dropped_or_zipped(files):
    assert_read_or_refused([check_session(files)])


# -- what the fuzzing found, pinned ---------------------------------------------------

def _messages_with_input(tool_input: str) -> bytes:
    return ('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "tool_use", '
            f'"id": "t1", "name": "bash", "input": {tool_input}}}]}}, {{"role": "user", "content": '
            '[{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]').encode()


@pytest.mark.parametrize("depth", [900, 250])
def test_nesting_that_parses_but_would_not_render_on_a_page_is_refused(depth):
    # Python's json reads ~1,000 levels less the stack in use; such a value then broke
    # json.dumps and the Markdown export on a page's deeper stack (RecursionError).
    data = _messages_with_input("[" * depth + "0" + "]" * depth)
    with pytest.raises(ImportFailed) as failed:
        import_bytes(data, "deep.json")
    assert str(failed.value) == "deep.json: its JSON is nested too deeply to read (over 200 levels)"
    with pytest.raises(transcript.TranscriptError, match="nested too deeply to read"):
        transcript.loads(data)


def test_nesting_a_real_file_could_have_still_imports_and_renders():
    data = _messages_with_input("[" * 150 + "0" + "]" * 150)
    assert check_import(data).result == READ


def test_openai_arguments_nested_too_deeply_are_kept_as_the_raw_string():
    arguments = "[" * 5000 + "]" * 5000  # a string inside the file: the file itself parses
    body = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": arguments}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    imported = import_bytes(json.dumps(body).encode(), "openai.json")
    assert imported.trace.messages[1]["content"][0]["input"] == arguments
    assert "messages[1].tool_calls[0]: the arguments of 'bash' nest too deeply to read; kept as the raw string" in \
        imported.warnings
    assert render(imported.trace) == ()


def _journal() -> bytes:
    return next(d for kind, d in seeds() if kind == "loopscope-journal")


def test_a_journal_cut_in_the_middle_of_a_character_keeps_the_steps_before_it_and_resume_loses_none(tmp_path):
    # A crash while appending can cut a line inside a multi-byte character; reading the
    # journal as text then raised UnicodeDecodeError instead of keeping what came before.
    # And the cut line was counted as a step, so the first step after a Resume was skipped.
    head, *steps, _cursor = _journal().rstrip(b"\n").split(b"\n")
    cut = b"\n".join([head, *steps[:-1], steps[-1][:40] + "é".encode()[:1]])
    store, owner = import_journal(cut, tmp_path)
    [listed] = store.list(owner)  # still listed, so it can be found and resumed
    assert listed.steps == len(steps) - 1
    trace, settings = store.load(owner, LEGACY_RUN, writer="tab")
    assert len(trace.steps) == len(steps) - 1 and settings["tool_timeout"] == 30
    full = loads_journal(_journal())
    trace.steps.append(full.steps[len(steps) - 1])  # the step the crash cut, taken again after Resume
    trace.messages[:] = full.messages[: trace.steps[-1].n_messages]
    store.save(owner, LEGACY_RUN, trace, writer="tab")
    again, _ = store.load(owner, LEGACY_RUN)
    assert [s.stage for s in again.steps] == [s.stage for s in full.steps]
    assert again.messages == full.messages


def loads_journal(data: bytes):
    from loop.files import journal

    return journal.to_trace(*journal.read(data))[0]


@pytest.mark.parametrize("line, said", [
    (b"null", "run.jsonl, line 1: not the facts of a saved run"),
    (b'{"step": 3, "messages": []}', "run.jsonl, line 3: not a step of the run"),
    (b'{"step": {"stage": "user_request"}, "messages": "abc"}', "run.jsonl, line 3: not a step of the run"),
])
def test_a_journal_line_of_the_wrong_shape_is_a_transcript_error_and_the_journal_is_kept(tmp_path, line, said):
    from loop.files import journal

    lines = _journal().split(b"\n")
    lines[0 if said.endswith("saved run") else 2] = line
    with pytest.raises(transcript.TranscriptError) as failed:
        journal.read(b"\n".join(lines), "run.jsonl")
    assert str(failed.value) == said
    store, owner = import_journal(b"\n".join(lines), tmp_path)
    assert store.list(owner) == []  # not imported; the file is kept, moved with its folder
    [kept] = (tmp_path / "journals-imported").rglob("run.jsonl")
    assert kept.read_bytes() == b"\n".join(lines)


def test_a_journal_whose_step_ended_with_an_object_is_imported_and_the_store_opens(tmp_path):
    # Found by bench/fuzz.py: `ended` went into a text column as it was, the import failed whole,
    # and with it the store: no browser could save a run.
    head, *steps, cursor = _journal().rstrip(b"\n").split(b"\n")
    last = json.loads(steps[-1])
    last["step"]["ended"] = {"why": ["not", "text"]}
    store, owner = import_journal(b"\n".join([head, *steps[:-1], json.dumps(last).encode(), cursor]), tmp_path)
    [listed] = store.list(owner)
    assert listed.steps == len(steps) and listed.ended == '{"why": ["not", "text"]}'
    assert render(store.load(owner, LEGACY_RUN)[0]) == ()


def test_a_journal_whose_facts_are_not_an_object_is_left_out_of_the_list(tmp_path):
    folder = tmp_path / LEGACY_BROWSER
    folder.mkdir()
    (folder / "bad.jsonl").write_bytes(b'["not", "facts"]\n')
    (folder / "worse.jsonl").write_bytes(b'{"meta": 5}\n\xff\xfe\n')
    store, owner = import_journal(_journal(), tmp_path)
    assert sorted(r.id for r in store.list(owner)) == ["run", "worse"]


@pytest.mark.parametrize("tool_use_id", [{"a": 1}, [1], 5, None])
def test_an_id_of_the_wrong_type_does_not_break_the_pairs_table(tool_use_id):
    # A broken file may hold an object or a list where an id belongs; the Pairs table at a
    # run_tool step keyed the collected results by the raw id (TypeError: unhashable type).
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": tool_use_id, "name": "bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "ok"}]}]
    trace = import_bytes(json.dumps(messages).encode()).trace
    at = next(i for i, step in enumerate(trace.steps) if step.stage == "run_tool")
    table = views.pairs_table(trace, at)
    assert list(table["status"]) == ["waiting"] and table["result"][0].startswith("(collected, not yet written back) ok")
    assert render(trace) == ()


def test_a_course_trace_whose_task_tool_use_id_is_not_a_string_imports():
    # found by the fuzz test: a task tool_use with a list for its id, then the sub-agent's cycle
    cycles = [
        {"request": {"system": "parent", "messages": [{"role": "user", "content": "go"}]},
         "response": {"stop_reason": "tool_use", "content": [
             {"type": "tool_use", "id": [], "name": "task", "input": {"prompt": "look"}}]}, "tool_executions": []},
        {"request": {"system": "child", "messages": [{"role": "user", "content": "look"}]},
         "response": {"stop_reason": "end_turn", "content": [{"type": "text", "text": "found"}]}},
        {"request": {"system": "child", "messages": [{"role": "user", "content": "look"}]},
         "response": {"stop_reason": "end_turn", "content": [{"type": "text", "text": "again"}]}},
    ]
    imported = import_bytes(json.dumps({"prompt": "go", "cycles": cycles}).encode(), "odd.json")
    assert check_import(json.dumps({"prompt": "go", "cycles": cycles}).encode()).result == READ
    assert len(imported.trace.threads) >= 2


@pytest.mark.parametrize("field, value", [("prompt", True), ("prompt", {"a": 1}), ("model", 5), ("model", ["m"])])
def test_a_course_trace_whose_prompt_or_model_is_not_text_imports_without_them(field, value):
    # found by the fuzz test: {"prompt": true} became the task, and the Markdown export's title broke on it
    cycles = [{"request": {"system": "s", "messages": [{"role": "user", "content": "go"}]},
               "response": {"stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]}}]
    data = json.dumps({field: value, "cycles": cycles}).encode()
    assert check_import(data).result == READ
    meta = import_bytes(data, "odd.json").trace.meta
    assert meta["task"] == "" and not isinstance(meta.get("model"), (int, list))



@pytest.mark.parametrize("value", [True, 7, 2.5, ["go"], {"a": 1}])
def test_a_transcript_whose_task_is_not_text_opens_without_it(value):
    # found by the fuzz test: {"task": true} in a transcript broke the Markdown export's title, as a course trace's
    # prompt did (above)
    data = json.loads((Path(__file__).resolve().parent.parent / "samples" / "hello-py.json").read_text())
    data["task"] = value
    raw = json.dumps(data).encode()
    assert {o.result for o in check_file(raw)} == {READ}
    trace = transcript.loads(raw)
    assert "task" not in trace.meta and trace.messages_at(0)[0]["content"] == data["messages"][0]["content"]


@pytest.mark.parametrize("field", ["attempt", "wait_s", "jitter_s", "retry_after_s", "scale"])
@pytest.mark.parametrize("value", [None, ":", [None], {"a": 1}])
def test_a_retry_whose_numbers_are_not_numbers_renders(field, value):
    # found by the fuzz test: the complete loop's narration took a retry's attempt and waits for numbers
    data = json.loads((Path(__file__).resolve().parent.parent / "samples" / "overloaded.json").read_text())
    retry = next(s for s in data["steps"] if s["stage"] == "retry")
    retry["detail"][field] = value
    after = next(s for s in data["steps"] if s["stage"] == "call_model" and s["detail"].get("attempt", 1) > 1)
    after["detail"]["attempt" if field == "attempt" else "waited_s"] = value
    assert {o.result for o in check_file(json.dumps(data).encode())} == {READ}


def test_a_saved_run_whose_task_is_not_text_exports_with_the_default_title():
    # found by the fuzz test: a journal's {"task": true} reached the Markdown export's title
    from loop.files import export

    # The list-files sample is such a run, saved (`make samples` runs it to its end): read here, not run again.
    trace = transcript.load(Path(__file__).resolve().parent.parent / "samples" / "list-files.json")
    assert trace.meta["task"] and trace.steps[-1].stage == "decide"
    trace.meta["task"] = True
    assert export.to_markdown(trace).startswith("# Agent loop transcript\n")
    assert render(trace) == ()


def test_a_tool_result_block_whose_text_is_null_renders():
    # found by the fuzz test: a real log's tool_result content held {"type": "text", "text": null}; the pairs table
    # joined it as text and the page crashed
    from loop.views.parts import result_text

    assert result_text([{"type": "text", "text": None}, {"type": "text", "text": "4 a"}]) == \
        '{"type": "text", "text": null}\n4 a'


@pytest.mark.parametrize("field", ["shapeHash", "hash"])
def test_a_claude_code_request_record_whose_hash_is_not_a_string_is_passed_over(field):
    # A 2.1 log's api-request-shape / api-request-blob record with a list for its hash made the importer crash
    # (unhashable type: 'list') instead of reading the log.
    lines = [json.loads(line) for line in (DATA / "logs" / "claude_code_2_1.jsonl").read_text().splitlines()]
    kinds = {"shapeHash": "api-request-shape", "hash": "api-request-blob"}
    bent = [dict(r, **{field: [r[field]]}) if r.get("type") == kinds[field] and field in r else r for r in lines]
    assert bent != lines
    data = "\n".join(json.dumps(r) for r in bent).encode()
    assert check_import(data).result == READ
