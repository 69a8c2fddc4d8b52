"""Threads and rewrites in the engine: sub-agents stepped like call frames, compaction as steps.

The check that matters most: at every step, the history the trace gives back
is exactly the one the live loop held at that moment, taken as a deep copy
while the run went (a re-simulation of the run up to that step), and the
history a call_model step shows is byte for byte what the model received.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import anthropic
import httpx2
import pytest

from loop import Model, ModelConfig, Run
from loop.engine import compact, subagent
from loop.engine.compact import Compact, Compaction
from loop.engine.fork import continue_from, fork_tool_result
from loop.engine.history import History
from loop.engine.runner import Settings
from loop.engine.rules import check, tool_results, tool_uses
from loop.tools import ToolBox, ToolOutput
from loop.tools.base import Tool
from loop.engine.trace import MAIN
from tests.test_engine_stages import responder_model

LONG = "line of output " * 20  # 300 characters: micro-compact replaces it once it is old


class Echo(Tool):
    name = "bash"
    description = "prints a long line"
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

    def run(self, tool_input, workspace):
        return ToolOutput(f"{tool_input['command']}: {LONG}")


def reply(content: list, stop_reason: str) -> dict:
    return {"id": "msg_t", "type": "message", "role": "assistant", "model": "test-model", "content": content,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def use(id_: str, name: str, tool_input: dict) -> dict:
    return {"type": "tool_use", "id": id_, "name": name, "input": tool_input}


def answer(body: dict) -> dict:
    """A responder for the tests' tasks: it reads the request only, as a model would."""
    messages = body["messages"]
    first = messages[0]["content"] if isinstance(messages[0]["content"], str) else ""
    results = [r for m in messages if m["role"] == "user" for r in tool_results(m)]
    if first.startswith(compact.SUMMARY_PROMPT):
        return reply([text("Task: read things. Done so far: many commands.")], "end_turn")
    if first == "delegate":
        if not results:
            return reply([text("I'll ask a subagent."),
                          use("toolu_task1", "task", {"prompt": "child job", "description": "search"})], "tool_use")
        return reply([text(f"The subagent said: {results[-1]['content']}")], "end_turn")
    if first == "child job":
        assert body["system"] == subagent.SYSTEM and all(t["name"] != "task" for t in body["tools"])
        if len(results) < 2:
            return reply([use(f"toolu_c{len(results)}", "bash", {"command": f"look {len(results)}"})], "tool_use")
        return reply([text("child found 2 things")], "end_turn")
    # "work N": N turns of one long command each, then an answer; "manual" asks for compact at turn 2
    if first.startswith(compact.COMPRESSED) or first.startswith("work") or first == "manual":
        n = len(messages)
        if first == "manual" and len(results) == 1:
            return reply([use("toolu_m", "compact", {})], "tool_use")
        if len(results) < 8 and not first.startswith(compact.COMPRESSED):
            return reply([use(f"toolu_{n:03d}", "bash", {"command": f"cmd {n}"})], "tool_use")
        return reply([text("finished")], "end_turn")
    raise AssertionError(f"unexpected request {first!r}")


def model_and_seen():
    return responder_model(answer)


def make_run(task: str, tmp_path, *, with_task: bool = False, compact_at: int | None = None):
    """A run of the tests' model; with `compact_at`, s06's compaction at that threshold."""
    model, seen = model_and_seen()
    tools = [Echo()] + ([subagent.Task()] if with_task else []) + ([Compact()] if compact_at else [])
    settings = Settings(toolset="s06", compact_at=compact_at) if compact_at else None
    return Run(task, model, ToolBox(tools, tmp_path), settings=settings), seen


def run_recording(run: Run) -> list[tuple[str, list]]:
    """Run to the end, keeping a deep copy of the live history of each step's thread as the loop held it."""
    held = []
    while not run.done:
        step = run.execute()
        thread = run.trace.threads[step.thread]  # its `messages` is the live list of that loop's LoopState
        held.append((step.thread, copy.deepcopy(thread.messages)))
    return held


def test_a_subagent_is_a_call_frame_inside_the_parents_run_tool(tmp_path):
    run, seen = make_run("delegate", tmp_path, with_task=True)
    held = run_recording(run)
    trace = run.trace
    child = trace.threads["task-toolu_task1"]
    assert (child.parent, child.parent_tool_use_id, child.system) == (MAIN, "toolu_task1", subagent.SYSTEM)
    assert [t["name"] for t in child.tools] == ["bash"]  # the tools minus task: no recursion
    shape = [(s.thread == MAIN, s.stage) for s in trace.steps]
    decide = shape.index((True, "decide"))
    returned = trace.returned_at(child.id)
    assert trace.opened_at(child.id) == decide + 1
    assert all(not main for main, _ in shape[decide + 1: returned])  # every child step sits inside the frame
    assert shape[returned] == (True, "run_tool") and shape[returned + 1] == (True, "write_back")
    # The child's fresh history, its own turn_count, and only its final text returned.
    assert trace.messages_at(decide + 1) == [{"role": "user", "content": "child job"}]
    assert trace.steps[decide + 1].turn_count == 1 and trace.steps[returned - 1].ended == "end_turn"
    assert trace.steps[returned].detail["output"] == "child found 2 things"
    assert trace.steps[returned].detail["thread"] == child.id
    assert "look 0" not in json.dumps(trace.messages)  # the child's commands never reach the parent's history
    assert trace.messages[-1]["content"][0]["text"] == "The subagent said: child found 2 things"
    # Every history, at every step, is what the loop held then; each request is what the model received.
    for i, (thread, messages) in enumerate(held):
        assert trace.steps[i].thread == thread and trace.messages_at(i) == messages
    calls = [i for i, s in enumerate(trace.steps) if s.stage == "call_model"]
    assert [trace.request_at(i) for i in calls] == seen
    assert [b["system"] for b in seen] == [run.model.config.system, subagent.SYSTEM, subagent.SYSTEM,
                                           subagent.SYSTEM, run.model.config.system]
    assert [t.id for t in trace.path(decide + 2)] == [MAIN, child.id]


def tool_uses_at(trace, index: int) -> list[dict]:
    """The tool_use blocks of the response step `index`'s thread is working through (none after a compaction)."""
    if not 0 <= index < len(trace.steps):
        return []
    for k in reversed([i for i in trace.steps_of(trace.steps[index].thread) if i <= index]):
        step = trace.steps[k]
        if step.stage == "call_model":
            return tool_uses(step.detail["response"])
        if step.stage == "compact":
            return []
    return []


def test_results_and_tool_uses_at_skip_the_child_steps(tmp_path):
    run, _ = make_run("delegate", tmp_path, with_task=True)
    run.run_to_end()
    trace = run.trace
    child = "task-toolu_task1"
    returned = trace.returned_at(child)
    inside = trace.opened_at(child) + 4  # the child's first run_tool
    assert trace.steps[inside].stage == "run_tool" and trace.steps[inside].thread == child
    assert [r["tool_use_id"] for r in trace.results_at(inside)] == ["toolu_c0"]
    assert tool_uses_at(trace, returned)[0]["id"] == "toolu_task1"
    assert [r["tool_use_id"] for r in trace.results_at(returned)] == ["toolu_task1"]
    assert tool_uses_at(trace, inside)[0]["id"] == "toolu_c0"


def test_the_loop_goes_on_inside_a_subagent_after_an_error(tmp_path):
    """A failed call inside the child leaves everything as it was; the same stage runs again."""
    run, _ = make_run("delegate", tmp_path, with_task=True)
    while run.next_stage() != "call_model" or run.frame.thread.id == MAIN or run.frame.state.turn_count < 2:
        run.execute()
    before = (len(run.trace), len(run.frames), copy.deepcopy(run.frame.state.messages))
    good = run.model.client
    run.model.client = anthropic.Anthropic(api_key="k", base_url="http://t.invalid", max_retries=0,
                                           http_client=httpx2.Client(transport=httpx2.MockTransport(
                                               lambda r: httpx2.Response(529, json={"type": "error", "error": {
                                                   "type": "overloaded_error", "message": "Overloaded"}}))))
    with pytest.raises(anthropic.APIStatusError):
        run.execute()
    assert (len(run.trace), len(run.frames), run.frame.state.messages) == before
    run.model.client = good
    run.run_to_end()
    assert run.state.ended == "end_turn"


def test_micro_compaction_rewrites_old_results_and_keeps_what_was_sent(tmp_path):
    run, seen = make_run("work", tmp_path, compact_at=10**9)
    held = run_recording(run)
    trace = run.trace
    compacts = [s for s in trace.steps if s.stage == "compact"]
    assert compacts and all(s.detail["kind"] == "micro" for s in compacts)
    first = compacts[0]
    assert trace.steps[first.index + 1].stage == "call_model"  # compaction comes right before a call
    old = first.detail["replaced"][0]
    assert LONG in old["message"]["content"][0]["content"]  # the full result stays in the trace
    now = trace.messages_at(first.index)[old["index"]]["content"][0]["content"]
    assert now == compact.placeholder("bash")
    assert trace.history_before(first.index)[old["index"]] == old["message"]
    assert first.detail["tokens_after"] < first.detail["tokens_before"]
    for i, (thread, messages) in enumerate(held):
        assert trace.messages_at(i) == messages, f"step {i}"
    calls = [i for i, s in enumerate(trace.steps) if s.stage == "call_model"]
    assert [trace.request_at(i) for i in calls] == seen
    # The newest three results are never replaced; the final history keeps the API's rules.
    last = [r for m in trace.messages for r in tool_results(m)]
    assert all(LONG in r["content"] for r in last[-3:]) and all(r["content"] == compact.placeholder("bash")
                                                                for r in last[:-3])
    assert check(trace.messages, as_request=False) == []


def test_micro_compaction_keeps_what_a_file_holds():
    """An old read_file result is what a file holds, kept as it was; an old bash result of the same length is not."""
    messages = [{"role": "user", "content": "work"}]
    for n, name in enumerate(["read_file", "bash", "bash", "bash", "bash"]):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": name,
                                                           "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                                      "content": f"{name} {n}: {LONG}"}]})
    rewritten = dict(compact.micro_compact(messages))
    assert sorted(rewritten) == [4]  # the old bash result only; the newest three are kept anyway
    assert rewritten[4]["content"][0]["content"] == compact.placeholder("bash")
    assert messages[2]["content"][0]["content"] == f"read_file 0: {LONG}"

def test_auto_compaction_is_a_summary_call_then_a_rewrite(tmp_path):
    run, seen = make_run("work", tmp_path, compact_at=400)
    held = run_recording(run)
    trace = run.trace
    summaries = [s for s in trace.steps if s.stage == "summarize"]
    assert len(summaries) == 1
    summary = summaries[0]
    rewrite = trace.steps[summary.index + 1]
    assert rewrite.stage == "compact" and rewrite.detail["kind"] == "auto"
    assert trace.steps[rewrite.index + 1].stage == "call_model"
    assert summary.detail["request"]["messages"][0]["content"].startswith(compact.SUMMARY_PROMPT)
    assert "system" not in summary.detail["request"] and "tools" not in summary.detail["request"]
    assert trace.request_at(summary.index) in seen
    assert trace.messages_at(rewrite.index) == compact.summarized(summary.detail["summary"])
    assert rewrite.detail["history_before"] == held[rewrite.index - 1][1]  # the whole history, kept
    assert rewrite.n_messages == 1 and trace.history_before(rewrite.index) == rewrite.detail["history_before"]
    for i, (thread, messages) in enumerate(held):
        assert trace.messages_at(i) == messages, f"step {i}"
    assert run.state.ended == "end_turn"


def test_the_compact_tool_asks_for_a_manual_compaction_after_the_write_back(tmp_path):
    run, _ = make_run("manual", tmp_path, compact_at=10**9)
    held = run_recording(run)
    trace = run.trace
    at = next(s for s in trace.steps if s.stage == "run_tool" and s.detail["name"] == "compact")
    assert at.detail["output"] == "Compressing..."
    after = [s.stage for s in trace.steps[at.index + 1: at.index + 5]]
    assert after == ["write_back", "summarize", "compact", "call_model"]
    assert trace.steps[at.index + 3].detail["kind"] == "manual"
    for i, (thread, messages) in enumerate(held):
        assert trace.messages_at(i) == messages


def test_a_fork_inside_a_subagent_goes_on_there_and_returns_to_the_parent(tmp_path):
    run, _ = make_run("delegate", tmp_path, with_task=True)
    run.run_to_end()
    child = "task-toolu_task1"
    inside = run.trace.opened_at(child) + 4
    branch = fork_tool_result(run, inside, "edited output")
    assert branch.frame.thread.id == child and len(branch.frames) == 2
    branch.run_to_end()
    assert branch.trace.messages == run.trace.messages  # the responder's answer does not read the output
    edited = branch.trace.messages_at(inside)
    assert edited == run.trace.messages_at(inside - 1)  # run_tool does not change messages
    assert branch.trace.results_at(inside)[0]["content"] == "edited output"
    assert run.trace.results_at(inside)[0]["content"].startswith("look 0")  # the original is untouched
    # Resuming from every step gives back the same run.
    for index in range(len(run.trace) - 1):
        again = continue_from(run.trace, index, run.model, run.tools)
        again.run_to_end()
        assert [s.stage for s in again.trace.steps] == [s.stage for s in run.trace.steps], index
        assert again.trace.messages == run.trace.messages


def test_a_fork_after_compaction_keeps_the_versions_before(tmp_path):
    run, _ = make_run("work", tmp_path, compact_at=10**9)
    run.run_to_end()
    first = next(s for s in run.trace.steps if s.stage == "compact")
    again = continue_from(run.trace, first.index, run.model, run.tools, settings=run.settings)
    again.run_to_end()
    for i in range(len(run.trace)):
        assert again.trace.messages_at(i) == run.trace.messages_at(i)


def test_history_keeps_every_version_once():
    h = History()
    a, b, c, d = ({"n": k} for k in "abcd")
    h.record(0, [a])
    h.record(1, [a, b])
    h.record(2, [a, c], rewritten=[1])  # b replaced by c in place
    h.record(3, [d], rewritten=[0])  # everything replaced by one summary
    h.record(4, [d, a])
    assert [h.at(v, n) for v, n in [(0, 1), (1, 2), (2, 2), (3, 1), (4, 2)]] == [
        [a], [a, b], [a, c], [d], [d, a]]
    assert h.window(1, 1, 2) == [b] and h.message(4, 1) is a
    assert h.rewritten_since(1, 2, 2) == 1 and h.rewritten_since(0, 1, 1) is None
    assert len(h.first) == 2  # two slots: a rewrite adds a version, not a copy of the list
    fork = h.until(2, 2)
    fork.record(3, [a, c, b])
    assert fork.at(3, 3) == [a, c, b] and h.at(2, 2) == [a, c]


# -- the two built-in scenarios, on the scripted model behind the real SDK, with real tools --

def test_the_subagent_scenario_answers_from_the_childs_summary_only(shared):
    from loop.engine.runner import start

    run = start(scenario="subagent", workspace=shared)
    assert "task" in run.tools.tools and run.trace.meta["toolset"] == "s04"
    run.run_to_end()
    trace = run.trace
    assert run.state.ended == "end_turn"
    (child,) = [t for t in trace.threads.values() if t.parent == MAIN]
    child_steps = [trace.steps[i] for i in trace.steps_of(child.id)]
    tools_used = [s.detail["name"] for s in child_steps if s.stage == "run_tool"]
    assert tools_used == ["bash", "read_file"]  # the child runs a command and reads a file
    assert child_steps[-1].ended == "end_turn"
    returned = trace.steps[trace.returned_at(child.id)]
    assert returned.detail["tool_use_id"] == child.parent_tool_use_id
    assert "src/people.py" in returned.detail["output"] and 'Hello, {name}!' in returned.detail["output"]
    final = trace.messages[-1]["content"][0]["text"]
    assert returned.detail["output"] in final
    # the parent's own history never held the child's commands or what they printed
    parent = json.dumps(trace.messages)
    assert "grep -rn" not in parent and ":1:def greet" not in parent
    assert not any(u["id"] in parent for m in child.messages for u in tool_uses(m))
    assert check(trace.messages, as_request=False) == [] and check(child.messages, as_request=False) == []


def test_the_compact_scenario_micro_compacts_then_summarises_and_still_finishes(shared):
    from loop.engine.runner import start

    run = start(scenario="compact", workspace=shared)
    assert run.compaction is not None and run.compaction.threshold == 2100
    run.run_to_end()
    trace = run.trace
    assert run.state.ended == "end_turn"
    kinds = [(s.stage, s.detail.get("kind")) for s in trace.steps if s.stage in ("compact", "summarize")]
    assert kinds[0] == ("compact", "micro") and ("summarize", "auto") in kinds and ("compact", "auto") in kinds
    rewrite = next(s for s in trace.steps if s.stage == "compact" and s.detail["kind"] == "auto")
    assert rewrite.detail["tokens_before"] > 2100 > rewrite.detail["tokens_after"]
    # After the rewrite, the very next request sends the summary alone: that is all the model knows.
    call = trace.steps[rewrite.index + 1]
    sent = trace.request_at(call.index)["messages"]
    assert len(sent) == 1 and sent[0]["content"].startswith(compact.COMPRESSED)
    assert "part1.txt does not mention the falcon" in sent[0]["content"]
    final = trace.messages[-1]["content"][0]["text"]
    assert final.startswith("part5.txt mentions the falcon") and "only from the summary" in final
    # The full history before the compaction is in the trace, the tool output micro-compact replaced too.
    before = rewrite.detail["history_before"]
    assert before == trace.history_before(rewrite.index) and len(before) > 5
    micro = next(s for s in trace.steps if s.stage == "compact" and s.detail["kind"] == "micro")
    assert "part1.txt" in micro.detail["replaced"][0]["message"]["content"][0]["content"]  # the ls -l output


@pytest.mark.parametrize("scenario", ["subagent", "compact"])
def test_a_journal_saved_step_by_step_loads_as_the_same_run_and_resumes_inside_it(scenario, shared, tmp_path):
    from loop.engine.runner import start
    from loop.files.runs import RunsStore, owner_key

    run = start(scenario=scenario, workspace=shared)
    store, owner = RunsStore(tmp_path / "runs"), owner_key("browser:threads-test")
    while not run.done:
        run.execute()
        store.save(owner, "r1", run.trace, writer="tab")  # as the page does after every click
    loaded, _ = RunsStore(tmp_path / "runs").load(owner, "r1")
    assert list(loaded.threads) == list(run.trace.threads)
    for i in range(len(run.trace)):
        assert loaded.steps[i].to_dict() == run.trace.steps[i].to_dict()
        assert loaded.messages_at(i) == run.trace.messages_at(i), i
        assert loaded.results_at(i) == run.trace.results_at(i), i
    # Resumed from the middle (inside the sub-agent, or between the two compactions), it ends as the run did.
    middle = next(i for i, s in enumerate(run.trace.steps)
                  if (s.thread != MAIN if scenario == "subagent" else s.stage == "compact")) + 2
    again = continue_from(loaded, middle, run.model, run.tools, settings=run.settings)
    again.run_to_end()
    assert [s.stage for s in again.trace.steps] == [s.stage for s in run.trace.steps]
    assert again.trace.messages == run.trace.messages


def test_the_compaction_estimate_is_the_json_length_over_four_however_the_history_changed():
    compaction = Compaction()
    messages = [{"role": "user", "content": "héllo"}]
    assert compaction.estimate([]) == compact.estimate_tokens([])
    for n in range(30):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "x" * n}]})
        if n % 7 == 3:
            messages[1] = {"role": "assistant", "content": "rewritten " * n}
        if n == 20:
            messages[:] = [{"role": "user", "content": "summary"}]
        assert compaction.estimate(messages) == compact.estimate_tokens(messages), n


@pytest.mark.parametrize("scenario", ["subagent", "compact"])
def test_a_real_model_over_http_runs_the_sub_agent_and_the_summary_call(fake_api, shared, scenario):
    """The same loops with a model id and a base URL: every call, the sub-agent's and the summary's
    included, goes over HTTP to an Anthropic-compatible server, which receives exactly what the trace shows."""
    from loop.engine.runner import start
    from loop.engine.scenarios import SCENARIOS

    chosen = SCENARIOS[scenario]
    config = ModelConfig(model="claude-test", api_key="sk-test-http", base_url=fake_api.url, max_retries=0)
    run = start(chosen.task, config=config, workspace=shared, toolset=chosen.toolset, compact_at=chosen.compact_at)
    run.run_to_end()
    assert run.state.ended == "end_turn"
    trace = run.trace
    sent = [trace.request_at(i) for i, s in enumerate(trace.steps) if s.stage in ("call_model", "summarize")]
    assert [json.loads(json.dumps(r)) for r in sent] == fake_api.requests
    if scenario == "subagent":
        assert trace.has_threads and {r["system"] for r in fake_api.requests} == {config.system + subagent.PARENT_HINT,
                                                                                   subagent.SYSTEM}
    else:
        summary = next(r for r in fake_api.requests if "system" not in r)
        assert summary["messages"][0]["content"].startswith(compact.SUMMARY_PROMPT) and "tools" not in summary
        assert summary["max_tokens"] == compact.SUMMARY_MAX_TOKENS


@pytest.mark.parametrize("task, kwargs", [("delegate", {"with_task": True}),
                                          ("work", {"compact_at": 400}),
                                          ("manual", {"compact_at": 10**9})])
def test_the_history_at_every_step_is_a_re_simulation_of_the_run_up_to_it(task, kwargs, tmp_path):
    """Run the loop once; then, for every step i, run it again from nothing for i + 1 steps and compare."""
    run, _ = make_run(task, tmp_path, **kwargs)
    run.run_to_end()
    for i in range(len(run.trace)):
        again, _ = make_run(task, tmp_path, **kwargs)
        for _ in range(i + 1):
            again.execute()
        thread = again.trace.steps[i].thread
        assert thread == run.trace.steps[i].thread
        assert run.trace.messages_at(i) == again.trace.threads[thread].messages, f"step {i}"


def test_a_sub_agent_compacts_its_own_history_when_compaction_is_on(tmp_path):
    """Toolsets can be combined: a sub-agent's loop is compacted like its parent's, in its own thread."""
    model, seen = model_and_seen()

    def answer_child(body):  # the child works long enough to be summarised
        messages = body["messages"]
        first = messages[0]["content"] if isinstance(messages[0]["content"], str) else ""
        results = [r for m in messages if m["role"] == "user" for r in tool_results(m)]
        if first.startswith(compact.SUMMARY_PROMPT):
            return reply([text("child summary")], "end_turn")
        if first == "child job" and len(results) < 12:
            return reply([use(f"toolu_k{len(results)}", "bash", {"command": "x"})], "tool_use")
        if first == "child job" or first.startswith(compact.COMPRESSED):
            return reply([text("child done")], "end_turn")
        return answer(body)

    client = anthropic.Anthropic(api_key="k", base_url="http://t.invalid", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(
                                     lambda r: httpx2.Response(200, json=answer_child(json.loads(r.content))))))
    model = Model(ModelConfig(model="test-model", api_key="k"), client=client)
    run = Run("delegate", model, ToolBox([Echo(), subagent.Task(), Compact()], tmp_path),
              settings=Settings(toolset="s06", compact_at=600))
    run.run_to_end()
    child = "task-toolu_task1"
    kinds = [(s.stage, s.detail.get("kind")) for i in run.trace.steps_of(child) for s in [run.trace.steps[i]]
             if s.stage in ("summarize", "compact")]
    assert ("summarize", "auto") in kinds and ("compact", "auto") in kinds
    summary_step = next(s for s in run.trace.steps if s.stage == "summarize")
    assert "system" not in summary_step.detail["request"]  # the summary call has no system prompt, a child's too
    assert run.state.ended == "end_turn" and run.trace.steps[run.trace.returned_at(child)].detail["output"] == "child done"


def test_a_replay_draws_the_sub_agents_loop_only_where_it_runs():
    from loop.files import transcript
    from loop.views.diagram import svg_at

    trace = transcript.load(Path(__file__).resolve().parent.parent / "samples" / "subagent.json")
    trace.meta.pop("toolset")  # as an imported log: no toolset to go by
    child = next(t for t in trace.threads.values() if not t.is_main)
    first, returned = trace.opened_at(child.id), trace.returned_at(child.id)
    drawn = [i for i in range(len(trace)) if 'class="ls-child' in svg_at(trace, i)]
    assert drawn == list(range(first - 1, returned + 1))  # the step before it, its own steps, the answer taken
    assert 'class="ls-child' in svg_at(transcript.load(Path(__file__).resolve().parent.parent / "samples" /
                                                     "subagent.json"), 0)  # a live s04 run shows it from the start


def test_a_sub_agent_has_its_own_limit_of_30_turns_not_its_parents():
    """The course gives a child loop 30 turns whatever the parent's max_turns: a parent allowed 2 turns still gets
    the answer of a sub-agent that needs 5."""
    import tempfile

    from loop.engine.model import Reply
    from loop.engine.subagent import Task

    class Delegating:
        config = ModelConfig()
        name = "delegating-model"

        def create(self, messages, tools, observer=None, **settings):
            child = messages[0]["content"] == "the sub-task"
            turn = sum(1 for m in messages if m["role"] == "assistant") + 1
            if child and turn < 5:
                content, stop = [{"type": "tool_use", "id": f"toolu_c{turn}", "name": "bash",
                                  "input": {"command": f"echo {turn}"}}], "tool_use"
            elif not child and turn == 1:
                content, stop = [{"type": "tool_use", "id": "toolu_task", "name": "task",
                                  "input": {"prompt": "the sub-task", "description": "five turns"}}], "tool_use"
            else:
                content, stop = [{"type": "text", "text": f"done after {turn} turns"}], "end_turn"
            response = {"id": f"msg_{turn}", "type": "message", "role": "assistant", "model": self.name,
                        "content": content, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1}}
            return Reply(response=response, request={"model": self.name, "max_tokens": 8000}, duration_ms=0.0)

    assert subagent.MAX_TURNS == 30
    with Run("Delegate it.", Delegating(), ToolBox([Echo(), Task()], tempfile.gettempdir()), max_turns=2) as run:
        run.run_to_end()
        child = [s for s in run.trace.steps if s.thread != MAIN]
        assert "stop" not in [s.stage for s in child] and child[-1].ended == "end_turn"
        assert max(s.turn for s in child) == 5
        task_result = tool_results(run.trace.messages[2])[0]
        assert "done after 5 turns" in json.dumps(task_result)
        assert run.state.ended == "end_turn"
