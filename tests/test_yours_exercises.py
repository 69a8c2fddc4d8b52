"""The three exercises of Your loop: each passes only with a loop that does what its closing statement says,
fails with its starter and with wrong loops that look right, and says why in the page's language."""

from __future__ import annotations

import dataclasses

import pytest

from loop.engine.mistakes import MISTAKES, NO_ASSISTANT_APPEND
from loop.text.catalogs import say
from loop.yours.exercises import EXERCISES, WITH_IS_ERROR, run_exercise
from loop.yours.named import named
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.recording import Recording
from tests.learner import record

RUN, APPEND, WRITE_BACK = EXERCISES["run-the-tools"], EXERCISES["append-the-response"], EXERCISES["write-back"]
IS_ERROR = EXERCISES["is-error"]
RUN_LINE = CHAPTER_LOOP.splitlines().index("                output = run_tool(block)") + 1


def edited(source: str, *changes: tuple[str, str]) -> str:
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


FOR_EACH_TOOL_USE = '''        for block in response.content:
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": output,
                })
'''
ASSISTANT_APPEND = '''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
'''
USER_WRITE_BACK = '''        state["messages"].append({
            "role": "user",
            "content": results,
        })
'''

# Loops that look right at a glance, each wrong in what it sends. (exercise, label): (source, what `why` names)
WRONG = {
    # 1: a tool_use is only a wish until the loop runs it
    (RUN.name, "calls the model twice, runs no tool"): ('''\
def agent_loop(state):
    for _ in range(2):
        response = client.messages.create(
            model=MODEL, system=SYSTEM, messages=state["messages"], tools=TOOLS, max_tokens=8000,
        )
        state["messages"].append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
''', "nothing ran it"),
    (RUN.name, "runs only the first tool_use"): (edited(CHAPTER_LOOP, (FOR_EACH_TOOL_USE, '''\
        block = next(b for b in response.content if b.type == "tool_use")
        output = run_tool(block)
        results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
''')), "ran 1 of them"),
    (RUN.name, "runs the tools of one turn, then returns"): (
        edited(CHAPTER_LOOP, ("    while True:", "    for turn in range(1):")), "never read their results"),
    (RUN.name, "takes a text before the tool_use for the answer"): (
        edited(CHAPTER_LOOP, ('if response.stop_reason != "tool_use":',
                              'if response.stop_reason != "tool_use" or response.content[0].type == "text":')),
        "nothing ran it"),
    # 2: the response goes into messages before the tools run
    (APPEND.name, "appends only the text blocks"): (
        edited(CHAPTER_LOOP, ('"content": response.content,',
                              '"content": [b for b in response.content if b.type == "text"],')),
        "only the text"),
    (APPEND.name, "appends the response after the results"): (
        edited(CHAPTER_LOOP, (ASSISTANT_APPEND, ""), (USER_WRITE_BACK, USER_WRITE_BACK + ASSISTANT_APPEND)),
        "comes after its tool_results"),
    (APPEND.name, "appends the response only when the loop ends"): (
        edited(CHAPTER_LOOP, (ASSISTANT_APPEND, ""), ('            state["transition_reason"] = None\n',
                                                      ASSISTANT_APPEND.replace("        ", "            ")
                                                      + '            state["transition_reason"] = None\n')),
        "does not hold call 1's response"),
    # 3: a tool_result is the next turn's input
    (WRITE_BACK.name, "writes back only the last result"): (
        edited(WITH_IS_ERROR, ("                results.append({", "                results = [{"),
               ('                    "is_error": output.is_error,\n                })',
                '                    "is_error": output.is_error,\n                }]')),
        "does not carry the tool_result of"),
    (WRITE_BACK.name, "prints the results"): (
        edited(WITH_IS_ERROR, (USER_WRITE_BACK, "        print(results)\n")), "not a terminal log"),
    (WRITE_BACK.name, "writes the results as assistant"): (
        edited(WITH_IS_ERROR, ('            "role": "user",\n            "content": results,',
                               '            "role": "assistant",\n            "content": results,')),
        "assistant message"),
    # beyond the chapter: a failed command's tool_result says so
    (IS_ERROR.name, "the chapter's listing: no is_error"): (CHAPTER_LOOP, "without \"is_error\": true"),
    (IS_ERROR.name, "marks every result as an error"): (
        edited(WITH_IS_ERROR, ('"is_error": output.is_error,', '"is_error": True,')), "succeeded"),
    (IS_ERROR.name, "prints the results"): (
        edited(WITH_IS_ERROR, (USER_WRITE_BACK, "        print(results)\n")), "not a terminal log"),
}


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_each_exercise_passes_with_its_answer_and_says_so_in_every_language(exercise):
    chosen = EXERCISES[exercise]
    verdict = run_exercise(chosen, chosen.answer, "ja", record)
    assert verdict.passed, verdict.why
    assert verdict.call is None and verdict.why.startswith("合格")
    assert all(s in verdict.why for s in chosen.scenarios)
    assert verdict.note.render("zh").startswith("通过") and verdict.note.render("en").startswith("Passed")


@pytest.mark.parametrize("exercise", ["run-the-tools", "append-the-response", "write-back"])
def test_the_chapters_listing_passes_each_statements_exercise(exercise):
    assert EXERCISES[exercise].answer == CHAPTER_LOOP
    assert run_exercise(EXERCISES[exercise], CHAPTER_LOOP, "en", record).passed


def test_exercise_3_passes_with_the_chapters_own_write_back_at_its_one_todo():
    starter = WRITE_BACK.starter("en")
    assert starter.count("# TODO") == 1 and "is_error" not in starter  # the write-back, and nothing else
    todo = f"        # TODO: {WRITE_BACK.todo}\n"
    assert todo in starter and "is_error" not in " ".join((WRITE_BACK.goal, WRITE_BACK.hint, WRITE_BACK.todo))
    mine = starter.replace(todo, '        state["messages"].append({"role": "user", "content": results})\n')
    verdict = run_exercise(WRITE_BACK, mine, "en", record)
    assert verdict.passed, verdict.why


def test_is_error_is_an_exercise_of_its_own_after_the_third_that_says_it_goes_beyond_the_chapter():
    assert list(EXERCISES) == ["run-the-tools", "append-the-response", "write-back", "is-error"]
    assert IS_ERROR.statement is None and IS_ERROR.label("en") == "Beyond the chapter: " + IS_ERROR.title
    assert IS_ERROR.goal.startswith("This goes beyond the chapter")
    assert IS_ERROR.label("ja") != IS_ERROR.label("en") != IS_ERROR.label("zh")
    starter = IS_ERROR.starter("en")
    assert starter.count("# TODO") == 1 and starter.replace(f"                    # TODO: {IS_ERROR.todo}\n",
                                                              "") == CHAPTER_LOOP


def test_beyond_the_chapter_the_check_looks_on_recover_that_the_failed_commands_is_error_goes_back():
    # The chapter's listing writes the output back but not is_error: the model reads the failure as output.
    verdict = run_exercise(IS_ERROR, CHAPTER_LOOP, "en", record)
    assert not verdict.passed and verdict.scenario == "recover" and verdict.call == 1
    assert "`wc -l notes.txt` failed" in verdict.why
    # The answer's next request carries that failed run's tool_result, with is_error, as the tool box ran it.
    right = record(IS_ERROR.answer, "recover")
    (failed,) = [r for r in right.exchanges[0].tool_runs if r.is_error]
    sent = right.exchanges[1].request["messages"][-1]
    assert sent["role"] == "user"
    assert sent["content"] == [{"type": "tool_result", "tool_use_id": failed.tool_use_id, "content": failed.output,
                                "is_error": True}]
    assert "recover" in IS_ERROR.scenarios


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_each_starter_misses_one_piece_marked_in_the_pages_language_and_fails(exercise):
    chosen = EXERCISES[exercise]
    todo = {"en": "# TODO: run each", "ja": "# TODO: tool_use block", "zh": "# TODO: 用 run_tool"}
    for lang in ("en", "ja", "zh"):
        starter = chosen.starter(lang)
        compile(starter, "your_loop.py", "exec")
        assert starter.count("# TODO: ") == 1 and (chosen.missing in starter) == chosen.added
        assert starter.replace(starter.split("# TODO: ")[1].split("\n")[0], "") != CHAPTER_LOOP
    assert chosen.starter("ja") != chosen.starter("en") != chosen.starter("zh")
    if exercise == "run-the-tools":
        assert all(todo[lang] in chosen.starter(lang) for lang in todo)
    verdict = run_exercise(chosen, chosen.starter("ja"), "ja", record)
    assert not verdict.passed and verdict.call is not None and f"呼び出し {verdict.call + 1}" in verdict.why
    assert {chosen.title, chosen.goal, chosen.hint} and chosen.statement in (1, 2, 3, None)


def checked(exercise, source: str, lang: str = "en"):
    """The verdict of `exercise` on `source`, and the recordings it read (as the page keeps them, to draw below)."""
    runs = {}

    def runner(text, scenario, language, **limits):
        runs[scenario] = record(text, scenario, language, **limits)
        return runs[scenario]

    return run_exercise(exercise, source, lang, runner), runs


@pytest.mark.parametrize("case", sorted(WRONG), ids=lambda c: f"{c[0]}: {c[1]}")
def test_a_wrong_loop_that_looks_right_fails_and_the_why_names_what_went_wrong(case):
    exercise, _ = case
    source, words = WRONG[case]
    compile(source, "your_loop.py", "exec")
    verdict, runs = checked(EXERCISES[exercise], source)
    assert not verdict.passed
    assert verdict.scenario in EXERCISES[exercise].scenarios
    # One failure, one name: when the run drawn below it names one of the seven mistakes at that call, the check
    # says that name first (the mistake's title), then what it saw
    box = named(runs[verdict.scenario])
    title = MISTAKES[box.name].title if box is not None and box.is_mistake and box.call == verdict.call else None
    assert words in verdict.why
    assert verdict.why.startswith(f"{title}: call {verdict.call + 1}:" if title else f"call {verdict.call + 1}:")
    for lang, call in (("ja", "呼び出し"), ("zh", "调用")):
        said = verdict.note.render(lang)
        assert f"{call} {verdict.call + 1}" in said and said != verdict.why
        assert said.startswith(say(lang, title)) if title else said.startswith(call)


def test_a_loop_that_drops_the_tool_use_blocks_is_named_by_check_as_the_run_box_names_it():
    source = WRONG[(APPEND.name, "appends only the text blocks")][0]
    verdict, runs = checked(APPEND, source)
    box = named(runs[verdict.scenario])
    assert box.name == NO_ASSISTANT_APPEND and box.call == verdict.call
    title = MISTAKES[NO_ASSISTANT_APPEND].title  # "Not appending the assistant response to messages"
    assert verdict.why.startswith(f"{title}: call 2: ") and "tool_use blocks were dropped" in verdict.why


def test_each_check_looks_at_its_own_statement():
    # A loop that marks every result is_error keeps the chapter's three statements: only the is_error exercise fails
    # it. One that prints its results fails the first too (its next call is refused), but the third says why in
    # its own words.
    flagged = WRONG[(IS_ERROR.name, "marks every result as an error")][0]
    assert all(run_exercise(e, flagged, "en", record).passed for e in (RUN, APPEND, WRITE_BACK))
    printed = WRONG[(WRITE_BACK.name, "prints the results")][0]
    first = run_exercise(RUN, printed, "en", record)
    assert not first.passed and "not a terminal log" not in first.why


def test_a_loop_written_otherwise_that_sends_the_right_thing_passes_all_three():
    source = '''\
def agent_loop(messages):
    while True:
        response = client.messages.create(model=MODEL, system=SYSTEM, messages=messages, tools=TOOLS,
                                          max_tokens=8000)
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return
        results = []
        for block in response.content:
            if block.type != "tool_use":
                continue
            output = run_bash(block.input["command"])
            result = {"type": "tool_result", "tool_use_id": block.id, "content": output}
            if output.is_error:
                result["is_error"] = True
            results.append(result)
        messages.append({"role": "user", "content": results})
'''
    for exercise in EXERCISES.values():
        verdict = run_exercise(exercise, source, "en", record)
        assert verdict.passed, (exercise.name, verdict.why)


def test_the_check_reads_what_was_sent_never_the_source():
    dropped = [record(CHAPTER_LOOP, s) for s in IS_ERROR.scenarios]
    dressed = [dataclasses.replace(r, source=IS_ERROR.answer) for r in dropped]
    assert not IS_ERROR.check(dressed).passed
    kept = [record(IS_ERROR.answer, s) for s in IS_ERROR.scenarios]
    assert IS_ERROR.check([dataclasses.replace(r, source="") for r in kept]).passed


def test_run_exercise_runs_the_exercises_own_scenarios_with_the_runner_given():
    asked = []

    def runner(source: str, scenario: str, lang: str, *, max_calls: int) -> Recording:
        asked.append((scenario, lang, max_calls))
        return record(source, scenario, lang, max_calls=max_calls)

    assert run_exercise(APPEND, CHAPTER_LOOP, "zh", runner).passed
    assert asked == [(s, "zh", 50) for s in APPEND.scenarios]


def test_a_syntax_error_or_an_exception_fails_with_the_learners_line():
    broken = run_exercise(RUN, CHAPTER_LOOP.replace("while True:", "while True"), "en", record)
    assert not broken.passed and "line 2" in broken.why and broken.call is None
    raised = run_exercise(RUN, CHAPTER_LOOP.replace("output = run_tool(block)", "output = run_tool(blok)"), "en",
                          record)
    assert not raised.passed and "NameError" in raised.why and f"line {RUN_LINE}" in raised.why


def test_a_check_runs_its_scenarios_at_once_and_says_them_in_the_exercises_order():
    import threading

    both = threading.Barrier(len(WRITE_BACK.scenarios), timeout=60)  # broken if the runs come one after another
    finished = []

    def runner(source, scenario, lang, **limits):
        both.wait()
        if scenario == WRITE_BACK.scenarios[0]:
            both.wait()  # the first scenario's run ends last
        finished.append(scenario)
        if scenario != WRITE_BACK.scenarios[0]:
            both.wait()
        return record(source, scenario, lang, **limits)

    verdict = run_exercise(WRITE_BACK, WRITE_BACK.starter(), "en", runner)
    assert finished == list(reversed(WRITE_BACK.scenarios))
    assert not verdict.passed and verdict.scenario == WRITE_BACK.scenarios[0] == "recover"
