"""`python -m loop import FILE --out t.json`, then `check` and `replay` on what it wrote.

The first test runs the three as real commands; the others call `main`, what
`python -m loop` calls, in this process (tests/cli.py).
"""

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli import loop_cli, loop_main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "claude-code"


def real(*args) -> subprocess.CompletedProcess:
    """`python -m loop ARGS` as a real subprocess."""
    (done,) = loop_cli(list(args), env=None)
    return done


def loop(*args) -> subprocess.CompletedProcess:
    """The same command through `main` in this process."""
    (done,) = loop_main(list(args), env=None)
    return done


def test_import_a_real_log_then_check_and_replay_it(tmp_path):
    out = tmp_path / "edge.json"
    done = real("import", FIXTURES / "edge_cases.jsonl", "--out", out)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "format: claude-code"
    assert lines[1].startswith("thread: main (imported) · 12 records · main conversation: Here's a message")
    assert "warning: passed over lines that are JSON but not a record (an object) ×3: line 13, line 15, line 16" in lines
    assert lines[-2:] == ["12 messages, 23 steps", f"transcript: {out}"]
    saved = json.loads(out.read_text())
    assert saved["format"] == "loopscope-transcript" and saved["imported"]["format"] == "claude-code"

    check, replay = loop_cli(["check", out], ["replay", out])  # started together
    assert check.returncode == 1  # the log's own unanswered tool_use blocks, as the API would say it
    assert check.stdout.splitlines()[0].startswith(
        "messages.8: `tool_use` ids were found without `tool_result` blocks immediately after: tool_edge_002.")

    assert replay.returncode == 0, replay.stderr
    said = replay.stdout.splitlines()
    assert said[0] == f"note: this imported history breaks the API's tool-use rules in 2 place(s); " \
                      f"`python -m loop check {out}` lists them"
    assert said[2].startswith("[1] before turn 1 · 1 · user request into messages: messages ← user: Here's a message")
    assert any("run a tool_use: MultiEdit" in line and "(no tool_result was recorded" in line for line in said)
    assert len(said) == 2 + 23


def test_import_the_course_trace_then_check_and_replay_it(tmp_path):
    out = tmp_path / "s01.json"
    done = loop("import", ROOT / "tests" / "data" / "course_s01_trace.json", "--out", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "format: course-trace"
    check = loop("check", out)
    assert (check.returncode, check.stdout) == (0, "ok: 8 messages, 3 tool_use/tool_result pair(s) hold the API's rules; "
                                                   "so do the 4 request(s) sent\n")
    replay = loop("replay", out)
    assert replay.returncode == 0
    said = replay.stdout.splitlines()
    assert said[0] == ("model: MiniMax-M2.5 · task: Find all Python files in this directory, count their lines, and "
                       "create a summary report (replay: nothing is run)")
    assert said[-1] == "[19] turn 4 · stop_reason: go on or end?: the loop ends: the model finished its answer (end_turn)"


def test_a_native_transcript_with_broken_pairs_is_still_refused_by_replay(tmp_path):
    broken = {"format": "loopscope-transcript", "version": 1, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "?"}]}], "steps": []}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    replay = loop("replay", path)
    assert replay.returncode == 1
    assert replay.stderr.startswith("error: messages: the tool_use/tool_result ids do not pair")


def test_import_a_chosen_thread(tmp_path):
    from tests.synthetic import claude_code_log

    log = tmp_path / "long.jsonl"
    log.write_bytes(claude_code_log(400, seed=5))
    done = loop("import", log, "--thread", "agent-a1b2c3d4", "--out", tmp_path / "sub.json")
    assert done.returncode == 0, done.stderr
    assert "thread: agent-a1b2c3d4 (imported) · 18 records · sub-agent a1b2c3d4: Find where the loop is tested" \
           in done.stdout.splitlines()
    assert json.loads((tmp_path / "sub.json").read_text())["imported"]["thread"] == "agent-a1b2c3d4"


def test_what_cannot_be_imported_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"messages": "caf\xe9"}')
    done = loop("import", bad)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: bad.json: not UTF-8 text: line 1, byte 17 (0xe9) cannot be decoded\n"
    big = tmp_path / "big.jsonl"
    big.write_bytes(b" " * 2_000_000)
    done = loop("import", big, "--max-mb", "1")
    assert done.stderr.startswith("error: big.jsonl: the file is 2.0 MB, over the import limit of 1.0 MB")


def test_import_a_session_folder_with_its_sub_agents_then_check_it(tmp_path):
    from tests.test_import_threads import log_bytes, session_with_agent

    main, side = session_with_agent(via_file=True)
    (tmp_path / "sess" / "subagents").mkdir(parents=True)
    (tmp_path / "sess.jsonl").write_bytes(log_bytes(main))
    (tmp_path / "sess" / "subagents" / "agent-a9.jsonl").write_bytes(log_bytes(side))
    out = tmp_path / "t.json"
    done = loop("import", tmp_path / "sess.jsonl", "--out", out)
    assert done.returncode == 0, done.stderr
    assert "thread: agent-a9 · 4 records · sub-agent a9: find the tests · started by toolu_task" in done.stdout.splitlines()
    check = loop("check", out)
    assert check.returncode == 0 and check.stdout.splitlines()[1] == \
        "ok: thread agent-a9 (started by toolu_task): 4 messages, 1 pair(s)"
    both = loop("import", tmp_path / "sess.jsonl", tmp_path / "sess" / "subagents" / "agent-a9.jsonl")
    assert both.returncode == 0 and "started by toolu_task" in both.stdout
@pytest.mark.parametrize("field, digits", [("time", 400), ("input_tokens", 400), ("turn_count", 400), ("time", 5000)])
def test_a_hostile_number_is_one_error_line_for_check_and_import(tmp_path, field, digits):
    saved = json.loads((ROOT / "samples" / "two-tools.json").read_text())
    saved["steps"][1][field] = 123456789
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(saved).replace("123456789", "9" * digits))
    for done in loop_main(*[[command, hostile] for command in ("check", "import", "replay")]):
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.splitlines()
        if digits > 4300:  # more than Python reads: refused where the JSON is read
            assert line.endswith("it holds a whole number too long to read (over 4,300 digits)"), line
        else:
            assert f"steps[1].{field}: not " in line and line.endswith(f": a number of {digits} digits"), line


def test_an_openai_tool_argument_too_long_to_read_is_kept_as_raw_text(tmp_path):
    arguments = '{"n": ' + "7" * 5000 + "}"
    chat = {"messages": [{"role": "user", "content": "Count."},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]}
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(chat))
    done = loop("import", source, "--out", tmp_path / "t.json")
    assert done.returncode == 0, done.stderr
    assert "warning: messages[1].tool_calls[0]: the arguments of 'bash' cannot be read (it holds a whole number too " \
           "long to read (over 4,300 digits)); kept as the raw string" in done.stdout
    saved = json.loads((tmp_path / "t.json").read_text())
    (use,) = [b for b in saved["messages"][1]["content"] if b["type"] == "tool_use"]
    assert use["input"] == arguments and use["id"] == "call_1"


def test_replay_says_when_it_derived_the_steps_a_file_lacks(tmp_path):
    whole = json.loads((ROOT / "samples" / "two-tools.json").read_text())
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(dict(whole, steps=whole["steps"][:6])))
    done = loop("replay", cut)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("note: the last 2 messages (messages.2 to messages.3) had no step in the file: steps 7 to 10 "
                        "were derived from the history by the chapter's rules")
    assert len(lines) == 12 and lines[-1].startswith("[10] turn 2 · stop_reason: go on or end?: the loop ends")
