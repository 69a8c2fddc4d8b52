"""`python -m loop` as a learner types it: run, check, replay, scenarios, a real model id.

Each command runs as a real subprocess in a few tests (independent ones started
together and awaited together: starting Python and the SDK takes a second), and
through `main`, what `python -m loop` calls, in this process in the others.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from loop.engine import rules
from loop.files import transcript
from loop.__main__ import main
from loop.engine.rules import check
from tests.cli import clean_env, loop_cli, loop_main, start_cli  # noqa: F401 (clean_env: test_engine_complete_cli's)

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ["list-files", "hello-py", "recover", "two-tools", "max-tokens", "subagent", "compact"]
COMPLETE_SCENARIOS = ["overloaded", "long-answer", "big-context", "parallel"]  # the complete loop's (test_engine_complete)
ENDINGS = {"list-files": "end_turn", "hello-py": "end_turn", "recover": "end_turn", "two-tools": "end_turn",
           "max-tokens": "max_tokens", "subagent": "end_turn", "compact": "end_turn"}


def stage_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[")]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Every scenario run from the CLI into its own transcript: {name: (result, path)}. The first as a real command
    (a second and more of Python and the SDK starting), the others through `main` in this process."""
    base = tmp_path_factory.mktemp("cli")
    commands = [["run", "--scenario", name, "--out", str(base / f"{name}.json")] for name in SCENARIOS]
    real = start_cli(*commands[:1])  # while it runs, the others in process
    inside = loop_main(*commands[1:])
    results = real() + inside
    return {name: (result, base / f"{name}.json") for name, result in zip(SCENARIOS, results)}


def workspace_of(result: subprocess.CompletedProcess) -> Path:
    """The workspace a `run` printed on its first line."""
    return Path(result.stdout.splitlines()[0].split(" · workspace: ", 1)[1].removesuffix(" (kept after the run)"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_run_each_scenario_prints_each_stage_and_saves_it(ran, name):
    result, path = ran[name]
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model: scripted (offline, no key) · workspace: ")
    assert lines[1].startswith("sandbox: ")  # how commands run here, before any of them does
    trace = transcript.load(path)
    assert lines[-2] == f"ended: {ENDINGS[name]} · turn_count {trace.steps[-1].turn_count} · {len(trace)} steps"
    assert lines[-1] == f"transcript: {path}"
    stages = stage_lines(result.stdout)
    assert len(stages) == len(trace)
    assert stages[0] == f"[1] before turn 1 · 1 · user request into messages: messages ← user: {trace.meta['task']}"
    assert stages[1].startswith("[2] turn 1 · 2 · call the model: stop_reason=tool_use")


def test_the_subagent_and_compact_transcripts_show_the_thread_and_the_compaction(ran):
    data = json.loads(ran["subagent"][1].read_text())
    main_thread, child = data["threads"]
    task = next(b for m in data["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
                if b.get("type") == "tool_use" and b["name"] == "task")
    assert (child["parent"], child["parent_tool_use_id"]) == ("main", task["id"])
    assert child["messages"][0] == {"role": "user", "content": task["input"]["prompt"]}
    inside = [s for s in data["steps"] if s["thread"] == child["id"]]
    assert inside[0]["stage"] == "user_request" and inside[-1]["ended"] == "end_turn"
    said = stage_lines(ran["subagent"][0].stdout)
    assert any(line.startswith(f"[{data['steps'].index(inside[0]) + 1}] {child['id']} · before turn 1 · 1 · user request")
               for line in said)
    data = json.loads(ran["compact"][1].read_text())
    compacts = [s for s in data["steps"] if s["stage"] == "compact"]
    assert [s["detail"]["kind"] for s in compacts] == ["micro", "auto"]
    assert compacts[0]["detail"]["replaced"] and compacts[1]["detail"]["history_before"]
    assert data["messages"][0]["content"].startswith("[Conversation compressed.")
    assert any("compact · rewrite messages: micro:" in line for line in stage_lines(ran["compact"][0].stdout))


def test_check_and_replay_as_commands(ran):
    names = ["two-tools"]  # the other transcripts are checked and replayed in process, below
    paths = [ran[name][1] for name in names]
    results = loop_cli(*[["check", str(p)] for p in paths], *[["replay", str(p)] for p in paths])
    for name, path, checked, replayed in zip(names, paths, results[:len(names)], results[len(names):]):
        trace = transcript.load(path)
        assert checked.returncode == 0 and checked.stderr == ""
        calls = sum(1 for s in trace.steps if s.stage == "call_model")
        assert checked.stdout == (f"ok: {len(trace.messages)} messages, 2 tool_use/tool_result pair(s) "
                                  f"hold the API's rules; so do the {calls} request(s) sent\n")
        assert replayed.returncode == 0 and replayed.stderr == ""
        head = replayed.stdout.splitlines()[0]
        assert head == f"model: loopscope-scripted · task: {trace.meta['task']} (replay: nothing is run)"
        # The same lines as the live run printed.
        assert stage_lines(replayed.stdout) == stage_lines(ran[name][0].stdout)


@pytest.mark.parametrize("name", SCENARIOS)
def test_check_and_replay_each_transcript(ran, name, capsys):
    # The same commands in-process (`main` is what `python -m loop` calls), to spare a second of start-up each.
    path = ran[name][1]
    trace = transcript.load(path)
    pairs = len(rules.pairs(trace.messages))  # the main thread's final history (after a compaction: its summary on)
    calls = sum(1 for s in trace.steps if s.stage == "call_model")
    assert main(["check", str(path)]) == 0
    checked = capsys.readouterr().out.splitlines()
    assert checked[0] == (f"ok: {len(trace.messages)} messages, {pairs} tool_use/tool_result pair(s) hold the API's "
                          f"rules; so do the {calls} request(s) sent")
    if name == "subagent":  # the sub-agent's thread is checked too
        child = list(trace.threads.values())[1]
        assert checked[1:] == [f"ok: thread {child.id} (started by {child.parent_tool_use_id}): "
                               f"{len(child.messages)} messages, 2 pair(s)"]
    elif name == "compact":  # and the compactions are said
        assert checked[1:] == ["ok: 2 compaction(s) (micro ×1, auto ×1); every history before them is kept"]
    else:
        assert checked[1:] == []
    assert main(["replay", str(path)]) == 0
    replayed = capsys.readouterr()
    assert replayed.err == ""
    assert stage_lines(replayed.out) == stage_lines(ran[name][0].stdout)


def write_broken(base: Path, good: dict) -> dict[str, Path]:
    """A few broken transcripts and what each error must name."""
    files = {}
    bad_json = base / "bad-json.json"
    bad_json.write_text('{"format": "loopscope-transcript",\n  "version": 1,\n  "messages": [,]}')
    files["not valid JSON: Expecting value at line 3, column 16"] = bad_json
    for name, change, words in [
        ("version", lambda d: d.update(version=7), "version: this Loopscope reads versions 1 to 3, the file is version 7"),
        ("missing", lambda d: d["steps"][3].pop("n_messages"), "steps[3]: missing n_messages"),
        ("pairs", lambda d: d["messages"][2]["content"][0].update(tool_use_id="toolu_GONE"),
         "messages: the tool_use/tool_result ids do not pair"),
        ("stage", lambda d: d["steps"][0].update(stage={"x": 1}), "steps[0].stage: unknown stage {'x': 1}"),
    ]:
        data = json.loads(json.dumps(good))
        change(data)
        path = base / f"{name}.json"
        path.write_text(json.dumps(data))
        files[words] = path
    files["No such file or directory"] = base / "nowhere.json"
    return files


def test_replay_of_a_broken_file_says_why_without_a_traceback(ran, tmp_path):
    good = json.loads(ran["two-tools"][1].read_text())
    files = write_broken(tmp_path, good)
    as_commands = [(w, p) for w, p in files.items() if "JSON" in w or "pair" in w]
    for (words, path), result in zip(as_commands, loop_cli(*[["replay", str(p)] for _, p in as_commands])):
        assert result.returncode == 1, words
        assert result.stdout == ""
        assert result.stderr.startswith("error: ") and words in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_replay_and_check_of_each_broken_file_in_process(ran, tmp_path, capsys):
    good = json.loads(ran["two-tools"][1].read_text())
    for words, path in write_broken(tmp_path, good).items():
        for command in ("replay", "check"):
            if command == "check" and "pair" in words:
                continue  # check loads broken pairs to list them (below)
            assert main([command, str(path)]) == 1, (command, words)
            out = capsys.readouterr()
            assert out.out == "" and out.err.startswith("error: ") and words in out.err, (command, out.err)


def test_check_names_each_broken_pair_on_its_own_line(ran, tmp_path):
    data = json.loads(ran["two-tools"][1].read_text())
    first, second = data["messages"][2]["content"]
    first["tool_use_id"] = "toolu_WRONG"
    data["messages"][2]["content"] = [{"type": "text", "text": "results:"}, first, second]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(data))
    (result,) = loop_main(["check", str(path)])
    expected = [str(v) for v in check(data["messages"], as_request=False)]
    assert len(expected) == 2
    assert result.returncode == 1
    assert result.stdout.splitlines() == expected
    assert expected[0].startswith("messages.1: `tool_use` ids were found without `tool_result` blocks")
    assert expected[1].startswith("messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: "
                                  "toolu_WRONG.")


def test_scenarios_lists_all_eleven():
    (result,) = loop_cli(["scenarios"])
    assert result.returncode == 0
    listed = [line.split()[0] for line in result.stdout.splitlines() if line and not line[0].isspace()]
    assert listed == SCENARIOS + COMPLETE_SCENARIOS


def test_a_model_id_goes_to_the_server_in_the_environment(fake_api, tmp_path):
    key = "sk-ant-CANARY-123"
    out = tmp_path / "t.json"
    env = clean_env(ANTHROPIC_BASE_URL=fake_api.url, ANTHROPIC_API_KEY=key)
    # In this process, with this environment: a real `python -m loop run` reads its model's address and key from
    # its environment in tests/test_hardening_caps.py (the 200 MB answer).
    (result,) = loop_main(["run", "--scenario", "hello-py", "--model", "some-id", "--out", str(out)], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("model: some-id · workspace: ")
    assert [r["model"] for r in fake_api.requests] == ["some-id"] * 3
    assert fake_api.headers[0]["authorization"] == f"Bearer {key}"
    assert "ended: end_turn" in result.stdout
    assert key not in out.read_text() and key not in result.stdout
    assert transcript.load(out).meta["model"] == "some-id"


def test_an_api_error_is_explained_and_the_steps_so_far_are_kept(fake_api, tmp_path):
    fake_api.fail(401, times=5, body={"type": "error", "error": {"type": "authentication_error",
                                                                  "message": "invalid x-api-key"}})
    out = tmp_path / "t.json"
    env = clean_env(ANTHROPIC_BASE_URL=fake_api.url, ANTHROPIC_API_KEY="sk-ant-CANARY-123")
    (result,) = loop_main(["run", "--scenario", "list-files", "--model", "some-id", "--out", str(out)], env=env)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: The API key was refused (401 authentication error). Check the key, then retry. invalid x-api-key",
        f"the steps so far are in {out}",
    ]
    trace = transcript.load(out)
    assert [s.stage for s in trace.steps] == ["user_request"]
    assert "CANARY" not in out.read_text()


def test_a_real_model_without_a_key_is_an_error_not_a_traceback():
    (result,) = loop_main(["run", "--scenario", "list-files", "--model", "claude-x"])
    assert result.returncode == 2
    assert result.stderr == ("error: The model 'claude-x' needs an API key: set ANTHROPIC_API_KEY or enter one, "
                             "or choose the scripted model, which needs none.\n")


def test_mistakes_on_the_command_line_are_errors_not_tracebacks(tmp_path, shared, capsys):
    for args, words in [(["run"], "run needs a TASK or --scenario NAME"),
                        (["run", "--scenario", "nope"], "invalid choice: 'nope'")]:
        with pytest.raises(SystemExit) as caught:  # argparse's usage error
            main(args)
        assert caught.value.code == 2 and words in capsys.readouterr().err
    not_a_folder = shared / "file"
    not_a_folder.write_text("x")
    assert main(["run", "--scenario", "list-files", "--workspace", str(not_a_folder)]) == 2
    assert capsys.readouterr().err == (f"error: commands cannot run in this workspace: {not_a_folder} is a file, "
                                       "not a folder\n")
    assert main(["run", "--scenario", "list-files", "--workspace", str(shared / "ws"),
                 "--out", str(tmp_path / "no" / "such" / "t.json")]) == 1
    out = capsys.readouterr()
    assert "ended: end_turn" in out.out
    assert out.err == f"error: cannot write {tmp_path / 'no' / 'such' / 't.json'}: No such file or directory\n"


def test_run_in_japanese_is_japanese_from_task_to_answer_and_replays_so(tmp_path, shared):
    out = tmp_path / "ja.json"
    (result,) = loop_main(["run", "--scenario", "hello-py", "--lang", "ja", "--out", str(out),
                          "--workspace", str(shared)])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model: オフライン model（台本どおりに答える、key 不要）")
    stages = stage_lines(result.stdout)
    assert stages[0] == ("[1] turn 1 の前 · 1 · user の依頼を messages へ: messages ← user: "
                         "あいさつを表示する hello.py を作って、実行してください。")
    assert stages[2].endswith("まず hello.py を作ります。")
    assert "python3 hello.py" in stages[-2] and "出力は次のとおりです" in stages[-2]  # the answer
    assert stages[-1].endswith("loop を終える: model が答えを終えました（end_turn）")
    assert lines[-2].startswith("終了: end_turn")
    trace = transcript.load(out)
    assert trace.meta["lang"] == "ja" and "Japanese" in trace.meta["system"]
    (replayed,) = loop_main(["replay", str(out)])  # a run is replayed in the language it was made in
    assert stage_lines(replayed.stdout) == stages
    (english,) = loop_main(["replay", str(out), "--lang", "en"])
    assert stage_lines(english.stdout)[0].startswith("[1] before turn 1 · 1 · user request into messages: ")


def test_run_refuses_a_language_it_does_not_have():
    (result,) = loop_main(["run", "--scenario", "hello-py", "--lang", "xx"])
    assert result.returncode == 2 and "invalid choice: 'xx'" in result.stderr


def test_a_run_leaves_no_workspace_behind_unless_it_is_kept(tmp_path):
    done, kept = loop_main(["run", "--scenario", "hello-py"], ["run", "--scenario", "hello-py", "--keep-workspace"])
    assert done.returncode == 0 and kept.returncode == 0, done.stderr + kept.stderr
    made = workspace_of(done)
    assert made.parent == workspace_of(kept).parent  # both were made in the same place
    assert not made.exists()  # removed at the end of the run
    assert not made.with_name(made.name + ".lock").exists()
    assert workspace_of(kept).is_dir() and kept.stdout.splitlines()[0].endswith(" (kept after the run)")
    assert (workspace_of(kept) / "hello.py").read_text() == "print('Hello from the agent loop!')\n"
    subprocess.run(["rm", "-rf", str(workspace_of(kept))], check=True)


def test_a_workspace_the_user_gives_is_left_as_it_was(shared):
    (shared / "mine.txt").write_text("mine")
    before = os.stat(shared)
    (result,) = loop_main(["run", "--scenario", "hello-py", "--workspace", str(shared)])
    assert result.returncode == 0, result.stderr
    assert workspace_of(result) == shared
    after = os.stat(shared)
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert sorted(p.name for p in shared.iterdir()) == ["hello.py", "mine.txt"]  # what the run wrote stays
