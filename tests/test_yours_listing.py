"""The chapter's listing as the page's editor starts with it: one comment before each stage, in the page's
language, and the same code in every language."""

import io
import tokenize

import pytest

from loop.text.catalogs import say
from loop.yours import listing
from loop.yours.exercises import EXERCISES
from loop.yours.listing import CHAPTER_LOOP, chapter_loop

# Each stage's comment, and the line of the chapter's code right under it.
STAGES = [
    (listing.CALL, "response = client.messages.create("),
    (listing.TOKENS, "max_tokens=MAX_TOKENS,"),
    (listing.APPEND, "state[\"messages\"].append({"),
    (listing.STOP, "if response.stop_reason != \"tool_use\":"),
    (listing.RUN, "results = []"),
    (listing.WRITE_BACK, "state[\"messages\"].append({"),
]


def code_only(source: str) -> list[str]:
    """The source's tokens less its comments: what Python runs."""
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type != tokenize.COMMENT]


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_each_stage_of_the_listing_is_named_by_a_comment_in_the_pages_language(lang):
    lines = [line.strip() for line in chapter_loop(lang).splitlines()]
    comments = [i for i, line in enumerate(lines) if line.startswith("#")]
    assert [lines[i] for i in comments] == [f"# {say(lang, comment)}" for comment, _ in STAGES]
    assert [lines[i + 1] for i in comments] == [code for _, code in STAGES]
    if lang != "en":
        assert not any(f"# {comment}" in chapter_loop(lang) for comment, _ in STAGES)
    assert code_only(chapter_loop(lang)) == code_only(CHAPTER_LOOP)
    assert chapter_loop("en") == CHAPTER_LOOP


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_an_exercises_starter_says_the_listings_comments_in_the_pages_language_too(exercise):
    starter = EXERCISES[exercise].starter("ja")
    assert f"# {say('ja', listing.CALL)}\n" in starter and f"# {listing.CALL}\n" not in starter
    assert "max_tokens=MAX_TOKENS," in starter
