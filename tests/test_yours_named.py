"""Your loop names a wrong id only where the wire shows one: a tool_result that carries an id the response never
asked for. A loop that runs some of the tools and answers them with their own ids made another mistake (it left
one unanswered), and one that adds a stray result to right ones did give a wrong id."""

from __future__ import annotations

from loop.engine import mistakes
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.named import UNNAMED, named
from tests.learner import record


def loop_with(old: str, new: str) -> str:
    assert CHAPTER_LOOP.count(old) == 1, old
    return CHAPTER_LOOP.replace(old, new)


RUN_ONLY_THE_FIRST = loop_with('''        for block in response.content:
            if block.type == "tool_use":
                output = run_tool(block)
''', '''        for block in [b for b in response.content if b.type == "tool_use"][:1]:
            if block.type == "tool_use":
                output = run_tool(block)
''')
ADD_A_STRAY_RESULT = loop_with('''        # write the results back''', '''        results.append({"type": "tool_result", "tool_use_id": "toolu_stray", "content": "?"})
        # write the results back''')


def test_yours_names_no_wrong_id_when_every_id_written_back_was_asked_for():
    recording = record(RUN_ONLY_THE_FIRST, "two-tools")  # two tool_use blocks; one answered, with its own id
    first = recording.exchanges[0]
    assert len(first.tool_runs) == 1 and recording.exchanges[1].error is not None  # the API refused call 2
    broke = named(recording)
    assert broke.call == 1 and broke.name != mistakes.WRONG_ID and broke.name == UNNAMED


def test_yours_names_a_wrong_id_when_a_tool_result_carries_an_id_never_asked_for():
    recording = record(ADD_A_STRAY_RESULT, "list-files")  # the right id, and one nobody asked for
    sent = recording.exchanges[1].request["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in sent][-1] == "toolu_stray" and len(sent) == 2
    broke = named(recording)
    assert broke.call == 1 and broke.name == mistakes.WRONG_ID and "unexpected `tool_use_id`" in broke.error["message"]
