"""Find in a long trace: the steps an error, a tool's name or a text finds, and the jumps between them."""

from loop.importers import import_bytes
from loop.views.find import ERRORS, TEXT, TOOL, Query, matches, next_match, place, previous_match, tool_names
from tests.synthetic import claude_code_log
from tests.test_import_claude_code import TASK, Log


def _trace():
    log = Log()
    log.history(TASK)
    return import_bytes(log.bytes(), "session.jsonl").trace


def test_errors_are_the_failed_tool_results_and_only_them():
    trace = _trace()
    found = matches(trace, Query(ERRORS))
    assert [(trace.steps[i].stage, trace.steps[i].detail["tool_use_id"]) for i in found] == [("run_tool", "toolu_2")]


def test_a_tool_is_found_by_its_name_whatever_its_case():
    trace = _trace()
    assert [trace.steps[i].detail["tool_use_id"] for i in matches(trace, Query(TOOL, "bash"))] == ["toolu_1", "toolu_2"]
    assert tool_names(trace) == ["Bash", "Read"]
    assert matches(trace, Query(TOOL, "Grep")) == []


def test_a_text_is_found_where_a_step_recorded_it_not_in_the_request_every_call_sends():
    trace = _trace()
    found = matches(trace, Query(TEXT, "NO SUCH FILE"))
    assert [trace.steps[i].stage for i in found] == ["run_tool"]
    said = matches(trace, Query(TEXT, "b is missing"))
    assert [trace.steps[i].stage for i in said] == ["call_model"]  # the answer the call received
    assert matches(trace, Query(TEXT, "  ")) == []


def test_next_and_previous_jump_over_the_steps_between_and_stop_at_the_ends():
    found = [3, 9, 20]
    assert next_match(found, -1) == 3 and next_match(found, 3) == 9 and next_match(found, 10) == 20
    assert next_match(found, 20) is None
    assert previous_match(found, 20) == 9 and previous_match(found, 4) == 3 and previous_match(found, 3) is None
    assert place(found, 9) == 2 and place(found, 10) is None


def test_a_query_is_answered_once_for_a_trace_and_again_when_it_grows():
    trace = _trace()
    first = matches(trace, Query(TEXT, "lines"))
    assert matches(trace, Query(TEXT, "lines")) is first  # kept: a cursor move searches nothing
    grown = import_bytes(_log_bytes_twice(), "s.jsonl").trace
    assert len(matches(grown, Query(TOOL, "Bash"))) == 4
    trace.add(grown.steps[-1])  # one more step: searched again
    assert matches(trace, Query(TEXT, "lines")) is not first


def _log_bytes_twice() -> bytes:
    log = Log()
    parent = log.history(TASK)
    log.history([{"role": "user", "content": "again"}, *TASK[1:]], parent)
    return log.bytes()


def test_a_long_session_is_searched_whole():
    trace = import_bytes(claude_code_log(1000), "long.jsonl").trace
    bash = matches(trace, Query(TOOL, tool_names(trace)[0]))
    assert bash and all(trace.steps[i].stage == "run_tool" for i in bash)
    assert bash == sorted(bash)


def test_a_call_the_api_refused_and_a_failed_call_retried_are_errors_too():
    from pathlib import Path

    from loop.files import transcript

    samples = Path(__file__).resolve().parent.parent / "samples"
    refused = transcript.load(samples / "big-context.json")
    assert [refused.steps[i].stage for i in matches(refused, Query(ERRORS))] == ["refused"]
    retried = transcript.load(samples / "overloaded.json")
    assert [retried.steps[i].stage for i in matches(retried, Query(ERRORS))] == ["retry"] * 3
