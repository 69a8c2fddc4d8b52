"""The offline scripted model: every scenario to its end, answers built from real tool output."""

from __future__ import annotations

import copy
import os

import pytest

from loop import start
from loop.rules import check, pairs
from loop.scripted import SCENARIOS, free_command, respond

ENDINGS = {"list-files": "end_turn", "hello-py": "end_turn", "recover": "end_turn", "two-tools": "end_turn",
           "max-tokens": "max_tokens"}


def final_text(run) -> str:
    return "".join(b.get("text", "") for b in run.state.messages[-1]["content"])


def outputs(run) -> list[str]:
    return [s.detail["output"] for s in run.trace.steps if s.stage == "run_tool"]


def test_there_are_five_scenarios():
    assert sorted(SCENARIOS) == sorted(ENDINGS)


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_each_scenario_runs_to_its_end(name, shared):
    run = start(scenario=name, workspace=shared, tool_timeout=10)
    run.run_to_end()
    assert run.state.ended == ENDINGS[name]
    assert run.state.messages[0] == {"role": "user", "content": SCENARIOS[name].task}
    assert run.state.messages[-1]["role"] == "assistant"
    assert check(run.state.messages) == []
    assert all(p.status == "paired" for p in pairs(run.state.messages))
    assert final_text(run).strip()


def test_list_files_names_what_is_really_there(shared):
    (shared / "alpha.txt").write_text("a")
    (shared / "beta-notes.md").write_text("b")
    run = start(scenario="list-files", workspace=shared, tool_timeout=10)
    run.run_to_end()
    text = final_text(run)
    assert "`alpha.txt`" in text and "`beta-notes.md`" in text and "2 entries" in text
    assert "README.txt" not in text  # the workspace was not empty, so no README was added


def test_hello_py_reports_what_python_printed(shared):
    run = start(scenario="hello-py", workspace=shared, tool_timeout=10)
    run.run_to_end()
    written, printed = outputs(run)
    assert (shared / "hello.py").read_text().strip() == written.strip()
    assert printed == "Hello from the agent loop!"
    assert printed in final_text(run)


def test_recover_counts_lines_after_creating_the_file(shared):
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    failed, counted = outputs(run)
    assert "No such file" in failed
    assert counted.startswith("3 ")
    assert "notes.txt has 3 lines after creating it" in final_text(run)
    assert counted in final_text(run)


def test_recover_needs_no_recovery_when_the_file_exists(shared):
    (shared / "notes.txt").write_text("1\n2\n3\n4\n5\n")
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    assert [s.stage for s in run.trace.steps].count("run_tool") == 1
    assert "notes.txt has 5 lines" in final_text(run) and "after creating" not in final_text(run)


def test_two_tools_quotes_both_outputs(shared):
    run = start(scenario="two-tools", workspace=shared, tool_timeout=10)
    run.run_to_end()
    date, size = outputs(run)
    assert f"the date is {date}" in final_text(run)
    assert f"the workspace uses {size.split()[0]}" in final_text(run)


def test_max_tokens_cuts_the_answer_at_the_budget(shared):
    run = start(scenario="max-tokens", workspace=shared, tool_timeout=10)
    run.run_to_end()
    response = run.trace.steps[-3].detail["response"]
    assert response["stop_reason"] == "max_tokens"
    assert response["usage"]["output_tokens"] == SCENARIOS["max-tokens"].max_tokens
    assert len(final_text(run)) == SCENARIOS["max-tokens"].max_tokens * 4  # about 4 characters a token


def body_after(task: str, output: str, *, is_error: bool = False, system: str = "sys") -> dict:
    """A request whose one tool_result says `output`, as if a tool had printed it."""
    first = respond({"model": "m", "max_tokens": 8000, "system": system,
                     "messages": [{"role": "user", "content": task}]})[1]
    result = {"type": "tool_result", "tool_use_id": first["content"][-1]["id"], "content": output}
    if is_error:
        result["is_error"] = True
    return {"model": "m", "max_tokens": 8000, "system": system, "messages": [
        {"role": "user", "content": task},
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [result]},
    ]}


def test_answers_quote_the_tool_result_they_were_given():
    # hello-py's second turn runs the file; its third quotes whatever the run printed.
    body = body_after(SCENARIOS["hello-py"].task, "written")
    second = respond(body)[1]
    body["messages"] += [{"role": "assistant", "content": second["content"]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": second["content"][-1]["id"],
                                                       "content": "Bonjour from a different file"}]}]
    status, third = respond(body)
    assert status == 200 and third["stop_reason"] == "end_turn"
    assert "Bonjour from a different file" in third["content"][0]["text"]
    status, listed = respond(body_after(SCENARIOS["list-files"].task, "total 0\n-rw-r--r-- 1 u u 0 Jan 1 00:00 zeta.csv"))
    assert "`zeta.csv`" in listed["content"][0]["text"]


def test_same_request_same_response():
    body = body_after(SCENARIOS["recover"].task, "wc: notes.txt: No such file or directory", is_error=True)
    first = respond(body)
    assert respond(copy.deepcopy(body)) == first
    assert first[1]["stop_reason"] == "tool_use"
    # A different history is a different request: its ids differ too.
    other = respond(body_after(SCENARIOS["recover"].task, "wc: other error", is_error=True))
    assert other[1]["id"] != first[1]["id"]
    assert other[1]["content"][-1]["id"] != first[1]["content"][-1]["id"]


def test_two_runs_of_a_scenario_make_the_same_requests(shared):
    traces = []
    for name in ("a", "b"):
        run = start(scenario="hello-py", workspace=shared / name, tool_timeout=10)
        run.run_to_end()
        traces.append([run.trace.request_at(s.index) for s in run.trace.steps if s.stage == "call_model"])
    assert traces[0] == traces[1] and len(traces[0]) == 3


@pytest.mark.parametrize("task, command", [
    ("What Python version is installed?", "python3 --version"),
    ("What day is it today?", "date -u"),
    ("今日の日付は?", "date -u"),
    ("Which folder am I in?", "pwd"),
    ("Tell me a joke", "ls -la"),
])
def test_free_form_picks_a_fitting_command(task, command):
    assert free_command(task) == command


def test_a_free_form_task_runs_a_safe_command_and_asks_for_a_real_model(shared):
    (shared / "keep.txt").write_text("untouched")
    before = sorted(os.listdir(shared))
    run = start("What Python version is installed?", workspace=shared, tool_timeout=10)
    run.run_to_end()
    (output,) = outputs(run)
    assert output.startswith("Python 3.")
    text = final_text(run)
    assert "python3 --version" in text and output in text
    assert "API key" in text and "scripted model" in text
    assert sorted(os.listdir(shared)) == before  # read-only: the workspace is as it was


def test_missing_fields_are_refused_like_the_api():
    assert respond({"max_tokens": 10})[0] == 400
    assert respond({"max_tokens": 10})[1]["error"]["message"] == "messages: Field required"
    assert respond({"messages": [{"role": "user", "content": "hi"}]})[1]["error"]["message"] == "max_tokens: Field required"
