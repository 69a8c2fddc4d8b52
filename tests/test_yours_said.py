"""What a learner's run says of itself: an append the loop skipped is said as such on the step's line, and a loop
that never calls the model is named plainly, not passed as one that kept every rule."""

import pytest

from loop.text.catalogs import say
from loop.views.narrate import describe
from loop.yours.listing import CHAPTER_LOOP
from loop.yours.named import NEVER_CALLED
from loop.yours.reading import read
from tests.learner import record

NO_APPEND = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_an_append_the_loop_skipped_is_said_not_appended_with_messages_unchanged(lang):
    trace = read(record(NO_APPEND, "list-files", lang=lang)).trace
    skipped = next(i for i, s in enumerate(trace.steps) if s.stage == "append_assistant")
    assert trace.steps[skipped].detail["appended"] is False
    line = describe(trace, skipped, lang)
    assert say(lang, "the response was NOT appended: messages unchanged ({n} messages)", n=1) in line
    assert say(lang, "messages ← assistant ({n} messages)", n=1) not in line
    if lang != "en":
        assert "NOT appended" not in line  # said in the page's language
    # The chapter's own loop still says the append as it was.
    kept = read(record(CHAPTER_LOOP, "list-files", lang=lang)).trace
    appended = next(i for i, s in enumerate(kept.steps) if s.stage == "append_assistant")
    assert say(lang, "messages ← assistant ({n} messages)", n=2) in describe(kept, appended, lang)


@pytest.mark.parametrize("source", [
    "def agent_loop(state):\n    return\n",
    "def agent_loop(state):\n    print(state[\"messages\"])\n    state[\"turn_count\"] += 1\n",
], ids=["returns-at-once", "only-prints"])
def test_a_loop_that_never_calls_the_model_is_named_so(source):
    yours = read(record(source, "list-files"))
    assert yours.recording.exchanges == []
    assert not yours.kept_every_rule
    assert yours.named.name == NEVER_CALLED and not yours.named.is_mistake
    assert yours.named.render("en") == "your loop never called the model"
    assert yours.named.render("ja") != yours.named.render("en") != yours.named.render("zh")
