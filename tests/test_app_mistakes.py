"""The Mistakes lab: each of the six mistakes really runs and breaks at the call where the API refuses it,
with the API's 400 text verbatim, beside the correct loop on the same scenario."""

import pytest
from streamlit.testing.v1 import AppTest

from loop.mistakes import MISTAKES
from tests.apptest import app

# (the call refused, words of the API's error) for each mistake, as the API words them
EXPECTED = {
    "no-assistant-append": (2, "unexpected `tool_use_id` found in `tool_result` blocks"),
    "no-write-back": (2, "`tool_use` ids were found without `tool_result` blocks immediately after"),
    "wrong-id": (2, "`tool_use` ids were found without `tool_result` blocks immediately after"),
    "text-first": (2, "Did not find 1 `tool_result` block(s) at the beginning of this message"),
    "max-tokens-go-on": (3, "all messages must have non-empty content"),
    "results-as-assistant": (2, "`tool_use` ids were found without `tool_result` blocks immediately after"),
}


@pytest.fixture(scope="module")
def lab() -> AppTest:
    return app("pages/mistakes.py")


def test_every_mistake_is_in_the_lab():
    assert set(EXPECTED) == set(MISTAKES)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_error_appears_at_the_call_that_breaks(lab, name):
    at = lab
    at.radio(key="mistake-pick").set_value(name).run()
    assert not at.exception, at.exception
    wrong, right = at.session_state["mistakes-runs"][(name, "en")]
    number, words = EXPECTED[name]
    assert wrong.broke_at.number == number and words in wrong.broke_at.error
    errors = [e.value for e in at.error]
    assert len(errors) == 1  # only the broken loop is refused; the correct loop is accepted throughout
    assert errors[0].startswith(f"**Call {number} refused: HTTP 400")
    assert wrong.broke_at.error in errors[0]  # verbatim, the id included
    assert right.ended == "max_tokens" if name == "max-tokens-go-on" else right.ended == "end_turn"

    # what was sent at that call, drawn as the model got it: the expander of the broken call is open
    sent = [e for e in at.expander if e.label == f"messages sent at call {number}"]
    assert len(sent) == 1 + (len(right.calls) >= number) and sent[0].proto.expanded
    labels = [m.value for m in sent[0].markdown]
    assert len(labels) >= len(wrong.broke_at.messages)
    # the fix in one sentence and the lines that differ
    m = MISTAKES[name]
    assert any(m.fix in s.value for s in at.success)
    codes = [c.value for c in at.code]
    assert m.wrong in codes and m.right in codes
    assert at.subheader[0].value == m.title
