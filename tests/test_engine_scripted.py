"""The offline scripted model: every scenario to its end, answers built from real tool output."""

from __future__ import annotations

import copy
import re
import os

import pytest

from loop import start
from loop.engine.rules import check, pairs
from loop.engine.scenarios import SCENARIOS, free_command
from loop.engine.scripted import respond

ENDINGS = {"list-files": "end_turn", "hello-py": "end_turn", "recover": "end_turn", "two-tools": "end_turn",
           "max-tokens": "max_tokens", "subagent": "end_turn", "compact": "end_turn",
           # the complete loop's (each scenario brings its profile): tests/test_engine_complete.py has the rest
           "overloaded": "end_turn", "long-answer": "end_turn", "big-context": "end_turn", "parallel": "end_turn"}


def final_text(run) -> str:
    return "".join(b.get("text", "") for b in run.state.messages[-1]["content"])


def outputs(run) -> list[str]:
    return [s.detail["output"] for s in run.trace.steps if s.stage == "run_tool"]


def test_every_scenario_has_its_ending():
    assert sorted(SCENARIOS) == sorted(ENDINGS)


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_each_scenario_runs_to_its_end(name, shared):
    run = start(scenario=name, workspace=shared, tool_timeout=10)
    run.run_to_end()
    assert run.state.ended == ENDINGS[name]
    assert run.trace.messages_at(0) == [{"role": "user", "content": SCENARIOS[name].task}]
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


def test_recover_looks_for_the_missing_file_and_says_honestly_it_is_not_there(shared):
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    failed, found = outputs(run)
    assert "No such file" in failed and found == "(no output)"
    commands = [s.detail["input"]["command"] for s in run.trace.steps if s.stage == "run_tool"]
    assert commands == ["wc -l notes.txt", "find . -name notes.txt -type f"]
    text = final_text(run)
    assert "notes.txt does not exist in this workspace" in text and "I have not created one" in text
    assert not (shared / "notes.txt").exists()  # nothing was made up


def test_recover_counts_the_real_file_where_find_found_it(shared):
    (shared / "docs").mkdir()
    (shared / "docs" / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    failed, found, counted = outputs(run)
    assert found == "./docs/notes.txt" and counted == "4 ./docs/notes.txt"
    assert final_text(run) == "./docs/notes.txt has 4 lines (`wc -l` printed `4 ./docs/notes.txt`)."
    assert not (shared / "notes.txt").exists()


def test_recover_counts_every_file_find_found(shared):
    for folder, lines in (("a", 2), ("b", 3)):
        (shared / folder).mkdir()
        (shared / folder / "notes.txt").write_text("x\n" * lines)
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    counted = outputs(run)[-1]
    assert "2 ./a/notes.txt" in counted and "3 ./b/notes.txt" in counted
    assert final_text(run).startswith("`wc -l` counted them:") and "5 total" in final_text(run)


def test_recover_needs_no_recovery_when_the_file_exists(shared):
    (shared / "notes.txt").write_text("1\n2\n3\n4\n5\n")
    run = start(scenario="recover", workspace=shared, tool_timeout=10)
    run.run_to_end()
    assert [s.stage for s in run.trace.steps].count("run_tool") == 1
    assert final_text(run) == "notes.txt has 5 lines (`wc -l` printed `5 notes.txt`)."


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


def test_a_free_form_task_no_word_of_which_matches_is_not_said_to_match(shared):
    run = start("Tell me a joke", workspace=shared, tool_timeout=10)
    run.run_to_end()
    first = run.state.messages[1]["content"][0]["text"]
    assert "No word of your task matches" in first and "matches a word of your task" not in first
    matched = start("What Python version is installed?", workspace=shared, tool_timeout=10)
    matched.run_to_end()
    assert "matches a word of your task" in matched.state.messages[1]["content"][0]["text"]


JAPANESE = re.compile(r"[\u3040-\u30ff]")  # kana: only Japanese has them
HAN = re.compile(r"[\u4e00-\u9fff]")


def model_words(run) -> list[str]:
    """What the model wrote, without the output it quoted (indented, or a tool's whole output inline) or the commands
    and names in backticks: every response of every thread (a sub-agent's too, and those a compaction took out of the
    history). An answer cut at max_tokens and continued (the complete loop's recovery) is read whole: the cut falls
    inside a line, maybe inside a quoted one."""
    texts: list[str] = []
    cut: dict[str, int] = {}  # thread -> the text its last answer ended with, cut at max_tokens
    for s in run.trace.steps:
        if s.stage != "call_model":
            continue
        blocks = [b["text"] for b in s.detail["response"]["content"] if b.get("type") == "text"]
        if s.thread in cut and blocks:
            texts[cut.pop(s.thread)] += blocks.pop(0)
        texts += blocks
        if s.detail["response"].get("stop_reason") == "max_tokens" and texts:
            cut[s.thread] = len(texts) - 1
    printed = sorted({o for s in run.trace.steps  # what the tools printed (a sub-agent's answer is model words)
                      if s.stage == "run_tool" and not s.detail.get("thread") and (o := s.detail["output"].strip())},
                     key=len, reverse=True)
    words = []
    for text in texts:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
        for output in printed:
            text = text.replace(output, "")
        words.append(re.sub(r"`[^`]*`", "", text))
    return words


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_a_scenario_run_in_japanese_is_japanese_from_task_to_answer(name, shared):
    run = start(scenario=name, workspace=shared, tool_timeout=10, lang="ja")
    run.run_to_end()
    assert run.lang == "ja" and run.trace.meta["lang"] == "ja"
    asked = run.trace.messages_at(0)[0]["content"]  # the request (a compaction replaces it later by a summary)
    assert asked == SCENARIOS[name].task_in("ja") != SCENARIOS[name].task
    assert JAPANESE.search(asked)
    for words in model_words(run):
        assert JAPANESE.search(words), words
        left = re.sub(r"\b(?:tool_use|tool_result|tools?|messag\w*|user|assistant|system|prompt|max_tokens|stop_reason|"
                      r"model|response|block|turn|loop\.log|loop|sub-agent|agent|write-back|append|workspace|hello\.py|notes\.txt|"
                      r"Python|UTC|wc|ls|find|README\.txt|API|key|Anthropic|ANTHROPIC_API_KEY|Loopscope|"
                      r"grep|greet|src/[\w./]+|part\d\.txt|compact|usr/bin)\b", "", words)
        assert not re.search(r"[A-Za-z]{3,}", left), left


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_commands_tool_output_and_ids_are_the_same_in_every_language(lang):
    runs = {}
    for code in ("en", lang):
        with start(scenario="hello-py", tool_timeout=10, lang=code) as run:  # a workspace of its own, removed after
            run.run_to_end()
        runs[code] = run
    assert outputs(runs["en"]) == outputs(runs[lang])
    commands = [[s.detail["input"] for s in r.trace.steps if s.stage == "run_tool"] for r in runs.values()]
    assert commands[0] == commands[1]
    assert HAN.search(final_text(runs[lang])) and "Hello from the agent loop!" in final_text(runs[lang])


def test_a_free_form_task_is_answered_in_the_language_the_run_was_started_in(shared):
    run = start("What Python version is installed?", workspace=shared, tool_timeout=10, lang="zh")
    assert "Chinese" in run.model.config.system  # a real model is asked for the learner's language too
    run.run_to_end()
    text = final_text(run)
    assert HAN.search(text) and "python3 --version" in text and "API key" in text
    with start("What Python version is installed?", tool_timeout=10) as english:
        pass
    assert english.model.config.system == "You are a coding agent working in a workspace folder. Use bash to solve " \
                                          "tasks. Act, don't explain."


def test_a_scenario_task_given_in_another_language_is_still_that_scenario():
    from loop.engine.scenarios import find_scenario, language_of

    assert find_scenario(SCENARIOS["recover"].task_in("zh")) == (SCENARIOS["recover"], "zh")
    assert language_of("sys", SCENARIOS["recover"].task_in("ja")) == "ja"
    assert language_of("sys", "anything else") == "en"
