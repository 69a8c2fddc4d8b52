"""Predict, then step: the questions made from a trace, and `python -m loop quiz`.

Each answer is checked against what the trace shows (the steps after the question, the messages written, the
request sent), not against the rule that made it."""

import json
import re
from pathlib import Path

import pytest

from loop.engine.scenarios import SCENARIOS
from loop.files import transcript
from loop.importers import import_files, import_path
from loop.text.catalogs import say
from loop.views import questions as q
from loop.views.narrate import short
from loop.views.questions import KINDS, question_before, questions
from tests.cli import loop_cli, loop_main
from tests.synthetic import claude_code_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def sample(name: str, lang: str = "en"):
    return transcript.load(SAMPLES / f"{name}.json" if lang == "en" else SAMPLES / lang / f"{name}.json")


def blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def kinds_that_apply(trace) -> set[str]:
    """Which kinds of question a run calls for, read from what its steps did."""
    stages = [s.stage for s in trace.steps]
    applies = {"continues"} if "decide" in stages else set()
    if any(s.stage == "run_tool" and not s.detail.get("thread") for s in trace.steps):
        applies.add("tool_result_id")
    if "write_back" in stages:
        applies.add("write_back_role")
    write_backs = [s.thread for s in trace.steps if s.stage == "write_back"]
    if "recover" in stages or any(write_backs.count(t) > 1 for t in trace.threads):  # a thread's second turn
        applies.add("turn_count_after")
    after = {(trace.steps[p].stage, s.stage) for s in trace.steps if (p := trace.previous_in_thread(s.index)) is not None}
    if ("write_back", "call_model") in after:
        applies.add("next_request_has")
    if ("compact", "call_model") in after:
        applies.add("compaction_keeps")
    if any(trace.returned_at(t) is not None for t in trace.threads):
        applies.add("subagent_returns")
    return applies


# What each scenario asks, from the samples as they are today (the set above says why each kind is there).
EXPECTED = {
    "list-files": {"continues", "tool_result_id", "write_back_role", "next_request_has"},
    "two-tools": {"continues", "tool_result_id", "write_back_role", "next_request_has"},
    "max-tokens": {"continues", "tool_result_id", "write_back_role", "next_request_has"},
    "overloaded": {"continues", "tool_result_id", "write_back_role", "next_request_has"},
    "parallel": {"continues", "tool_result_id", "write_back_role", "next_request_has"},
    "hello-py": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after"},
    "recover": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after"},
    "long-answer": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after"},
    "subagent": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after",
                 "subagent_returns"},
    "compact": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after",
                "compaction_keeps"},
    "big-context": {"continues", "tool_result_id", "write_back_role", "next_request_has", "turn_count_after",
                    "compaction_keeps"},
}


def test_every_scenario_is_listed():
    assert set(EXPECTED) == set(SCENARIOS)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_gets_a_question_of_each_kind_that_applies(name):
    trace = sample(name)
    asked = {question.kind for question in questions(trace)}
    assert asked == kinds_that_apply(trace) == EXPECTED[name]


def chosen(question) -> str:
    return question.choices[question.answer]


def check_answer(trace, question) -> None:
    """The right choice is what the trace shows after the question."""
    i, step = question.step, trace.steps[question.step]
    own = trace.steps_of(step.thread)
    later = own[own.index(i) + 1:]
    right = chosen(question)
    if question.kind == "continues":
        if not later or trace.steps[later[0]].stage == "user_request":  # ended here (a session's next request follows)
            assert right == q.ENDS
        elif trace.steps[later[0]].stage == "recover":
            assert right == q.GOES_ON_CUT
        else:  # it ran the tools
            assert trace.steps[later[0]].stage == "run_tool" and right == q.GOES_ON_TOOLS
    elif question.kind == "tool_result_id":
        result_id = trace.results_at(i)[-1]["tool_use_id"]
        assert right == f"`{result_id}`"
        # the id the written-back message carries, answering the tool_use of the message before it
        written = trace.messages_at(next(k for k in later if trace.steps[k].stage == "write_back"))
        assert result_id in [b.get("tool_use_id") for b in blocks(written[-1])]
        assert result_id in [b.get("id") for b in blocks(written[-2]) if b.get("type") == "tool_use"]
    elif question.kind == "write_back_role":
        messages = trace.messages_at(i)
        assert len(messages) == trace.messages_at(own[own.index(i) - 1]).__len__() + 1
        assert blocks(messages[-1])[0]["type"] == "tool_result"
        assert right == f"a message with role `{messages[-1]['role']}`: messages[{len(messages) - 1}]"
        assert messages[-1]["role"] == "user"
    elif question.kind == "turn_count_after":
        after = step.turn_count
        if later:  # the state the next step starts from
            assert trace.steps[later[0]].turn_count == after
        assert right == f"`turn_count` = {after}"
        assert after == trace.steps[own[own.index(i) - 1]].turn_count + 1
    elif question.kind == "next_request_has":
        sent = trace.request_at(i)["messages"]
        assert sent[-1]["role"] == "user" and blocks(sent[-1])[0]["type"] == "tool_result"
        assert sent[-2]["role"] == "assistant" and any(b.get("type") == "tool_use" for b in blocks(sent[-2]))
        assert right == q.BOTH
    elif question.kind == "subagent_returns":
        back = trace.results_at(i)[-1]["content"]  # what the parent's tool_result holds
        back = back if isinstance(back, str) else "\n".join(b["text"] for b in back if b.get("type") == "text")
        assert right == f"only its final text: “{short(back, q.TEXT_WIDTH)}”"
        assert str(trace.steps[trace.steps_of(step.detail.thread)[-1]].stop_reason) != "tool_use"  # it had ended
    elif question.kind == "compaction_keeps":
        compact = trace.steps[trace.previous_in_thread(i)]
        sent = trace.request_at(i)["messages"]
        assert len(sent) == compact.detail.messages_after
        if compact.detail.kind == "micro":
            assert right == q.PLACEHOLDERS and sent != trace.history_before(compact.index)
        else:  # the summary is what is sent
            assert compact.detail.summary in "\n".join(b.get("text", "") for m in sent for b in blocks(m))
            assert right == f"the summary, in place of the {compact.detail.messages_before} messages before it"
    else:
        raise AssertionError(question.kind)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_answer_is_what_the_trace_shows(name):
    trace = sample(name)
    for question in questions(trace):
        check_answer(trace, question)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_choices_end_with_i_dont_know_and_the_right_one_moves(name):
    trace = sample(name)
    asked = questions(trace)
    for question in asked:
        assert question.kind in KINDS and question.stage == trace.steps[question.step].stage
        assert question.choices[-1] == "I don't know" and question.answer < len(question.choices) - 1
        assert 3 <= len(question.choices) <= 4 and len(set(question.choices)) == len(question.choices)
        assert question.thread == trace.steps[question.step].thread
        assert question.why
    assert len({question.answer for question in asked}) > 1  # not always the first
    assert questions(trace) == asked  # the same order on every run
    assert [question_before(trace, question.step) for question in asked] == asked


def test_the_wrong_choices_are_the_chapter_s_mistakes():
    trace = sample("list-files")
    by_kind = {question.kind: question for question in questions(trace)}
    assert "the result goes to the terminal only" in by_kind["write_back_role"].choices
    assert "a message with role `assistant`: messages[2]" in by_kind["write_back_role"].choices
    assert q.GOES_ON_CUT in by_kind["continues"].choices  # max_tokens taken as "go on"
    assert q.RESULTS_ONLY in by_kind["next_request_has"].choices  # the assistant response not appended
    assert "`toolu_0`" in by_kind["tool_result_id"].choices  # the loop's counter as the id
    subagent = next(x for x in questions(sample("subagent")) if x.kind == "subagent_returns")
    assert "the whole sub-agent history: all 6 messages of its `messages`" in subagent.choices


def test_inside_a_sub_agent_the_questions_are_its_own():
    trace = sample("subagent")
    (returns,) = [x for x in questions(trace) if x.kind == "subagent_returns"]
    sub = trace.steps[returns.step].detail.thread
    final = [m for m in trace.messages_at(trace.steps_of(sub)[-1]) if m["role"] == "assistant"][-1]
    text = "\n".join(b["text"] for b in blocks(final) if b.get("type") == "text")  # the sub-agent's final text
    assert chosen(returns) == f"only its final text: “{short(text, q.TEXT_WIDTH)}”"
    inside = [x for x in questions(trace) if x.thread != "main"]
    assert {x.kind for x in inside} >= {"continues", "tool_result_id", "write_back_role", "turn_count_after",
                                         "next_request_has"}


def test_an_imported_session_gets_questions_with_answers_from_its_trace():
    course = import_path(str(ROOT / "tests" / "data" / "course_s01_trace.json")).trace
    asked = questions(course)
    assert {x.kind for x in asked} == kinds_that_apply(course)
    for question in asked:
        check_answer(course, question)
    # a Claude Code session with sub-agents and compactions
    log, files = claude_code_session(records=400, compactions=2, agents=2)
    session = import_files([("session.jsonl", log), *files.items()]).trace
    asked = questions(session)
    assert {x.kind for x in asked} == kinds_that_apply(session) == set(KINDS)
    for question in asked:
        if question.kind not in ("write_back_role", "compaction_keeps"):  # an import's compaction is its own
            check_answer(session, question)


CODE = re.compile(r"`[^`]*`|“[^”]*”|「[^」]*」|messages\[\d+\]")
# The chapter's words that stay as they are in its Japanese and Chinese editions.
TERMS = {"loop", "tool", "tools", "tool_use", "tool_result", "tool_results", "tool_use_id", "model", "message",
         "messages", "response", "assistant", "user", "stop_reason", "turn_count", "step", "write-back", "sub-agent",
         "compact", "context", "turn", "system", "prompt", "end_turn", "max_tokens", "refusal", "transition_reason",
         "None", "task", "role", "trace", "micro-compact", "auto-compact", "id", "block",
         "append", "history", "harness", "terminal", "max_tokens_recovery"}


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_japanese_and_chinese_questions_have_no_untranslated_english(lang):
    for name in SCENARIOS:
        trace = sample(name, lang)
        english = {x.step: x for x in questions(trace, "en")}
        for question in questions(trace, lang):
            assert question.question != english[question.step].question
            for text in (question.question, *question.choices, question.why):
                words = set(re.findall(r"[A-Za-z][A-Za-z_\-]*", CODE.sub("", text)))
                assert words <= TERMS, (name, question.kind, text, words - TERMS)
            assert question.choices[-1] == say(lang, "I don't know") != "I don't know"


def test_quiz_prints_one_json_line_a_question():
    done = loop_main(["quiz", "samples/subagent.json"], ["quiz", "samples/ja/recover.json"],
                     ["quiz", "samples/recover.json", "--lang", "zh"])
    for result, count in zip(done, (len(questions(sample("subagent"))), len(questions(sample("recover"))),
                                    len(questions(sample("recover"))))):
        assert result.returncode == 0, result.stderr
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(lines) == count
        assert all(list(line) == ["step", "kind", "question", "choices", "answer", "why", "wrong"] for line in lines)
    first = json.loads(done[0].stdout.splitlines()[0])
    assert first == questions(sample("subagent"))[0].to_json()
    assert "わからない" in done[1].stdout and "不知道" in done[2].stdout  # a run's own language, or --lang


def test_quiz_refuses_a_broken_file(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    missing = tmp_path / "missing.json"
    for result in loop_main(["quiz", broken], ["quiz", missing]):
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


def test_the_real_command_prints_the_questions():
    (done,) = loop_cli(["quiz", "samples/list-files.json"])
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["kind"] for line in done.stdout.splitlines()] == [
        "continues", "tool_result_id", "write_back_role", "next_request_has", "continues"]


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_each_wrong_choice_says_why_it_is_wrong_in_the_questions_language(lang):
    for name in SCENARIOS:
        trace = sample(name, lang)
        for question in questions(trace, lang):
            assert len(question.wrong) == len(question.choices)
            assert question.why_wrong(question.answer) == "" and question.why_wrong(len(question.choices) - 1) == ""
            for n in range(len(question.choices) - 1):
                if n != question.answer:
                    assert question.why_wrong(n), (name, question.kind, question.choices[n])
                    if lang != "en":
                        english = question_before(trace, question.step, "en")
                        assert question.why_wrong(n) != english.why_wrong(n), (name, question.kind)
    asked = next(x for x in questions(sample("list-files"), lang) if x.kind == "tool_result_id")
    message = next(n for n, c in enumerate(asked.choices) if c.startswith("`msg_"))
    counter = asked.choices.index("`toolu_0`")
    if lang == "en":  # the message's id is the response's, not the block's; the counter is the loop's own
        assert asked.why_wrong(message).startswith(asked.choices[message] + " is the response's id")
        assert "tool_use_id=block.id" in asked.why_wrong(counter)


def test_a_japanese_question_says_step_as_the_interface_does():
    for name in SCENARIOS:
        for question in questions(sample(name, "ja"), "ja"):
            for text in (question.question, *question.choices, *question.wrong):
                assert not re.search(r"(?<![_\w])step(?![_\w])", CODE.sub("", text)), (name, text)


# Right answers no sample reaches (every sample's loop is correct): the broken loops of Break it here reach them.
BROKEN_ANSWERS = [  # (mistake, broken at step, the kind asked after it, the right answer)
    ("results-as-assistant", 5, "write_back_role", "a message with role `assistant`: messages[2]"),
    ("no-write-back", 5, "next_request_has", q.RESPONSE_ONLY),
    ("no-assistant-append", 2, "next_request_has", q.RESULTS_ONLY),
    ("text-first", 5, "next_request_has", q.BOTH),
]


@pytest.mark.parametrize("mistake, at, kind, right", BROKEN_ANSWERS, ids=[b[0] for b in BROKEN_ANSWERS])
def test_question_right_answer_is_what_a_broken_loop_did_where_no_sample_goes(mistake, at, kind, right):
    from loop.engine.broken import break_at

    broken = break_at(sample("list-files"), at, mistake)
    broken.run.close()
    [question] = [x for x in questions(broken.trace) if x.step > broken.kept and x.kind == kind]
    assert chosen(question) == right
    if kind == "next_request_has":  # asked before the call the API refuses: what the broken loop sent
        assert question.stage == "refused"
        sent = broken.trace.request_at(question.step)["messages"]
        assert (sent[-1]["role"], sent[-2]["role"] if len(sent) > 1 else None) == {
            q.RESPONSE_ONLY: ("assistant", "user"), q.RESULTS_ONLY: ("user", "user"),
            q.BOTH: ("user", "assistant")}[right]
    else:
        assert broken.trace.messages_at(question.step)[-1]["role"] == "assistant"
    if right != q.BOTH and q.BOTH in question.choices:  # the correct loop's answer, wrong in this loop: said why
        assert "broken on purpose" in question.why_wrong(question.choices.index(q.BOTH))
