"""`python -m loop yours FILE.py`: a learner's own agent_loop, run in the sandbox, its stages and its first broken rule."""

import pytest

from loop.files import transcript
from loop.yours.listing import CHAPTER_LOOP

from .cli import loop_cli, loop_main
from .test_yours_reading import WRONG as READING_WRONG

NO_APPEND = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")
WRITE_BACK_LINE = NO_APPEND.splitlines().index('        state["messages"].append({') + 1  # the one left: the results'


def test_the_chapters_listing_holds_and_a_loop_without_the_append_is_named_with_the_400_and_its_line(tmp_path):
    good, bad, out = tmp_path / "good.py", tmp_path / "bad.py", tmp_path / "t.json"
    good.write_text(CHAPTER_LOOP)
    bad.write_text(NO_APPEND)
    kept, broken, listed = loop_cli(["yours", good, "--scenario", "list-files", "--out", out],
                                    ["yours", bad, "--scenario", "list-files"], ["yours", "--help"])

    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "call the model" in kept.stdout and "write tool_results back" in kept.stdout  # the stages, as `run`
    assert "every rule kept" in kept.stdout and "broken rule" not in kept.stdout
    assert "Traceback" not in kept.stdout + kept.stderr
    trace = transcript.load(out)
    assert trace.meta["yours"] == {"source": CHAPTER_LOOP, "scenario": "list-files"}
    assert [s.stage for s in trace.steps].count("call_model") == 2
    [checked] = loop_cli(["check", out])
    assert checked.returncode == 0 and checked.stdout.startswith("ok:"), checked.stdout + checked.stderr

    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "broken rule: no-assistant-append" in broken.stdout
    assert "the API's error: 400 " in broken.stdout and "tool_use_id" in broken.stdout
    assert (f"your line {WRITE_BACK_LINE} made the message the rule is about (message 2 of call 2): "
            'state["messages"].append({') in broken.stdout  # the write-back of results no message before asked for
    assert "the fix: Append the assistant's response itself" in broken.stdout
    assert "see it in the Mistakes lab: /mistakes?mistake=no-assistant-append" in broken.stdout
    assert "Traceback" not in broken.stdout + broken.stderr

    said = " ".join(listed.stdout.split())
    for name in ("list-files", "recover", "two-tools", "big-context", "subagent", "compact"):  # s01, s02, s04, s06
        assert name in said.replace("- ", "-")  # argparse may break a name at its hyphen
    # what the file may be, and what it is given
    assert "a whole script" in said and "a file of a package" in said and "Run it from your project's folder" in said
    assert "task typed into its input(), then end of input" in said and "placeholder key" in said
    assert "MODEL, SYSTEM, TOOLS, MAX_TOKENS (the scenario's), run_tool(block)" in said


# -- The same, through `main` in this process (the sandbox still runs the learner's code apart) --

OFFERED = ["list-files", "hello-py", "recover", "two-tools", "max-tokens", "long-answer", "parallel"]  # the page's picker


# One loop a mistake of the Mistakes lab, each looking right at a glance: the reading tests' loops, written from
# the page's listing (its max_tokens=MAX_TOKENS is the scenario's, so the max-tokens scenario cuts the answer)
WRONG = dict(READING_WRONG)
WRONG["no-loop"] = CHAPTER_LOOP.replace('if response.stop_reason != "tool_use":',
                                        'if response.stop_reason == "tool_use":')
SCENARIO = {"max-tokens-go-on": "max-tokens"}


# list-files is run so through the real entry point by the first test above (its --out, then check)
@pytest.mark.parametrize("scenario", [scenario for scenario in OFFERED if scenario != "list-files"])
def test_the_chapters_listing_keeps_every_rule_on_every_offered_scenario_and_check_holds(scenario, tmp_path):
    # No child is started ahead for the next scenario: each is a test of its own, and the child would be ended unused
    # after this one (tests/conftest.py's no_learner_child_left)
    source, out = tmp_path / "agent_loop.py", tmp_path / f"{scenario}.json"
    source.write_text(CHAPTER_LOOP)
    [ran] = loop_main(["yours", source, "--scenario", scenario, "--out", out])
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "every rule kept" in ran.stdout and "broken rule" not in ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr
    trace = transcript.load(out)
    assert trace.meta["yours"] == {"source": CHAPTER_LOOP, "scenario": scenario}
    assert "call_model" in [s.stage for s in trace.steps]
    [checked] = loop_main(["check", out])
    assert checked.returncode == 0 and checked.stdout.startswith("ok:"), checked.stdout + checked.stderr
    if scenario == "max-tokens":  # the listing's answer is cut and it ends there, keeping every rule
        called = [s for s in trace.steps if s.stage == "call_model"]
        assert [c.detail.request["max_tokens"] for c in called] == [120] * len(called)  # the scenario's, not 8000
        assert called[-1].detail.response["stop_reason"] == "max_tokens"


def test_a_loop_that_never_calls_the_model_exits_1_and_says_so(tmp_path):
    source = tmp_path / "agent_loop.py"
    source.write_text('def agent_loop(state):\n    print("Hello")\n')
    [ran] = loop_main(["yours", source])
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "error: your loop never called the model" in ran.stdout
    assert "broken rule" not in ran.stdout and "every rule kept" not in ran.stdout
    assert "what your program printed:\nHello" in ran.stdout  # its print, as a terminal shows it
