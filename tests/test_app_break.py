"""Break it here, on the page: at a step of the scenario in front of them, the learner breaks the loop one of the
Mistakes lab's ways and sees the broken branch beside the correct one, refused at the call the API refuses with
its 400, what the rule means and the lines that differ; the branch stays in the picker and is saved with the run."""

from dataclasses import replace
from pathlib import Path

from loop.engine import rules
from loop.files import transcript
from loop.text.catalogs import say
from loop.engine.mistakes import MISTAKES
from tests.apptest import app, click, download, slider

ROOT = Path(__file__).resolve().parent.parent


def open_break(at, key: str, cursor: int):
    at.session_state[f"{key}-break-{cursor}"] = True  # the learner opens "Break it here"
    return at.run()


def test_break_recover_in_japanese_refuses_at_the_next_call_and_is_kept_and_saved():
    at = app(scenario="recover", step="7", lang="ja")  # step 7: the second answer, a tool_use, is not yet appended
    original = at.session_state["live-run"]
    assert not original.done and len(original.trace) == 7
    assert not [r for r in at.radio if (r.key or "").startswith("live-break")]  # drawn only while open
    open_break(at, "live", 6)
    pick = at.radio(key="live-break-pick-6")
    m = MISTAKES["no-assistant-append"]
    assert say("ja", m.title) in pick.options
    pick.set_value("no-assistant-append").run()
    click(at, "live-break-go-6")

    branch = at.session_state["live-run"]
    assert branch is not original and len(original.trace) == 7  # the correct branch is kept as it was
    trace = branch.trace
    last = trace.steps[-1]
    assert last.stage == "refused" and last.detail.error["status"] == 400
    sent = trace.request_at(last.index)["messages"]
    message = str(rules.check(sent, as_request=True)[0])  # what the API says of the request the branch sent
    assert "unexpected `tool_use_id` found in `tool_result` blocks" in message
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and message in errors[0]  # the API's words verbatim, at the call it refused
    assert "HTTP 400" in errors[0] and errors[0].endswith(say("ja", m.rule))  # and what the rule means, in ja
    codes = [c.value for c in at.code]
    assert m.right in codes and any("messages.append" not in c and "#" in c for c in codes)  # the lines that differ
    assert any(say("ja", "#### The correct loop") == md.value for md in at.markdown)  # beside the correct branch

    picker = at.selectbox(key="live-branch")
    assert picker.options[-1] == say("ja", "Branch {n} · step {step}, broken: {mistake}", n=2, step=7,
                                     mistake=say("ja", m.title))
    assert "2 · API が request を拒否 (400)" in next(md.value for md in at.markdown if md.value.startswith("### "))
    views = next(h.proto.body for h in at.get("html") if 'class="ls-note"' in h.proto.body)
    assert say("ja", "The API refused the request (400 invalid_request_error): the broken loop ends here.") in views
    assert "prompt is too long" not in views and "invalid_request_error" in views  # the rule broken, not a long prompt

    _, data = download(at, "live-save")  # Save writes every branch: the broken one with the original
    saved = transcript.loads(data)
    assert saved.meta["forked_from"] == {"step": 6, "edit": "mistake", "mistake": "no-assistant-append"}
    assert len(saved) == len(trace) and saved.steps[-1].stage == "refused"
    assert len(saved.branches) == 1 and len(saved.branches[0]) == 7

    picker.set_value(0).run()  # back to the correct branch: Break it here again, no broken drawing
    assert at.session_state["live-run"] is original and not at.error

    at.switch_page("pages/replay.py").run()  # the saved run replayed: the broken branch is drawn as it was
    at.file_uploader(key="replay-upload").upload("broken.json", data, "application/json").run()
    assert at.selectbox(key="replay-branch").options[0] == say(
        "ja", "Branch {n} · step {step}, broken: {mistake}", n=1, step=7, mistake=say("ja", m.title))
    assert len(at.error) == 1 and message in at.error[0].value
    assert any(say("ja", "#### The correct loop") == md.value for md in at.markdown)


def test_mistakes_that_cannot_happen_here_are_left_out_with_why():
    at = app(scenario="recover", step="14")
    run = at.session_state["live-run"]
    assert run.done and len(run.trace) == 14
    cursor = 9  # the last tool_use has run: only its write-back is still ahead
    slider(at, "live").set_value(cursor + 1).run()
    open_break(at, "live", cursor)
    pick = at.radio(key=f"live-break-pick-{cursor}")
    cannot = next(c.value for c in at.caption if c.value.startswith("**Cannot happen from this step:**"))
    for name in MISTAKES:
        assert (MISTAKES[name].title in pick.options) != (MISTAKES[name].title in cannot)
    assert MISTAKES["no-assistant-append"].title not in pick.options
    assert "no answer after this step asks for a tool_use" in cannot

    last = len(run.trace) - 1
    slider(at, "live").set_value(last + 1).run()
    open_break(at, "live", last)
    assert not [r for r in at.radio if (r.key or "").startswith("live-break")]
    assert any(i.value == "No mistake can happen from this step." for i in at.info)


def test_break_on_replay_of_a_sample():
    at = app("pages/replay.py")
    at.selectbox(key="replay-sample").set_value("list-files").run()
    root = at.session_state["replay"]["trace"]
    slider(at, "replay").set_value(3).run()  # step 3: the answer asking for `ls` is appended
    open_break(at, "replay", 2)
    assert at.radio(key="replay-break-pick-2").options[0] == MISTAKES["no-loop"].title
    at.radio(key="replay-break-pick-2").set_value("wrong-id").run()
    click(at, "replay-break-go-2")

    replayed = at.session_state["replay"]["trace"]
    assert replayed.steps is root.steps and len(replayed.branches) == 1
    broken = replayed.branches[0]
    assert broken.meta["forked_from"]["mistake"] == "wrong-id" and broken.steps[-1].stage == "refused"
    picker = at.selectbox(key="replay-branch")
    assert picker.value == 1 and picker.options[1] == "Branch 2 · step 3, broken: " + MISTAKES["wrong-id"].title
    assert len(at.error) == 1 and "`tool_use` ids were found without `tool_result` blocks" in at.error[0].value
    assert [c.value for c in at.code].count(MISTAKES["wrong-id"].wrong) == 1


def test_a_real_models_run_and_an_imported_session_break_against_the_offline_model_saying_so():
    real = transcript.load(ROOT / "samples" / "list-files.json")
    real.meta.update(scripted=False, model="claude-sonnet-4-5")
    at = app("pages/replay.py")
    at.file_uploader(key="replay-upload").upload("real.json", transcript.dumps(real).encode(), "application/json").run()
    slider(at, "replay").set_value(3).run()
    open_break(at, "replay", 2)
    assert any("claude-sonnet-4-5" in i.value and "no key is spent" in i.value for i in at.info)

    imported = transcript.load(ROOT / "samples" / "list-files.json")
    imported.meta.update(imported={"format": "claude-code", "source": "session.jsonl", "warnings": []},
                         scripted=False, model="claude-sonnet-4-5")
    ls = next(s for s in imported.steps if s.stage == "run_tool")
    ls.detail = replace(ls.detail, output="only-in-the-session.txt")  # what only the session's tool said
    at.file_uploader(key="replay-upload").upload("session.json", transcript.dumps(imported).encode(),
                                                 "application/json").run()
    slider(at, "replay").set_value(3).run()
    open_break(at, "replay", 2)
    assert any("reuses the results the session recorded" in i.value for i in at.info)
    at.radio(key="replay-break-pick-2").set_value("text-first").run()
    click(at, "replay-break-go-2")
    broken = at.session_state["replay"]["trace"].branches[-1]
    ran = next(s for s in broken.steps[3:] if s.stage == "run_tool")
    assert ran.detail.get("output") == "only-in-the-session.txt"  # the session's result, not a run here
    assert any("no key is spent" in c.value for c in at.caption)
    assert len(at.error) == 1 and "Did not find 1 `tool_result` block(s)" in at.error[0].value


def test_without_a_loop_the_branch_stops_where_nothing_runs_the_tool_use():
    at = app("pages/replay.py")
    at.selectbox(key="replay-sample").set_value("list-files").run()
    slider(at, "replay").set_value(2).run()  # step 2: the model asked for `ls`
    open_break(at, "replay", 1)
    at.radio(key="replay-break-pick-1").set_value("no-loop").run()
    click(at, "replay-break-go-1")
    broken = at.session_state["replay"]["trace"].branches[-1]
    assert broken.steps[-1].stage == "decide" and not any(s.stage == "run_tool" for s in broken.steps)
    assert not at.error and any(w.value.startswith("**Nothing runs the tool_use.**") for w in at.warning)
    assert MISTAKES["no-loop"].wrong in [c.value for c in at.code]


def break_live(scenario: str, step: int, mistake: str):
    """A live run stepped to `step` (as shown, from 1) and no further, broken there with `mistake`."""
    at = app(scenario=scenario, step=str(step))
    cursor = step - 1
    assert not at.session_state["live-run"].done and len(at.session_state["live-run"].trace) == step
    open_break(at, "live", cursor)
    at.radio(key=f"live-break-pick-{cursor}").set_value(mistake).run()
    return click(at, f"live-break-go-{cursor}")


def test_the_correct_loop_beside_a_break_is_run_as_far_as_the_broken_one_not_cut_at_the_cursor():
    # The run was only stepped to step 6, the second run_tool: the correct loop still makes call 2, and the
    # comparison shows it (hello-py at step 5: tests/test_engine_break.py)
    at = break_live("two-tools", 6, "results-as-assistant")
    assert not [c for c in at.caption if c.value == "No such call: this loop had already stopped."]
    assert [md.value for md in at.markdown].count("**Call 2** · sent 3 message(s)") == 2  # both columns
    wrong, right = [e for e in at.expander if e.label == "messages sent at call 2"]
    sent = [h.proto.body for h in right.get("html")]
    # the correct loop's call 2: its tool_results in one user message after the assistant response
    assert len(sent) == 3 and '<span class="ls-role">assistant</span>' in sent[1]
    assert '<span class="ls-role">user</span>' in sent[2] and sent[2].count("<b>tool_result</b>") >= 1
    assert '<span class="ls-role">assistant</span>' in [h.proto.body for h in wrong.get("html")][2]
    assert len(at.error) == 1  # only the broken loop is refused


def test_at_a_write_back_step_break_it_here_breaks_that_write_back():
    at = app(scenario="two-tools", step="7")  # step 7 writes both tool_results back; the run was stepped no further
    open_break(at, "live", 6)
    offered = at.radio(key="live-break-pick-6").options
    assert set(offered) == {MISTAKES[n].title for n in ("no-write-back", "wrong-id", "text-first",
                                                         "results-as-assistant")}
    assert not any("no tool_result is written back after this step" in c.value for c in at.caption)
    at.radio(key="live-break-pick-6").set_value("wrong-id").run()
    click(at, "live-break-go-6")
    assert "Broken at step 7; the API refused the call at step 8: 400 invalid_request_error." in [
        c.value for c in at.caption]
    assert at.session_state["live-run"].trace.steps[6].detail.get("mistake") == "wrong-id"


def badges(bodies: list[str]) -> dict[str, set[str]]:
    """{id: the styles its badges are drawn in} in the html `bodies`."""
    import re

    found: dict[str, set[str]] = {}
    for style, text in re.findall(r'<span class="ls-badge ls-data" style="([^"]*)">([^<]*)</span>', "".join(bodies)):
        found.setdefault(text, set()).add(style)
    return found


def test_the_wrong_id_is_never_drawn_in_the_colour_of_the_id_it_should_have_carried():
    at = app("pages/replay.py")
    at.selectbox(key="replay-sample").set_value("recover").run()
    real = at.session_state["replay"]["trace"].steps[4].detail.tool_use_id  # turn 1's id: its colour is toolu_0's own
    slider(at, "replay").set_value(5).run()
    open_break(at, "replay", 4)
    at.radio(key="replay-break-pick-4").set_value("wrong-id").run()
    click(at, "replay-break-go-4")
    drawn = badges([h.proto.body for e in at.expander if e.label.startswith("messages sent at call")
                    for h in e.get("html")])
    assert "toolu_0" in drawn and real in drawn
    assert len(drawn["toolu_0"]) == len(drawn[real]) == 1 and drawn["toolu_0"] != drawn[real]
