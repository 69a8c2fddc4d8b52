"""One record a step: `loop.views.step.view(trace, i, lang)` is plain data, and the pages draw step i from it alone."""

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import pages.views.current as current
from loop.files import transcript
from loop.views.step import Crumb, StepView, ThreadView, view
from loop.engine.trace import Trace

from tests.apptest import app
from tests.tables import html_bodies

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ["two-tools", "parallel", "subagent", "compact", "overloaded", "recover"]


def sample(name: str) -> Trace:
    return transcript.load(ROOT / "samples" / f"{name}.json")


def rebuilt(record: StepView) -> StepView:
    """The record after a trip through JSON: what another process (or a file) would have of it."""
    data = json.loads(json.dumps(dataclasses.asdict(record)))

    def thread(d):
        return ThreadView(**d) if d is not None else None

    return StepView(**{**data, "thread": thread(data["thread"]), "sub_agent": thread(data["sub_agent"]),
                       "threads": tuple(thread(d) for d in data["threads"]),
                       "breadcrumb": tuple(Crumb(thread(c["thread"]), c["to"]) for c in data["breadcrumb"])})


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_step_s_record_is_frozen_plain_data(name):
    trace = sample(name)
    for i in range(-1, len(trace)):
        record = view(trace, i, "ja")
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.status = "changed"
        again = rebuilt(record)  # nothing in it but JSON's data: no trace, no step, no callable
        assert again.status == record.status and again.messages == record.messages, (name, i)
        assert json.dumps(dataclasses.asdict(again)) == json.dumps(dataclasses.asdict(record)), (name, i)


WALKS = {"path", "steps_of", "previous_in_thread", "last_in_thread", "opened_at", "returned_at", "messages_at",
         "window_at", "results_at", "request_at", "response_at", "tool_uses_at", "new_blocks_at", "history_before",
         "thread_of", "has_threads", "has_compaction", "current", "threads", "messages"}


class Sealed(Trace):
    """A trace whose steps a page may count and move over, and nothing more: the record must carry the rest."""

    def __init__(self, trace: Trace):
        super().__init__(trace.meta, steps=list(trace.steps), cursor=trace.cursor, branches=trace.branches,
                         threads=trace.threads)
        object.__setattr__(self, "sealed", True)

    def __getattribute__(self, name):
        if name in WALKS and object.__getattribute__(self, "__dict__").get("sealed"):
            raise AssertionError(f"a page read trace.{name} instead of the step's record")
        return super().__getattribute__(name)


def drawn(at) -> list[str]:
    """What the page shows: every HTML element and every Markdown text, in page order."""
    return html_bodies(at) + [m.value for m in at.main.get("markdown")]


@pytest.mark.parametrize("name", ["subagent", "compact", "overloaded"])
def test_the_replay_page_draws_each_step_from_its_record_alone(name, monkeypatch):
    """The Replay page, given a trace it can only count and move over, and each step's record after a trip through
    JSON, draws every step exactly as it draws it from the trace itself."""
    at = app("pages/replay.py", sample=name, step="1")
    trace = at.session_state["replay"]["trace"]
    expected = []
    for i in range(len(trace)):
        trace.goto(i)
        at.run()
        expected.append(drawn(at))

    whole = sample(name)  # the record is made from a trace of its own; the page never sees that one
    monkeypatch.setattr(current, "view", lambda _trace, k, lang: rebuilt(view(whole, k, lang)))
    sealed = Sealed(trace)
    at.session_state["replay"]["trace"] = sealed
    for i in range(len(trace)):
        sealed.goto(i)
        at.run()
        assert not at.exception, at.exception
        assert drawn(at) == expected[i], f"{name}: step {i + 1} drawn differently from its record"


# What pages may still use from loop.views.parts: helpers of a block's content, the history's window arithmetic, the
# Pairs table's column names, and the whole-run tables and exports (drawn only when asked for).
ALLOWED = {"window", "COLLECTED", "THREAD_COLUMN", "id_colour", "screen_colours", "result_text", "pairs_table", "steps_table",
           "growth_table"}


def test_pages_read_a_step_only_through_its_record():
    for path in sorted([ROOT / "app.py", *(ROOT / "pages").rglob("*.py")]):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "loop.views.parts":
                assert {a.name for a in node.names} <= ALLOWED, f"{path.name} imports {[a.name for a in node.names]}"
            if isinstance(node, ast.ImportFrom) and node.module == "loop.views.diagram":
                assert "svg_at" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "trace":
                assert node.attr not in WALKS | {"steps"}, \
                    f"{path.name}:{node.lineno} reads trace.{node.attr}"
