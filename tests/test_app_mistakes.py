"""The Mistakes lab: each mistake really runs and breaks at the call where the API refuses it, with the API's
400 text verbatim (wrapping like prose) and what its rule means, beside the correct loop on the same scenario;
and the loop that is not there, where nothing is refused and nothing runs."""

import pytest
from streamlit.testing.v1 import AppTest

from loop.engine.mistakes import MISTAKES
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
    assert set(EXPECTED) | {"no-loop"} == set(MISTAKES)
    assert all(MISTAKES[name].rule for name in EXPECTED)  # every refusal is explained in a sentence


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
    # ... as prose that wraps (a code block would run off the box and hide the sentence that states the
    # rule), and with what the rule means under it
    assert "```" not in errors[0] and "\n    " not in errors[0]
    assert errors[0].endswith("**What the rule means:** " + MISTAKES[name].rule)
    assert right.ended == "max_tokens" if name == "max-tokens-go-on" else right.ended == "end_turn"

    # what was sent at that call, drawn as the model got it: the expander of the broken call is open
    sent = [e for e in at.expander if e.label == f"messages sent at call {number}"]
    assert len(sent) == 1 + (len(right.calls) >= number) and sent[0].proto.expanded
    assert len(sent[0].get("html")) == len(wrong.broke_at.messages)  # one card a message
    # the fix in one sentence and the lines that differ
    m = MISTAKES[name]
    assert any(m.fix in s.value for s in at.success)
    codes = [c.value for c in at.code]
    assert m.wrong in codes and m.right in codes
    assert at.subheader[0].value == m.title


def test_without_a_loop_the_tool_use_stays_a_wish(lab):
    at = lab
    at.radio(key="mistake-pick").set_value("no-loop").run()
    assert not at.exception, at.exception
    wrong, right = at.session_state["mistakes-runs"][("no-loop", "en")]
    assert len(wrong.calls) == 1 and wrong.ended == "tool_use" and wrong.broke_at is None
    assert wrong.tools_run == 0 and not wrong.calls[0].tool_outputs  # the model asked; nothing ran
    assert right.tools_run == 1 and right.ended == "end_turn" and len(right.calls) == 2
    assert not at.error  # no rule is broken: the API accepts the one call
    assert any("Nothing runs the tool_use." in w.value for w in at.warning)
    assert "runs 0 tool(s)" in " ".join(c.value for c in at.caption)


def test_without_a_loop_no_file_is_read(shared):
    from loop.engine.broken import lab
    from loop.engine.toolsets import default_toolbox
    from loop.views.mistakes import lab_run

    def run_loop(mistake, tools):
        return lab_run(lab(mistake, tools), mistake)

    class Counting:
        def __init__(self, box):
            self.box, self.runs = box, 0

        def specs(self):
            return self.box.specs()

        def run(self, name, tool_input):
            self.runs += 1
            return self.box.run(name, tool_input)

    (shared / "notes.txt").write_text("a file the model would list\n")
    tools = Counting(default_toolbox(shared))
    wish = run_loop("no-loop", tools)
    assert tools.runs == 0 and "notes.txt" not in str(wish.calls[0].response)
    answer = run_loop(None, tools)
    final = " ".join(b.get("text", "") for b in answer.calls[-1].response["content"] if b.get("type") == "text")
    assert tools.runs == 1 and "notes.txt" in final  # the loop reads what is really there


def test_a_mistake_link_opens_that_mistake():
    at = app("pages/mistakes.py", mistake="no-write-back")
    assert at.radio(key="mistake-pick").value == "no-write-back"
    assert at.subheader[0].value == MISTAKES["no-write-back"].title


def test_in_japanese_the_rule_is_explained_in_japanese():
    from loop.text.catalogs import say

    at = app("pages/mistakes.py", mistake="no-write-back", lang="ja")
    error = at.error[0].value
    assert "**この規則の意味:** " + say("ja", MISTAKES["no-write-back"].rule) in error
    assert "`tool_use` ids were found without `tool_result` blocks immediately after" in error  # the API's words
