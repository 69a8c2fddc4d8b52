"""Your loop names a broken rule at the line of the learner's code that made the message the rule is about (the
write-back, the results appended as "assistant", the wrong tool_use_id, the early `return`), watched inside their
process, with the fix sentence; and when that line cannot be known, it says which message it was and shows the
call's line. A line their program tells is theirs: one that is not a line of their files is not shown."""

from __future__ import annotations

import pytest

from loop.engine import chat
from loop.engine.mistakes import MISTAKES
from loop.text.catalogs import say
from loop.yours import lines
from loop.yours.lines import AFTER, MADE, RETURNED, UNKNOWN, UNKNOWN_RETURN, checked_made, checked_place, code_at
from loop.yours.named import named
from loop.yours.recording import Exchange, Recording
from tests.learner import record
from tests.test_yours_cli import SCENARIO, WRONG
from tests.test_yours_learners import S01

LANGS = ("en", "ja", "zh")


def line_of(source: str, text: str, nth: int = 0) -> int:
    """The number of the `nth` line of `source` that reads `text` (stripped)."""
    found = [n for n, line in enumerate(source.splitlines(), start=1) if line.strip() == text]
    return found[nth]


# Where each mistake of the chapter's listing (tests/test_yours_reading.py's loops) is named: the line's text (the
# how-manieth line reading so), how it is known, the message of the refused request (from 1) and the call
LISTING_MADE = {
    "no-loop": ("return", 0, RETURNED, None, 1),
    "no-assistant-append": ('state["messages"].append({', 0, MADE, 2, 2),  # the write-back of results nothing asked
    "no-write-back": ('state["messages"].append({', 0, AFTER, 2, 2),  # the tool_use appended, nothing after it
    "wrong-id": ('"tool_use_id": f"toolu_{len(results)}",', 0, MADE, 3, 2),
    "text-first": ('"content": [{"type": "text", "text": "Results:"}] + results,', 0, MADE, 3, 2),
    "results-as-assistant": ('"role": "assistant",', 1, MADE, 3, 2),
    "max-tokens-go-on": ('state["messages"].append({', 1, MADE, 5, 3),  # the empty write-back after a cut answer
}


def s01_with(old: str, new: str) -> str:
    assert S01.count(old) == 1, old
    return S01.replace(old, new)


# A whole s01-shaped file (its own client, run_bash and input() REPL), each with one mistake, looking right at a glance
S01_WRONG = {
    "no-loop": s01_with('if response.stop_reason != "tool_use":', 'if response.stop_reason == "tool_use":'),
    "no-assistant-append": s01_with('        messages.append({"role": "assistant", "content": response.content})',
                                    '        answer = {"role": "assistant", "content": response.content}'),
    "no-write-back": s01_with('        messages.append({"role": "user", "content": results})',
                              '        print(results)'),
    "wrong-id": s01_with('"tool_use_id": block.id', '"tool_use_id": response.id'),
    "text-first": s01_with('messages.append({"role": "user", "content": results})',
                           'messages.append({"role": "user", "content": [{"type": "text", "text": "Done:"}] + results})'),
    # its max_tokens written small, so that the max-tokens scenario's answer is cut
    "max-tokens-go-on": s01_with('if response.stop_reason != "tool_use":',
                                 'if response.stop_reason not in ("tool_use", "max_tokens"):').replace(
        "max_tokens=8000", "max_tokens=100"),
    "results-as-assistant": s01_with('messages.append({"role": "user", "content": results})',
                                     'messages.append({"role": "assistant", "content": results})'),
}
S01_MADE = {
    "no-loop": ("return", 0, RETURNED, None, 1),
    "no-assistant-append": ('messages.append({"role": "user", "content": results})', 0, MADE, 2, 2),
    "no-write-back": ('messages.append({"role": "assistant", "content": response.content})', 0, AFTER, 2, 2),
    "wrong-id": ('results.append({"type": "tool_result", "tool_use_id": response.id, "content": output})', 0, MADE,
                 3, 2),
    "text-first": ('messages.append({"role": "user", "content": [{"type": "text", "text": "Done:"}] + results})', 0,
                   MADE, 3, 2),
    "max-tokens-go-on": ('messages.append({"role": "user", "content": results})', 0, MADE, 5, 3),
    "results-as-assistant": ('messages.append({"role": "assistant", "content": results})', 0, MADE, 3, 2),
}
SHAPES = {"listing": (WRONG, LISTING_MADE), "s01": (S01_WRONG, S01_MADE)}


def expected(source: str, where: tuple) -> tuple[str, int, int | None, int]:
    text, nth, how, message, call = where
    return how, line_of(source, text, nth), message, call


def said_at(recording: Recording, lang: str) -> str:
    """The sentence naming the line, as the command line says it in `lang`."""
    made = named(recording).made
    return say(lang, made.words(), **made.values(), code=code_at(recording, made.file, made.line))


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_of_the_listing_is_named_at_the_line_that_made_the_wrong_message_in_every_language(mistake):
    source = WRONG[mistake]
    recording = record(source, SCENARIO.get(mistake, "list-files"))
    found = named(recording)
    assert found.name == mistake
    how, line, message, call = expected(source, LISTING_MADE[mistake])
    made = found.made
    assert (made.how, made.line, made.message, made.call, made.file) == (how, line, message, call, None)
    assert found.line == line and found.file is None  # the editor's mark and the page's line are this one
    calls = [e.line for e in recording.exchanges]
    assert line not in calls  # never the line of the call
    text = source.splitlines()[line - 1].strip()
    for lang in LANGS:
        sentence = said_at(recording, lang)
        assert text in sentence and str(line) in sentence
        assert lang == "en" or say(lang, MISTAKES[mistake].fix) != MISTAKES[mistake].fix  # the fix, translated
    assert len({said_at(recording, lang) for lang in LANGS}) == 3  # said in each language, not in English thrice
    assert said_at(recording, "en").startswith("your line" if how != UNKNOWN else "the line")


def test_a_line_the_program_tells_that_is_no_line_of_its_files_is_not_shown_the_message_is_named_instead():
    source = WRONG["wrong-id"]
    told = record(source, "list-files")
    refused = told.exchanges[1]
    for forged in ([{"i": 2, "line": 9999, "file": "your_loop.py", "blocks": []}],  # past the file's end
                   [{"i": 2, "line": 3, "file": "../../etc/passwd", "blocks": []}],  # a file that is not theirs
                   []):  # nothing told (a program that closed its channel's watching, or past the bounds)
        refused.made = checked_made(forged)
        found = named(told)
        made = found.made
        call_line = refused.line
        assert (made.how, made.line, made.message, made.call, made.role) == (UNKNOWN, call_line, 3, 2, "user")
        assert found.line == call_line
        assert said_at(told, "en") == (f"the line that made message 3 of call 2 (user) is not known; the call's line "
                                       f"{call_line}: response = client.messages.create(")
        assert "3" in said_at(told, "ja") and "user" in said_at(told, "zh")

    gone = record(WRONG["no-loop"], "list-files")
    gone.left = None  # where the loop returned is not known
    made = named(gone).made
    assert (made.how, made.line, made.call) == (UNKNOWN_RETURN, gone.exchanges[0].line, 1)
    assert said_at(gone, "en").startswith("where your loop returned after call 1 is not known; the call's line ")


def test_what_a_program_tells_of_its_lines_is_bounded_and_checked_before_it_is_kept():
    hostile = [{"i": n, "line": n + 1, "file": "x" * 5000, "blocks": [[0, 1, None]] * 500} for n in range(500)]
    kept = checked_made(hostile)
    assert len(kept) == lines.MESSAGES_MOST and all(len(e["blocks"]) == lines.BLOCKS_MOST for e in kept)
    assert all(len(e["file"]) == lines.FILE_MOST for e in kept)
    wrong_kinds = [{"i": True, "line": 3}, {"i": -1, "line": 3}, {"i": 1, "line": "3"}, {"i": 1, "line": 0},
                   {"i": 1, "line": 10**9}, "message", None, {"i": 1, "line": None, "blocks": [[0, "1", None], [0]]}]
    assert checked_made(wrong_kinds) == [] and checked_made({"i": 1}) == [] and checked_made(None) == []
    assert checked_place({"line": 4, "file": "a.py"}) == {"line": 4, "file": "a.py"}
    assert checked_place({"line": False}) is None and checked_place([4]) is None


def test_an_openai_loops_wrong_tool_call_id_is_named_at_the_line_that_made_that_tool_message():
    # An OpenAI chat loop, its requests as the wire saw them; the lines its program told for each chat message
    source = "\n".join(f"line {n}" for n in range(1, 41))
    asked = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    first = {"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "list"}]}
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                                                                "tool_calls": [asked]}}]}
    second = {"model": "m", "messages": first["messages"] + [
        {"role": "assistant", "content": None, "tool_calls": [asked]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "call_9", "content": "b.txt"}]}
    told = checked_made([{"i": 1, "line": 30, "file": None, "blocks": []},
                         {"i": 2, "line": 21, "file": None, "blocks": []},
                         {"i": 3, "line": 25, "file": None, "blocks": []},
                         {"i": 4, "line": 26, "file": None, "blocks": []}])
    recording = Recording(source=source, scenario="list-files", lang="en", outcome="refused", exchanges=[
        Exchange(request=first, response=answer, line=12, dialect="openai"),
        Exchange(request=second, error={"status": 400, "type": "invalid_request_error", "message": "…"}, line=12,
                 dialect="openai", made=told)])
    assert chat.origins(second["messages"])[2] == (3, [3, 4])  # the Messages API's third message: tool messages 3, 4
    found = named(recording)
    assert found.name == "wrong-id"
    assert (found.made.how, found.made.line, found.made.message) == (MADE, 26, 5)  # chat message 5: call_9's


# -- The command line, the learner's file run in the sandbox: each mistake in the listing and in a whole s01 file --

# The mistakes run through the command line in each shape: every one in the s01 shape; in the listing's, one for each
# way a line is known (RETURNED, AFTER, MADE, MADE on call 3 after a cut answer). The listing's other three are named
# at their lines in every language by test_each_mistake_of_the_listing_is_named_at_the_line_that_made_the_wrong_
# message_in_every_language above, and through the sandbox in the s01 shape here; no-assistant-append in the listing
# also through the real entry point (tests/test_yours_cli.py's first test, the append left out).
CLI_MISTAKES = {"listing": ["no-loop", "no-write-back", "wrong-id", "max-tokens-go-on"], "s01": list(MISTAKES)}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_command_line_names_each_mistake_at_its_line_with_the_fix_and_the_labs_link(shape, tmp_path):
    from loop.__main__ import YOURS_FIX, YOURS_LAB
    from loop.engine.scenarios import SCENARIOS
    from loop.yours import sandboxed

    from .cli import loop_main

    sources, where = SHAPES[shape]
    mistakes = CLI_MISTAKES[shape]
    for i, mistake in enumerate(mistakes):  # one run each, in a language each, the next run's sandbox warming
        lang = LANGS[(i + (shape == "s01")) % 3]
        source = sources[mistake]
        file = tmp_path / f"{mistake}.py"
        file.write_text(source)
        scenario = SCENARIO.get(mistake, "list-files")
        [ran] = loop_main(["yours", file, "--scenario", scenario, "--lang", lang])
        if i + 1 < len(mistakes):  # a child started after the last run would be ended unused
            sandboxed.warm(SCENARIOS[SCENARIO.get(mistakes[i + 1], "list-files")].toolset or "s01")
        said = ran.stdout
        assert ran.returncode == 1, said + ran.stderr
        how, line, message, call = expected(source, where[mistake])
        code = source.splitlines()[line - 1].strip()
        named_at = say(lang, lines.SAID[how], line=line, message=message, call=call, code=code)
        assert named_at in said, (mistake, lang, said[-1500:])
        assert say(lang, YOURS_FIX, fix=say(lang, MISTAKES[mistake].fix)) in said
        assert say(lang, YOURS_LAB, link=f"/mistakes?mistake={mistake}") in said
        assert "Traceback" not in said + ran.stderr


def test_watching_a_program_that_reorders_a_long_list_at_every_line_stops_at_its_bound_and_the_program_goes_on(
        monkeypatch):
    from loop.yours import watching

    monkeypatch.setattr(watching, "SCANNED_MOST", 100_000)  # 5,000,000 in a run: the same bound, met sooner
    source = '''def agent_loop(state):
    items = [{"n": k} for k in range(4000)]
    for _ in range(3000):
        items.reverse()
    response = client.messages.create(model=MODEL, system=SYSTEM, messages=state["messages"], tools=TOOLS,
                                      max_tokens=MAX_TOKENS)
    return response
'''
    recording = record(source, "list-files")
    assert recording.outcome == "returned" and len(recording.exchanges) == 1  # it ran to its end
    assert recording.exchanges[0].made == []  # watching stopped: no line is told after that
    assert watching.SCANNED_MOST < 3000 * 4000
    made = named(recording).made  # it returned with the tool_use unanswered: where is not known now
    assert (made.how, made.line) == (UNKNOWN_RETURN, recording.exchanges[0].line)
