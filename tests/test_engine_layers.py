"""The runner schedules the chapter's stages; every addition is a layer of its own, and a profile is its list.

What a reader of the chapter's last table relies on: the runner names none of the layers' stages and stays
short, each row of the table is one layer, a profile's numbers are the ones its loop obeys, and a page reads a
live run only through `Run.status()`.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from loop.engine import profiles
from loop import start

ROOT = Path(__file__).resolve().parent.parent
LAYER_STAGES = {"retry", "recover", "refused", "summarize", "compact", "stop"}


def test_the_runner_names_no_stage_of_a_layer_and_stays_under_300_lines():
    source = (ROOT / "loop" / "engine" / "runner.py").read_text()
    named = {node.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not named & LAYER_STAGES, named & LAYER_STAGES
    assert len(source.splitlines()) < 300


def test_only_the_runner_sets_a_runs_own_fields_a_broken_branch_adds_its_layer_through_the_run():
    others = []
    for path in sorted((ROOT / "loop").rglob("*.py")):
        if path.name == "runner.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            others += [f"{path.name}:{node.lineno}" for target in targets for each in ast.walk(target)
                       if isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name)
                       and each.value.id == "run" and each.attr.startswith("_")]
    assert not others, others


def test_a_profile_is_the_list_of_its_layers_and_the_toolset_adds_its_own(shared):
    from loop.engine import layers

    assert [name for name in layers.ORDER] == ["sub_agent", "retry", "recovery", "max_turns", "resume",
                                                 "compaction", "gate", "parallel"]  # one order, outermost first
    assert profiles.PROFILES["minimal"].layers == ()
    assert profiles.PROFILES["complete"].layers == ("retry", "recovery", "resume", "parallel")
    with start("list the files", workspace=shared) as run:  # the chapter's loop: only what every run has
        assert [layer.name for layer in run.layers] == ["max_turns", "gate"]
    with start("list the files", workspace=shared, toolset="s04", profile="complete") as run:
        assert [layer.name for layer in run.layers] == ["sub_agent", "retry", "recovery", "max_turns", "resume",
                                                        "gate", "parallel"]
    with start("list the files", workspace=shared, toolset="s06") as run:
        assert [layer.name for layer in run.layers] == ["max_turns", "compaction", "gate"]


@pytest.mark.parametrize("name", ["sub_agent", "retry", "recovery", "max_turns", "resume", "compaction", "gate",
                                  "parallel"])
def test_each_layer_says_which_row_of_the_chapter_s_table_it_is(name):
    module = {"sub_agent": "layer_subagent", "compaction": "layer_compact"}.get(name, f"layer_{name}")
    doc = ast.get_docstring(ast.parse((ROOT / "loop" / "engine" / f"{module}.py").read_text()))
    assert doc and ("chapter's table" in doc or "course's s0" in doc or "chapter's list" in doc), doc


def test_the_loop_retries_as_often_as_its_profile_says_and_the_steps_say_the_same_number(shared, monkeypatch):
    monkeypatch.setitem(profiles.PROFILES, "complete", dataclasses.replace(profiles.PROFILES["complete"], retries=1))
    with start(scenario="overloaded", workspace=shared, tool_timeout=10) as run:
        run.sleep = lambda seconds: None
        run.run_to_end()
        retries = [s for s in run.trace.steps if s.stage == "retry"]
        assert [(s.detail["attempt"], s.detail["attempts"], s.detail["gave_up"]) for s in retries] == [
            (1, 2, False), (2, 2, True)]
        assert run.state.ended == "retries_exhausted"


def test_a_page_reads_a_live_run_through_its_status(shared):
    with start(scenario="overloaded", workspace=shared, tool_timeout=10) as run:
        status = run.status()
        assert (status.next_stage, status.stage, status.ended, status.attempt, status.attempts) == (
            "user_request", None, None, 1, 4)
        run.execute()
        run.execute()  # the first call fails: a retry step
        status = run.status()
        assert (status.next_stage, status.stage, status.attempt, status.in_child) == ("call_model", "retry", 2, False)
        assert status.pending_tool_use is None and status.running == []
        with pytest.raises(dataclasses.FrozenInstanceError):
            status.attempt = 1


def test_pages_neither_read_nor_set_the_run_s_internals():
    for path in (ROOT / "pages").rglob("*.py"):
        source = path.read_text()
        for internal in ("run.frames", "run.pool", "run.hold_tools", "run.wait_until"):
            assert internal not in source, f"{path.name} uses {internal}"


def test_a_sub_agent_s_steps_say_what_started_it_only_on_its_user_request(shared):
    with start(scenario="subagent", workspace=shared, tool_timeout=10) as run:
        run.run_to_end()
        started = [(s.stage, s.thread == "main") for s in run.trace.steps if "started_by" in s.detail]
        assert started == [("user_request", False)]
