"""The complete loop (profiles.py): each reason to go on, bounded; parallel tools; its explicit state.

The scenarios run on the scripted model through the SDK's real path; the
failures a real API sends (529, 429 with retry-after, 400 too long, a cut
answer) come from the fake server over HTTP. The retry waits are scaled down
for the tests (conftest.short_waits); what each step says it waited is checked.
"""

from __future__ import annotations

import random

import anthropic
import pytest

from loop.engine import profiles, retry
from loop.engine.waits import SCALE_VARIABLE
from loop import start
from loop.files import transcript
from loop.engine.fork import state_at
from loop.engine.model import Model, ModelConfig
from loop.engine.recovery import CONTINUE
from loop.engine.rules import check, tool_results, tool_uses
from loop.engine.runner import Run, Settings
from loop.engine.scenarios import SCENARIOS, WRITE_LOG, checks
from loop.engine.scripted import respond, too_long
from loop.tools import ToolBox, ToolOutput
from loop.tools.base import Tool
from loop.tools.read_only import read_only
from loop.engine.toolsets import default_toolbox

SCALE = 0.02  # conftest's LOOPSCOPE_WAIT_SCALE


def stages(run) -> list[str]:
    return [s.stage for s in run.trace.steps]


def on_server(fake, task: str | None = None, **settings) -> Run:
    """A run of the complete loop on the fake server over HTTP, as a real model with a key would be."""
    config = ModelConfig(model="claude-test", api_key="sk-test", base_url=fake.url, max_tokens=settings.pop(
        "max_tokens", 8000), stream=settings.pop("stream", False))
    return start(task or "What is in the workspace?", config=config, profile="complete", tool_timeout=10, **settings)


def recorded(run) -> list[dict]:
    """The explicit state the runner held after each step, as profiles.counters names it."""
    seen = []

    def keep(step):
        s = run.frames[0].state
        seen.append({k: (list(getattr(s, k)) if k == "transitions" else getattr(s, k))
                     for k in profiles.counters(run.trace, -1)})

    run.run_to_end(on_step=keep)
    return seen


# -- retry ------------------------------------------------------------------------------------------------------

def test_overloaded_is_retried_three_times_as_steps_then_the_loop_goes_on(shared):
    with start(scenario="overloaded", workspace=shared, tool_timeout=10) as run:
        assert run.profile.name == "complete" and run.model.config.max_retries == 0  # the SDK retries nothing
        slept = []
        run.sleep = slept.append  # the waits, as asked (the clock is not waited)
        run.run_to_end()
        assert stages(run)[:6] == ["user_request", "retry", "retry", "retry", "call_model", "append_assistant"]
        retries = [s for s in run.trace.steps if s.stage == "retry"]
        for k, step in enumerate(retries):
            d = step.detail
            assert step.transition_reason == "retry" and not d["gave_up"]
            assert (d["attempt"], d["attempts"]) == (k + 1, 4)
            assert d["error"] == {"status": 529, "type": "overloaded_error", "message": "Overloaded"}
            assert d["backoff_s"] == 2 ** k and 0 <= d["jitter_s"] < 1
            assert d["wait_s"] == pytest.approx((d["backoff_s"] + d["jitter_s"]) * SCALE, abs=1e-3)
            assert step.n_messages == 1  # the history is not touched by a failed call
        assert len(slept) == 3 and all(0 < s <= r.detail["wait_s"] for s, r in zip(slept, retries))
        call = run.trace.steps[4]
        assert call.detail["attempt"] == 4 and call.detail["skipped"] is False
        assert run.state.ended == "end_turn" and run.state.retries == 3 and run.state.attempt == 1
        assert run.state.transitions == ["retry", "retry", "retry", "tool_result"]


def test_the_minimal_loop_stops_at_the_first_529(shared):
    with start(scenario="overloaded", workspace=shared, tool_timeout=10, profile="minimal") as run:
        with pytest.raises(anthropic.InternalServerError) as failed:
            run.run_to_end()
        assert failed.value.status_code == 529 and stages(run) == ["user_request"]


def test_retries_are_bounded_then_the_loop_ends_with_the_reason(fake_api, shared):
    fake_api.fail(529, times=10)
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run) == ["user_request", "retry", "retry", "retry", "retry"]
        last = run.trace.steps[-1]
        assert last.detail["gave_up"] and last.detail["attempt"] == 4 and "wait_s" not in last.detail
        assert last.ended == "retries_exhausted" and last.transition_reason is None
        assert len(fake_api.requests) == 4  # 1 + 3 retries, none of them the SDK's
        assert [h["x-stainless-retry-count"] for h in fake_api.headers] == ["0", "1", "2", "3"]


@pytest.mark.parametrize("header, seconds", [({"retry-after": "2"}, 2.0), ({"retry-after-ms": "1500"}, 1.5)])
def test_retry_after_is_honoured(fake_api, shared, header, seconds):
    fake_api.fail(429, headers=header)
    with on_server(fake_api, workspace=shared) as run:
        slept = []
        run.sleep = slept.append
        run.run_to_end()
        step = run.trace.steps[1]
        assert step.stage == "retry" and step.detail["retry_after_s"] == seconds
        assert step.detail["wait_s"] == pytest.approx(seconds * SCALE)  # not 1 s × 2^0 + jitter
        assert slept and slept[0] == pytest.approx(seconds * SCALE, abs=0.01)
        assert run.state.ended == "end_turn"


def test_a_retry_after_longer_than_a_minute_ends_the_loop_at_once(fake_api, shared):
    fake_api.fail(429, headers={"retry-after": "600"})
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run) == ["user_request", "retry"] and run.state.ended == "retries_exhausted"
        assert run.trace.steps[-1].detail["retry_after_s"] == 600


def test_timeouts_and_dropped_connections_are_retried_too(fake_api, shared):
    fake_api.fail("timeout", delay=2.0)
    fake_api.fail(500)
    with on_server(fake_api, workspace=shared) as run:
        run.model.client = run.model.client.with_options(timeout=0.5)
        run.run_to_end()
        kinds = [s.detail["error"]["type"] for s in run.trace.steps if s.stage == "retry"]
        assert kinds == ["timeout", "api_error"] and run.state.ended == "end_turn"


def test_an_error_no_retry_can_help_stops_the_stage_as_in_the_chapter(fake_api, shared):
    fake_api.fail(401)
    with on_server(fake_api, workspace=shared) as run:
        run.execute()
        with pytest.raises(anthropic.AuthenticationError):
            run.execute()
        assert stages(run) == ["user_request"]  # nothing recorded; Retry repeats the stage


def test_backoff_doubles_from_one_second_up_to_thirty():
    rng = random.Random(7)
    waits = [retry.backoff(k, rng) for k in range(8)]
    assert [w for w, _ in waits] == [1, 2, 4, 8, 16, 30, 30, 30]
    assert all(0 <= j < 1 for _, j in waits)


def test_a_skipped_wait_is_not_waited_and_the_call_says_so(shared):
    with start(scenario="overloaded", workspace=shared, tool_timeout=10) as run:
        slept = []
        run.sleep = slept.append
        run.execute(), run.execute()  # user_request, then the first 529
        assert run.wait_left() > 0
        run.skip_wait()
        assert run.wait_left() == 0
        run.execute()
        assert slept == [] and run.trace.steps[-1].stage == "retry"
        assert run.trace.steps[-1].detail["attempt"] == 2


# -- max_tokens recovery ----------------------------------------------------------------------------------------

def test_long_answer_is_cut_twice_and_continued_without_repetition(shared):
    with start(scenario="long-answer", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        assert run.state.ended == "end_turn"
        recovers = [s for s in run.trace.steps if s.stage == "recover"]
        assert [s.detail["k"] for s in recovers] == [1, 2]
        assert all(s.transition_reason == "max_tokens_recovery" for s in recovers)
        calls = [s for s in run.trace.steps if s.stage == "call_model"]
        assert [c.detail["response"]["stop_reason"] for c in calls] == ["tool_use", "max_tokens", "max_tokens",
                                                                         "end_turn"]
        messages = run.state.messages
        assert [m["content"] for m in messages if m["role"] == "user"][2:] == [CONTINUE, CONTINUE]
        answer = "".join(b["text"] for m in messages[3:] if m["role"] == "assistant" for b in m["content"])
        whole = respond({"model": "m", "max_tokens": 100_000, "messages": messages[:3]})[1]["content"][0]["text"]
        assert answer == whole  # the three parts are the answer, nothing repeated or lost
        assert answer.count("turn 60:") == 1 and answer.count("turn 1:") == 1
        assert check(messages) == []


def test_a_recover_ends_its_turn_and_the_call_after_it_is_the_next_turn(shared):
    from loop.views.narrate import head

    with start(scenario="long-answer", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        steps = run.trace.steps
        calls = [s for s in steps if s.stage == "call_model"]
        assert [s.turn for s in calls] == [1, 2, 3, 4]  # each request to continue starts a turn of its own
        assert [s.turn for s in steps if s.stage == "recover"] == [2, 3]
        after = next(s for s in steps if s.stage == "call_model" and steps[s.index - 1].stage == "recover")
        assert head(run.trace, after.index).startswith(f"[{after.index + 1}] turn 3 · ")  # the line a user reads
        assert run.state.turn_count == 4

def test_the_minimal_loop_ends_on_max_tokens_as_the_chapter_says(shared):
    with start(scenario="long-answer", workspace=shared, tool_timeout=10, profile="minimal") as run:
        run.run_to_end()
        assert run.state.ended == "max_tokens" and "recover" not in stages(run)
        assert run.trace.steps[-1].detail["why"] == "the answer was cut at max_tokens; the loop ends, it does not go on"


def test_recovery_is_bounded_to_three_in_a_row(shared):
    """`max-tokens`'s answer needs more than four parts: the complete loop recovers three times, then ends."""
    with start(scenario="max-tokens", workspace=shared, tool_timeout=10, profile="complete") as run:
        run.run_to_end()
        assert [s.detail["k"] for s in run.trace.steps if s.stage == "recover"] == [1, 2, 3]
        assert run.state.ended == "max_tokens"
        last = run.trace.steps[-1]
        assert last.stage == "decide" and "3 times in a row" in last.detail["why"]
        assert run.state.recoveries == 3 and run.state.recoveries_in_a_row == 3


class Cutting:
    """A model whose answer is cut inside a tool_use block, then finishes."""

    def __init__(self):
        self.config = ModelConfig(model="cut", api_key="k")
        self.name = "cut"
        self.calls = 0

    def create(self, messages, tools, observer=None, **settings):
        from loop.engine.model import Reply

        self.calls += 1
        if self.calls == 1:
            content = [{"type": "text", "text": "Let me run"},
                       {"type": "tool_use", "id": "toolu_cut", "name": "bash", "input": {"command": "ls -"}}]
            response = {"content": content, "stop_reason": "max_tokens", "usage": {}}
        else:
            response = {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn", "usage": {}}
        return Reply(response=response, request={}, duration_ms=0.0)


def test_a_tool_use_cut_by_max_tokens_is_not_run_and_is_answered(shared):
    tools = default_toolbox(shared)
    with Run("t", Cutting(), tools, settings=Settings(profile="complete")) as run:
        run.run_to_end()
        assert "run_tool" not in stages(run) and run.state.ended == "end_turn"
        continuation = run.state.messages[2]
        assert [r["tool_use_id"] for r in tool_results(continuation)] == ["toolu_cut"]
        assert tool_results(continuation)[0]["is_error"] is True
        assert continuation["content"][-1] == {"type": "text", "text": CONTINUE}
        assert check(run.state.messages) == []


# -- compact, then resume ---------------------------------------------------------------------------------------

def test_big_context_is_refused_compacts_resumes_and_finishes(shared):
    with start(scenario="big-context", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        assert run.state.ended == "end_turn"
        steps = run.trace.steps
        refused = [s for s in steps if s.stage == "refused"]
        assert len(refused) == 1
        d = refused[0].detail
        assert d["tokens"] > d["maximum"] == 1800 and d["error"]["message"] == \
            f"prompt is too long: {d['tokens']} tokens > 1800 maximum"
        assert refused[0].transition_reason == "compact_resume"
        i = refused[0].index
        assert [s.stage for s in steps[i + 1:i + 4]] == ["summarize", "compact", "call_model"]
        assert steps[i + 2].detail["kind"] == "resume" and steps[i + 2].transition_reason == "compact_resume"
        assert steps[i + 2].n_messages == 1  # the summary in place of the history
        budget = [s for s in steps if s.stage == "summarize" and "budget" in s.detail["why"]]
        assert budget, "after learning the window, the loop compacts before a call whose estimate passes it"
        for k in range(len(steps)):  # every request that went out fits the window
            if steps[k].stage in ("call_model", "summarize"):
                assert steps[k].detail["response"]["usage"]["input_tokens"] <= 1800
        assert "falcon" in run.state.messages[-1]["content"][0]["text"]
        assert transcript.violations(run.trace) == []


def test_the_minimal_loop_is_refused_and_stops(shared):
    with start(scenario="big-context", workspace=shared, tool_timeout=10, profile="minimal") as run:
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            run.run_to_end()


def test_a_prompt_still_too_long_after_compaction_ends_the_loop(fake_api, shared):
    fake_api.fail(400, body=too_long(2099, 1800))
    fake_api.fail("pass")  # the summary call
    fake_api.fail(400, body=too_long(1950, 1800))  # refused again after the compaction
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run) == ["user_request", "refused", "summarize", "compact", "refused"]
        assert run.state.ended == "prompt_too_long" and "even after a compaction" in run.trace.steps[-1].detail["why"]


def test_a_summary_call_refused_as_too_long_ends_the_loop(fake_api, shared):
    fake_api.fail(400, body=too_long(2099, 1800))
    fake_api.fail(400, body=too_long(1900, 1800))  # the summary call itself
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run) == ["user_request", "refused", "refused"]
        assert run.trace.steps[-1].detail["stage"] == "summarize" and run.state.ended == "prompt_too_long"


def test_the_estimate_past_the_budget_compacts_before_the_call(shared):
    """A budget below the window: the loop compacts before every call that would pass it, and is never refused."""
    with start(scenario="big-context", workspace=shared, tool_timeout=10, budget=1300) as run:
        run.run_to_end()
        summaries = [s for s in run.trace.steps if s.stage == "summarize"]
        assert summaries and all(s.detail["kind"] == "resume" and "past the budget of 1300" in s.detail["why"]
                                 for s in summaries)
        assert "refused" not in stages(run) and run.state.ended == "end_turn"
        for i, step in enumerate(run.trace.steps):
            if step.stage == "call_model":  # every call went out under the budget
                assert run.sizer.estimate(run.trace.messages_at(i)) <= 1300


# -- parallel tools ---------------------------------------------------------------------------------------------

def ran_at_once(batch: dict) -> bool:
    """Were all the tools of this batch running at one moment: did each begin before any ended?"""
    return max(began for began, _ in batch["ran_ms"]) < min(ended for _, ended in batch["ran_ms"])


def test_the_slow_checks_wait_seconds_and_their_waits_are_scaled_in_tests(monkeypatch):
    assert checks() == (f"sleep {2 * SCALE:g} && ls /usr/bin | wc -l", f"sleep {1.5 * SCALE:g} && uname -sr",
                        f"sleep {SCALE:g} && date -u +%Y-%m-%d")
    monkeypatch.setenv(SCALE_VARIABLE, "1")  # as a learner's run has them
    assert checks() == ("sleep 2 && ls /usr/bin | wc -l", "sleep 1.5 && uname -sr", "sleep 1 && date -u +%Y-%m-%d")
    assert all(read_only(command) for command in checks())


def test_three_slow_reads_run_at_once_and_are_written_back_in_order(shared):
    with start(scenario="parallel", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        uses = tool_uses(run.trace.steps[1].detail["response"])
        assert [u["input"]["command"] for u in uses] == list(checks())
        back = next(s for s in run.trace.steps if s.stage == "write_back")
        written = run.trace.messages_at(back.index)[-1]
        assert [r["tool_use_id"] for r in tool_results(written)] == [u["id"] for u in uses]
        batch = back.detail["parallel"]
        durations = [s.detail["duration_ms"] for s in run.trace.steps if s.stage == "run_tool"]
        assert batch["tools"] == 3 and batch["sum_ms"] == pytest.approx(sum(durations), abs=1)
        assert len(batch["ran_ms"]) == 3 and ran_at_once(batch)  # the three ran at one moment, not one by one
        for (began, ended), duration in zip(batch["ran_ms"], durations):
            assert ended - began >= duration - 1  # each ran within its interval
        assert batch["wall_ms"] == pytest.approx(max(ended for _, ended in batch["ran_ms"]), abs=0.01)
        assert batch["wall_ms"] >= max(durations) - 1


def test_the_minimal_loop_runs_them_one_after_the_other(shared):
    with start(scenario="parallel", workspace=shared, tool_timeout=10, profile="minimal") as run:
        run.run_to_end()
        tools = [s for s in run.trace.steps if s.stage == "run_tool"]
        assert all("parallel" not in s.detail for s in tools)
        assert tools[-1].time - tools[0].time >= sum(s.detail["duration_ms"] for s in tools[1:]) / 1000 - 0.05


class Writes(Tool):
    name = "write_note"
    input_schema = {"type": "object"}

    def run(self, tool_input, workspace):
        return ToolOutput("written")


def test_a_response_with_one_unsafe_tool_runs_in_order():
    class Mixed(Cutting):
        def create(self, messages, tools, observer=None, **settings):
            from loop.engine.model import Reply

            self.calls += 1
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {"command": "ls"}}
                       for n, name in enumerate(["bash", "write_note", "bash"])] if self.calls == 1 else \
                [{"type": "text", "text": "ok"}]
            return Reply(response={"content": content, "stop_reason": "tool_use" if self.calls == 1 else "end_turn",
                                   "usage": {}}, request={}, duration_ms=0.0)

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        from loop.tools import Bash

        with Run("t", Mixed(), ToolBox([Bash(), Writes()], folder), settings=Settings(profile="complete")) as run:
            run.run_to_end()
            tools = [s for s in run.trace.steps if s.stage == "run_tool"]
            assert [s.detail["tool_use_id"] for s in tools] == ["toolu_0", "toolu_1", "toolu_2"]
            assert all("parallel" not in s.detail for s in tools)


@pytest.mark.parametrize("command, safe", [
    ("ls -la", True), ("sleep 1 && uname -sr", True), ("ls /usr/bin | wc -l", True), ("grep 'a;b' notes", True),
    ("find . -name '*.py'", True), ("cat a > b", False), ("rm -rf x", False), ("ls; rm x", False),
    ("find . -delete", False), ("sort -o out in", False), ("echo $HOME", False), ("sleep 9 &", False),
    ("ls && (rm x)", False), ("cat $(which python)", False), ("python3 -c 'print(1)'", False), ("", False),
])
def test_bash_is_safe_to_run_beside_others_only_for_read_only_commands(command, safe):
    assert read_only(command) is safe


def test_streamed_tools_start_before_the_answer_ends(shared):
    config = ModelConfig(stream=True)
    with start(scenario="parallel", workspace=shared, tool_timeout=10, config=config) as run:
        run.run_to_end()
        call = run.trace.steps[1]
        assert len(call.detail["early_start"]) == 3
        first = next(s for s in run.trace.steps if s.stage == "run_tool")
        early = first.detail["early"]
        assert early["started_before_end_ms"] > 0  # started while two blocks were still to come
        assert early["saved_ms"] == pytest.approx(min(early["started_before_end_ms"], first.detail["duration_ms"]))
        back = next(s for s in run.trace.steps if s.stage == "write_back")
        saved = [s.detail["early"]["saved_ms"] for s in run.trace.steps if s.stage == "run_tool"]
        assert back.detail["parallel"]["early_saved_ms"] == pytest.approx(sum(saved)) and saved[0] > 0
        assert ran_at_once(back.detail["parallel"])
        assert run.state.ended == "end_turn"


def test_with_the_approval_gate_on_no_tool_starts_before_its_step(shared):
    config = ModelConfig(stream=True)
    with start(scenario="parallel", workspace=shared, tool_timeout=10, config=config) as run:
        run.approval_gate(True)
        run.run_to_end()
        assert "early_start" not in run.trace.steps[1].detail
        assert all("parallel" not in s.detail for s in run.trace.steps if s.stage == "run_tool")


# -- the explicit state, and the profile kept --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["overloaded", "long-answer", "big-context", "parallel"])
def test_the_explicit_state_is_what_the_trace_says_at_every_step(name, shared):
    with start(scenario=name, workspace=shared, tool_timeout=10) as run:
        held = recorded(run)
        for i, state in enumerate(held):
            assert profiles.counters(run.trace, i) == state, f"step {i + 1}"
            rebuilt = state_at(run.trace, i)  # what a fork or a resumed run starts from
            assert {k: getattr(rebuilt, k) for k in state} == state
        assert run.trace.meta["profile"] == "complete"


def test_a_saved_run_of_the_complete_loop_loads_and_checks(shared, tmp_path):
    with start(scenario="big-context", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        path = tmp_path / "t.json"
        transcript.save(run.trace, path)
    loaded = transcript.load(path)
    assert [s.stage for s in loaded.steps] == stages(run)
    assert loaded.meta["profile"] == "complete" and loaded.meta["context_window"] == 1800
    for i, step in enumerate(loaded.steps):
        assert loaded.messages_at(i) == run.trace.messages_at(i)


def test_the_minimal_profile_writes_the_transcript_it_always_wrote(shared):
    with start(scenario="two-tools", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        assert "profile" not in run.trace.meta and "budget" not in run.trace.meta
        assert all(set(s.detail) <= {"request", "response", "duration_ms", "retries", "continues", "why",
                                     "tool_use_id", "name", "input", "output", "is_error", "tool_result",
                                     "given_by_user", "results", "task"} for s in run.trace.steps)


def test_an_unknown_profile_is_refused():
    with pytest.raises(KeyError):
        start(scenario="list-files", profile="fast")


# -- a real model over HTTP: the fake server answers as the API does ----------------------------------------------

def test_real_model_529_then_success(fake_api, shared):
    fake_api.fail(529, times=2, body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run)[:4] == ["user_request", "retry", "retry", "call_model"]
        assert run.state.ended == "end_turn"
        assert [h["x-stainless-retry-count"] for h in fake_api.headers[:3]] == ["0", "1", "2"]
        assert fake_api.requests[0] == fake_api.requests[2]  # the same request, sent again


def test_real_model_max_tokens_recovered_with_a_real_call(fake_api, shared):
    task = SCENARIOS["long-answer"].task
    with on_server(fake_api, task, workspace=shared, max_tokens=550) as run:
        run.run_to_end()
        assert stages(run).count("recover") == 2 and run.state.ended == "end_turn"
        continued = [r for r in fake_api.requests if r["messages"][-1]["content"] == CONTINUE]
        assert len(continued) == 2  # the continuation went to the server, as a request of its own
        assert tool_uses(fake_api.requests[1]["messages"][1])[0]["input"]["command"] == WRITE_LOG


def test_real_model_400_too_long_is_compacted_with_a_real_summary_call(fake_api, shared):
    fake_api.fail(400, body=too_long(2099, 1800))
    with on_server(fake_api, workspace=shared) as run:
        run.run_to_end()
        assert stages(run)[:5] == ["user_request", "refused", "summarize", "compact", "call_model"]
        summary_request = fake_api.requests[1]
        assert summary_request["messages"][0]["content"].startswith("Summarize this conversation")
        assert "tools" not in summary_request and "system" not in summary_request
        assert run.state.ended == "end_turn"


def test_real_model_context_window_refusal_over_http(shared):
    from tests.fake_server import FakeAnthropic

    with FakeAnthropic(context_window=1800) as fake:
        task = SCENARIOS["big-context"].task
        config = ModelConfig(model="claude-test", api_key="sk-test", base_url=fake.url)
        with start(task, config=config, profile="complete", toolset="s02", tool_timeout=10, workspace=shared) as run:
            run.run_to_end()
            assert "refused" in stages(run) and run.state.ended == "end_turn"


def test_a_model_object_without_the_sdk_is_not_retried(shared):
    """Only the loop's own model calls are wrapped: a plain Model keeps its SDK settings."""
    model = Model(ModelConfig())
    assert model.config.max_retries == 2
