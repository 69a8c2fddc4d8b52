"""The exercises on Your loop: the picker opens an exercise's starter, Check runs the loop on the exercise's own
scenarios and says why it fails in the page's language, a pass is kept for the browser, and About ticks it."""

from unittest import mock

import pytest

from loop.text.catalogs import say
from loop.yours import sandboxed
from loop.yours.exercises import EXERCISES, run_exercise
from pages.views.yours import PICKER, SOURCE, YOURS, starting_code

from .apptest import COOKIE, app, issued, run
from .learner import record

SEEN = "yours-source"


def picker(at):
    """The exercise picker (its key says which exercises are passed: picker_key)."""
    found = [s for s in at.selectbox if s.key.startswith(PICKER)]
    assert len(found) == 1
    return found[0]


def picked(at, name: str):
    picker(at).set_value(name)
    return run(at)


def check(at):
    at.button(key="yours-check").click()
    return run(at)


@pytest.fixture
def in_process():
    """The page's runner, in this process (tests/learner.py): the same recording, without the sandbox's second. No
    sandboxed child is started ahead of Run or Check either: none would be used (the page starts them beside it)."""
    with mock.patch("loop.yours.sandboxed.run", record), mock.patch("loop.yours.sandboxed.warm"):
        yield


def test_choosing_an_exercise_opens_its_starter_and_each_exercise_keeps_the_learners_own_text(in_process):
    at = app("pages/yours.py", lang="ja")
    [exercises, scenarios] = at.selectbox
    assert exercises.options == [say("ja", "Free: the chapter's loop")] + [e.label("ja") for e in EXERCISES.values()]
    assert exercises.options[-1] == say("ja", "Beyond the chapter: {title}", title=say("ja", EXERCISES["is-error"].title))
    picked(at, "append-the-response")
    exercise = EXERCISES["append-the-response"]
    assert at.session_state[SEEN] == starting_code("ja", "append-the-response")
    assert exercise.starter("ja") in at.session_state[SEEN] and exercise.missing not in at.session_state[SEEN]
    assert "# TODO: " + say("ja", exercise.todo) in at.session_state[SEEN]
    assert any(say("ja", exercise.goal) in m.value for m in at.markdown)
    [hint] = [e for e in at.expander if e.label == say("ja", "Hint")]
    assert say("ja", exercise.hint) in "".join(m.value for m in hint.markdown)

    at.session_state[SOURCE] = "def agent_loop(state):\n    pass  # mine\n"  # what the learner typed
    run(at)
    picked(at, "free")
    assert at.session_state[SEEN] == starting_code("ja")
    picked(at, "write-back")
    assert at.session_state[SEEN] == starting_code("ja", "write-back")
    picked(at, "append-the-response")
    assert at.session_state[SEEN] == "def agent_loop(state):\n    pass  # mine\n"


def test_check_with_the_starter_fails_and_says_why_in_japanese_with_the_scenario_and_the_call(in_process):
    at = app("pages/yours.py", lang="ja")
    picked(at, "write-back")
    check(at)
    verdict = run_exercise(EXERCISES["write-back"], starting_code("ja", "write-back"), "ja", record)
    assert not verdict.passed and verdict.scenario == "recover"
    shown = at.error[0]  # the verdict; the run it failed on is drawn below it, its own broken rule named
    assert verdict.why in shown.value and verdict.why != verdict.note.render("en")  # said in Japanese
    assert say("ja", "Not yet: on {scenario}, at model call {call}.", scenario="`recover`",
               call=verdict.call + 1) in shown.value
    assert at.session_state[YOURS].recording.scenario == "recover"  # the run it failed on, drawn below
    assert not at.success


def test_exercise_3_passes_with_the_chapters_own_write_back_and_is_error_is_the_next_exercise(in_process):
    at = app("pages/yours.py")
    picked(at, "write-back")
    exercise = EXERCISES["write-back"]
    at.session_state[SOURCE] = starting_code("en", "write-back").replace(
        f"        # TODO: {exercise.todo}\n",
        '        state["messages"].append({"role": "user", "content": results})\n')  # the chapter's write-back
    run(at)
    check(at)
    assert not at.error, [e.value for e in at.error]
    assert [s.value for s in at.success] == ["Passed: your loop does it on recover, two-tools."]
    picked(at, "is-error")  # beyond the chapter: the chapter's listing does not mark a failed run
    assert any("goes beyond the chapter" in m.value for m in at.markdown)
    at.session_state[SOURCE] = EXERCISES["write-back"].answer
    run(at)
    check(at)
    shown = at.error[0]  # the verdict; the run it failed on is drawn below it
    assert "is_error" in shown.value and "`recover`" in shown.value


def test_check_with_the_answer_passes_and_the_browser_keeps_it_for_the_picker_and_about(in_process):
    at = app("pages/yours.py", lang="ja")
    picked(at, "run-the-tools")
    at.session_state[SOURCE] = EXERCISES["run-the-tools"].answer
    run(at)
    check(at)
    assert not at.error
    assert [s.value for s in at.success] == ["合格：あなたの loop は two-tools、hello-py でそれができています。"]
    ticked = "✓ " + say("ja", "Statement {n}: {title}", n=1, title=say("ja", EXERCISES["run-the-tools"].title))
    assert ticked in picker(at).options and picker(at).value == "run-the-tools"
    assert picker(at).format_func(picker(at).value) == ticked  # the closed picker shows the tick too

    cookie = {COOKIE: issued(at)}  # the same browser, a new session (a reload)
    again = app("pages/yours.py", lang="ja", cookies=cookie)
    assert ticked in picker(again).options
    assert sum(o.startswith("✓ ") for o in picker(again).options) == 1

    about = app("pages/about.py", lang="ja", cookies=cookie)
    assert about.checkbox(key="about-check-s1").value is True
    assert about.checkbox(key="about-check-s2").value is False
    assert say("ja", "You passed its exercise in Your loop.") in [c.value for c in about.caption]

    other = app("pages/about.py", lang="ja")  # another browser: nothing passed
    assert other.checkbox(key="about-check-s1").value is False


def test_check_goes_through_the_sandbox_and_passes_is_error_only_with_is_error_written_back():
    at = app("pages/yours.py")
    picked(at, "is-error")
    at.session_state[SOURCE] = EXERCISES["is-error"].answer
    run(at)
    # the children started ahead (on opening, on picking) serve this Check; none is started after it for a next one
    with mock.patch("loop.yours.sandboxed.run", wraps=sandboxed.run) as sandbox, \
            mock.patch("loop.yours.sandboxed.warm"):
        check(at)
    assert sorted(c.args[1] for c in sandbox.call_args_list) == ["recover", "two-tools"]  # at once, one child each
    assert not at.error, [e.value for e in at.error]
    assert [s.value for s in at.success] == ["Passed: your loop does it on recover, two-tools."]


def not_yet(at) -> list[str]:
    """The verdict "Not yet: on `recover`, …" the page shows (the run drawn below names its own broken rule)."""
    said = say("en", "Not yet: on {scenario}, at model call {call}.", scenario="`recover`", call=2).split(",")[0]
    return [e.value for e in at.error if said in e.value]


def test_a_verdict_is_about_the_code_it_checked_once_the_code_changes_it_says_so_and_a_pass_stays_ticked(in_process):
    at = app("pages/yours.py")
    picked(at, "write-back")
    check(at)
    assert not_yet(at)  # the starter: not yet
    checked = at.session_state[SOURCE]
    at.session_state[SOURCE] = checked.replace("# TODO", "# TO DO")  # the learner edits it
    run(at)
    assert not not_yet(at) and not at.success
    earlier = say("en", "Checked on your earlier code: Check again to check this one.")
    assert earlier in [c.value for c in at.caption]
    at.session_state[SOURCE] = checked  # back to the code it checked: its verdict again
    run(at)
    assert not_yet(at) and earlier not in [c.value for c in at.caption]

    at.session_state[SOURCE] = EXERCISES["write-back"].answer
    run(at)
    check(at)
    assert [s.value for s in at.success] == ["Passed: your loop does it on recover, two-tools."]
    at.session_state[SOURCE] = EXERCISES["write-back"].answer + "\n# more\n"
    run(at)
    assert not at.success and earlier in [c.value for c in at.caption]
    assert any(o.startswith("✓ ") for o in picker(at).options)  # the pass stays ticked


def test_a_failed_check_opens_the_run_it_failed_on_at_the_failing_call(in_process):
    at = app("pages/yours.py")
    picked(at, "write-back")
    check(at)
    verdict = run_exercise(EXERCISES["write-back"], starting_code("en", "write-back"), "en", record)
    assert verdict.call > 0  # not the first call: a run drawn from step 1 would not show it
    trace = at.session_state[YOURS].trace
    calls = [i for i, step in enumerate(trace.steps) if step.stage in ("call_model", "refused")]
    assert trace.cursor == calls[verdict.call] > 0
    status = f"### Step {trace.cursor + 1} of {len(trace)} · "
    assert any(m.value.startswith(status) for m in at.markdown), [m.value for m in at.markdown][:20]


def test_only_the_run_of_the_code_and_the_exercise_on_screen_is_drawn(in_process):
    """A failed Check draws the run it failed on; a pass then draws no run of the earlier code under it (its red
    400), another exercise draws none of the last one's, and a run of code since changed says so."""
    code = lambda: "".join(h.value for h in at.get("html") if "ls-yours-code" in h.value)  # noqa: E731
    at = app("pages/yours.py")
    picked(at, "write-back")
    check(at)
    assert not_yet(at) and "# TODO" in code()  # the starter's run, drawn below the verdict
    at.session_state[SOURCE] = EXERCISES["write-back"].answer
    run(at)
    assert say("en", "This run is of your earlier code: Run again to run the code in the editor.") in \
        [c.value for c in at.caption]
    check(at)
    assert [s.value for s in at.success] == ["Passed: your loop does it on recover, two-tools."]
    assert not at.error and not code()  # the failed run of the starter is gone with its 400
    assert say("en", "Press Run to run your loop on the scenario chosen.") in [i.value for i in at.info]

    picked(at, "run-the-tools")
    check(at)  # its starter fails: its run is drawn
    assert code() and at.error
    picked(at, "append-the-response")
    assert not at.error and not code()  # run-the-tools' run is not this exercise's
    assert say("en", "Press Run to run your loop on the scenario chosen.") in [i.value for i in at.info]
