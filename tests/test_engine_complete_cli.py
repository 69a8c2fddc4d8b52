"""The complete loop from the command line: each of its scenarios to end_turn, showing its transition reason; the
minimal loop where the chapter says it stops; one JSON line a step in the journal; `check` on every transcript."""

from __future__ import annotations

import json
import os

import pytest

from loop.files import transcript
from tests.cli import clean_env, loop_main, start_cli
from tests.test_engine_cli import stage_lines

REASONS = {"overloaded": "retry", "long-answer": "max_tokens_recovery", "big-context": "compact_resume",
           "parallel": "tool_result"}


def env() -> dict:
    return {**clean_env(), "LOOPSCOPE_WAIT_SCALE": "0.05"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    base = tmp_path_factory.mktemp("complete")
    commands = [["run", "--scenario", name, "--profile", "complete", "--out", str(base / f"{name}.json"),
                 "--journal", str(base / f"{name}.jsonl")] for name in REASONS]
    real = start_cli(commands[0], env=env())  # one as a real command; while it runs, the others in process
    inside = loop_main(*commands[1:], env=env())
    return {name: (result, base) for name, result in zip(REASONS, real() + inside)}


@pytest.mark.parametrize("name", list(REASONS))
def test_each_scenario_ends_with_end_turn_in_the_complete_loop(ran, name):
    result, base = ran[name]
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("loop: complete")
    assert f"transition_reason={REASONS[name]}" in result.stdout
    assert "ended: end_turn" in result.stdout
    trace = transcript.load(base / f"{name}.json")
    assert trace.steps[-1].ended == "end_turn" and trace.meta["profile"] == "complete"
    assert REASONS[name] in {s.transition_reason for s in trace.steps}
    (check,) = loop_main(["check", str(base / f"{name}.json")], env=env())
    assert check.returncode == 0 and check.stdout.startswith("ok: "), check.stdout


def test_the_lines_say_each_reason_to_go_on(ran):
    overloaded = stage_lines(ran["overloaded"][0].stdout)
    assert sum("2 · the call failed: wait, then retry: the call failed (529 overloaded_error) on attempt" in line
               for line in overloaded) == 3
    long_answer = ran["long-answer"][0].stdout
    assert long_answer.count("transition_reason=max_tokens_recovery") == 2
    assert "the API refused the prompt as too long (" in ran["big-context"][0].stdout
    assert "3 tools: wall time" in ran["parallel"][0].stdout


@pytest.mark.parametrize("name", list(REASONS))
def test_the_journal_is_one_json_line_a_step(ran, name):
    result, base = ran[name]
    lines = (base / f"{name}.jsonl").read_text().splitlines()
    head, steps = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert head["meta"]["profile"] == "complete" and head["settings"] == {"profile": "complete"}
    trace = transcript.load(base / f"{name}.json")
    assert [s["step"]["stage"] for s in steps] == [s.stage for s in trace.steps]
    assert [s["step"]["transition_reason"] for s in steps] == [s.transition_reason for s in trace.steps]
    # the journal is a run the importers read back: the same steps, the same final history
    (imported,) = loop_main(["import", str(base / f"{name}.jsonl"), "--out", str(base / f"{name}-again.json")],
                            env=env())
    assert imported.returncode == 0, imported.stderr
    again = transcript.load(base / f"{name}-again.json")
    assert again.messages == trace.messages and len(again.steps) == len(trace.steps)


def test_jq_reads_the_journal(ran, tmp_path):
    import shutil
    import subprocess

    if shutil.which("jq") is None:
        pytest.fail("jq is missing: apt-get install -y jq")
    _, base = ran["overloaded"]
    out = subprocess.run(["jq", "-r", "select(.step) | .step | select(.stage == \"retry\") | .detail.attempt",
                          str(base / "overloaded.jsonl")], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", "2", "3"]


def test_the_minimal_loop_ends_on_max_tokens_as_the_chapter_says(tmp_path):
    (result,) = loop_main(["run", "--scenario", "long-answer", "--profile", "minimal", "--out", str(tmp_path / "m.json")],
                         env=env())
    assert result.returncode == 0 and "ended: max_tokens" in result.stdout
    assert "loop: complete" not in result.stdout and "recover" not in result.stdout
    assert transcript.load(tmp_path / "m.json").steps[-1].ended == "max_tokens"


@pytest.mark.parametrize("name, said", [
    ("overloaded", "The API is overloaded (529)"),
    ("big-context", "prompt is too long: "),
])
def test_the_minimal_loop_stops_at_the_error(name, said, tmp_path):
    (result,) = loop_main(["run", "--scenario", name, "--profile", "minimal", "--out", str(tmp_path / "m.json")],
                         env=env())
    assert result.returncode == 1 and said in result.stderr
    assert transcript.load(tmp_path / "m.json").steps  # the steps so far are kept


def test_retries_exhausted_exit_non_zero(fake_api, tmp_path):
    fake_api.fail(529, times=10)
    e = {**env(), "ANTHROPIC_BASE_URL": fake_api.url, "ANTHROPIC_API_KEY": "sk-test"}
    (result,) = loop_main(["run", "hello", "--model", "claude-test", "--profile", "complete"], env=e)
    assert result.returncode == 1 and "ended: retries_exhausted" in result.stdout


def test_a_bad_profile_or_budget_is_refused():
    bad, budget = loop_main(["run", "--scenario", "overloaded", "--profile", "fast"],
                           ["run", "--scenario", "overloaded", "--budget", "0"], env=env())
    assert bad.returncode == 2 and "invalid choice: 'fast'" in bad.stderr
    assert budget.returncode == 2 and "--budget needs a positive number" in budget.stderr


def test_serve_refuses_a_prompt_longer_than_its_window(tmp_path):
    import re
    import subprocess
    import sys

    import anthropic

    # Port 0: the server binds a free port itself and says which, once it is listening (no port picked here and
    # bound later, which another process could take in between).
    proc = subprocess.Popen([sys.executable, "-m", "loop", "serve", "--port", "0", "--context-window", "50"],
                            cwd=os.path.dirname(os.path.dirname(__file__)), env=env(), stdout=subprocess.PIPE,
                            text=True)
    try:
        said = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", said)
        assert found, said
        client = anthropic.Anthropic(api_key="k", base_url=found.group(0), max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match=r"prompt is too long: \d+ tokens > 50 maximum"):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x" * 400}])
    finally:
        proc.terminate()
        proc.wait(10)
