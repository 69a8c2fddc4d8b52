"""Messages the agent's harness put into the history are the harness's: a step of their own, never a model call.

A course trace (s08 and later) holds, between two recorded cycles, a user message with background results and an
assistant acknowledgement that no cycle recorded. The trace here is shaped as the course's recorder writes them
(agents/capture_trace.py of shareAI-lab/learn-claude-code: one cycle a call, each request the whole history).
"""

import json

from loop.files import transcript
from loop.importers import import_bytes
from loop.views.diagram import svg_at
from loop.views.narrate import describe
from loop.views.step import view
from tests.cli import loop_main

PROMPT = "Run the tests in the background, then list the files"
BACKGROUND = "<background-results>\n[bg:a1b2c3d4] completed: 12 passed\n</background-results>"
NOTED = "Noted background results."


def _use(id_: str, name: str, **input_) -> dict:
    return {"type": "tool_use", "id": id_, "name": name, "input": input_}


def _results(id_: str, output: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id_, "content": output}]}


def _cycle(n: int, messages: list, content: list, stop: str, executions: list) -> dict:
    return {"cycle": n, "elapsed_ms": 900 + n,
            "request": {"model": "claude-sonnet-4-5", "system": "You are a coding agent.", "messages": messages,
                        "tools": [{"name": "bash"}, {"name": "background_run"}], "max_tokens": 8000},
            "response": {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "stop_reason": stop, "content": content, "usage": {"input_tokens": 100 * n,
                                                                            "output_tokens": 10 * n}},
            "tool_executions": executions}


def s08_trace() -> dict:
    """Three recorded cycles; the harness put the background results and its "Noted" between the last two."""
    first = [{"type": "text", "text": "Starting the tests."}, _use("toolu_1", "background_run", command="pytest")]
    second = [_use("toolu_2", "bash", command="ls")]
    third = [{"type": "text", "text": "The tests passed (12) and the files are listed."}]
    h0 = [{"role": "user", "content": PROMPT}]
    h1 = h0 + [{"role": "assistant", "content": first}, _results("toolu_1", "Background task a1b2c3d4 started")]
    h2 = h1 + [{"role": "assistant", "content": second}, _results("toolu_2", "README.md\ntests")]
    h3 = h2 + [{"role": "user", "content": BACKGROUND}, {"role": "assistant", "content": NOTED}]
    cycles = [
        _cycle(1, h0, first, "tool_use", [{"name": "background_run", "input": {"command": "pytest"},
                                           "output": "Background task a1b2c3d4 started"}]),
        _cycle(2, h1, second, "tool_use", [{"name": "bash", "input": {"command": "ls"}, "output": "README.md\ntests"}]),
        _cycle(3, h3, third, "end_turn", []),
    ]
    return {"version": "s08", "prompt": PROMPT, "model": "claude-sonnet-4-5", "total_cycles": 3,
            "total_input_tokens": 600, "total_output_tokens": 60, "cycles": cycles}


def test_messages_between_two_recorded_cycles_are_the_harness_s_not_a_model_call():
    trace = import_bytes(json.dumps(s08_trace()).encode(), "s08.json").trace
    stages = [s.stage for s in trace.steps]
    calls = [s for s in trace.steps if s.stage == "call_model"]
    assert [s.detail.cycle for s in calls] == [1, 2, 3]  # one call a recorded cycle, none more
    assert all(s.detail.recorded and not s.detail.stop_reason_inferred for s in calls)
    harness = [s for s in trace.steps if s.stage == "harness"]
    # at the step each enters the history, in its order, right before the call that sent them
    assert [(s.detail.role, s.n_messages) for s in harness] == [("user", 6), ("assistant", 7)]
    assert stages[stages.index("harness"):stages.index("harness") + 3] == ["harness", "harness", "call_model"]
    # the loop does not end before the last call: only the last decide ends it
    assert [s.index for s in trace.steps if s.stage == "decide" and s.ended] == [len(trace.steps) - 1]
    assert all(s.ended is None and s.turn_count == 3 for s in harness)
    assert trace.messages[5]["content"] == BACKGROUND and trace.messages[6]["content"] == NOTED


def test_the_harness_step_is_narrated_and_drawn_in_every_language():
    trace = import_bytes(json.dumps(s08_trace()).encode(), "s08.json").trace
    i = next(s.index for s in trace.steps if s.stage == "harness" and s.detail.role == "assistant")
    line = describe(trace, i, "en")
    assert "the harness added a message (no model call)" in line
    assert "messages ← assistant, added by the harness (7 messages): Noted background results." in line
    assert "no recorded call produced it" in line
    for lang, words in (("ja", "model の呼び出しなし"), ("zh", "没有调用模型")):
        said = describe(trace, i, lang)
        assert "Noted background results." in said and words in said and "added by" not in said
        shown = view(trace, i, lang)  # what the page draws: the stage's title in the learner's language
        assert shown.stage == "harness" and words in shown.stage_title
    # the diagram lights no stage of the loop for it; it lights the call that follows
    assert "lit" not in svg_at(trace, i) and "lit" in svg_at(trace, i + 1)


def test_check_counts_only_the_recorded_calls_as_requests(tmp_path):
    imported = tmp_path / "s08.json"
    out = tmp_path / "s08-transcript.json"
    imported.write_text(json.dumps(s08_trace()))
    (done,) = loop_main(["import", imported, "--out", out], env=None)
    assert done.returncode == 0, done.stderr
    (checked,) = loop_main(["check", out], env=None)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "so do the 3 request(s) sent" in checked.stdout


def test_a_transcript_with_harness_steps_saves_and_loads_as_it_was():
    trace = import_bytes(json.dumps(s08_trace()).encode(), "s08.json").trace
    again = transcript.loads(transcript.dumps(trace))
    assert [(s.stage, s.n_messages, s.detail.to_dict()) for s in again.steps] == \
        [(s.stage, s.n_messages, s.detail.to_dict()) for s in trace.steps]
    assert again.messages_at(next(s.index for s in again.steps if s.stage == "harness"))[-1]["content"] == BACKGROUND


def test_the_replay_page_draws_the_harness_s_step():
    from tests.apptest import app
    from tests.tables import diagram_svg, html_bodies

    at = app("pages/replay.py")
    at.file_uploader(key="replay-upload").set_value(("s08.json", json.dumps(s08_trace()).encode(),
                                                     "application/json")).run()
    assert not at.exception, at.exception
    trace = at.session_state["replay"]["trace"]
    trace.goto(next(s.index for s in trace.steps if s.stage == "harness"))
    at.run()
    assert not at.exception, at.exception
    shown = " ".join(str(e.value) for e in [*at.markdown, *at.caption, *at.info, *at.subheader, *at.header])
    assert "the harness added a message (no model call)" in shown
    said = next(body for body in html_bodies(at) if 'class="ls-said"' in body)
    assert "added by the harness" in said and "no recorded call produced it" in said
    assert "lit" not in diagram_svg(at)  # no stage of the loop made it
