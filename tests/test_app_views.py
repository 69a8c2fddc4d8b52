"""The plain-data views the pages draw: tables, colours, windows, the diagram."""

import csv
import io
import json
import os
import subprocess
import sys
import re
from pathlib import Path

import pandas as pd

from loop.files import transcript
from loop.views.diagram import svg, svg_at
from loop.views.narrate import describe
from loop.views.parts import (
    ID_COLOURS,
    PAIR_COLUMNS,
    id_colour,
    last_call_at,
    pairs_table,
    pending_response,
    short,
    state_rows,
    status_line,
    steps_table,
    steps_window,
    what_happened,
    window,
)

from tests.apptest import app, click, download, slider

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def sample(name):
    return transcript.load(SAMPLES / f"{name}.json")


def test_every_scenario_has_a_sample_that_loads_strictly():
    from loop.engine.scenarios import SCENARIOS

    for name in SCENARIOS:
        trace = sample(name)
        assert trace.steps[-1].ended, name
        assert "killed by signal" not in transcript.dumps(trace), f"{name}: a flaky tool run was recorded"


# Colours worked out once: a replay tomorrow, in another process, must paint these ids the same.
KNOWN_COLOURS = {"toolu_01667544294d325c0a45aec8": "blue", "toolu_6bfab06bb066e2c02c3950f2": "violet",
                 "toolu_abc": "green", "call_1": "orange", "toolu_03": "blue", "toolu_04": "gray",
                 "toolu_06": "violet", "toolu_11": "yellow"}


def test_id_colour_is_the_same_in_every_process_and_never_red():
    assert {i: id_colour(i) for i in KNOWN_COLOURS} == KNOWN_COLOURS
    other = subprocess.run(  # a fresh interpreter with another hash seed
        [sys.executable, "-c", "import json, sys; from loop.views.parts import id_colour; "
         "print(json.dumps({i: id_colour(i) for i in json.loads(sys.argv[1])}))", json.dumps(list(KNOWN_COLOURS))],
        capture_output=True, text=True, check=True, cwd=SAMPLES.parent, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert json.loads(other.stdout) == KNOWN_COLOURS
    assert {id_colour(f"toolu_{i}") for i in range(200)} == set(ID_COLOURS)
    assert "red" not in ID_COLOURS  # red means is_error


def test_pairs_table_at_the_end_of_two_tools():
    trace = sample("two-tools")
    table = pairs_table(trace, len(trace) - 1)
    assert list(table["status"]) == ["paired", "paired"]
    assert list(table["turn"]) == [1, 1]
    assert list(table["tool"]) == ["bash", "bash"]
    uses = [b["id"] for b in trace.messages[1]["content"] if b["type"] == "tool_use"]
    assert list(table["id"]) == uses
    assert list(table["colour"]) == [id_colour(u) for u in uses]


def test_pairs_table_shows_results_collected_but_not_written_back():
    trace = sample("two-tools")
    first_run = next(i for i, s in enumerate(trace.steps) if s.stage == "run_tool")
    table = pairs_table(trace, first_run)
    assert list(table["status"]) == ["waiting", "waiting"]
    assert table["result"][0].startswith("(collected, not yet written back)")
    assert table["result"][1] == ""


def test_a_collected_result_shows_its_is_error_before_it_is_written_back():
    trace = sample("recover")
    first_run = next(i for i, s in enumerate(trace.steps) if s.stage == "run_tool")
    assert trace.steps[first_run].detail["is_error"]  # `cat` of a file that is not there yet
    table = pairs_table(trace, first_run)
    assert list(table["status"]) == ["waiting"] and list(table["is_error"]) == [True]


def test_the_narration_says_what_each_stage_did():
    trace = sample("two-tools")
    run_tool = describe(trace, 4)
    assert run_tool.startswith("[5] turn 1 · 4 · run a tool_use: bash {\"command\": \"date -u '+%Y-%m-%d %H:%M UTC'\"} → ")
    assert trace.steps[4].detail["output"].strip() in run_tool and trace.steps[4].detail["tool_use_id"] in run_tool
    assert describe(trace, 6) == ("[7] turn 1 · 5 · write tool_results back: messages ← user: 2 tool_result block(s); "
                                  "turn 1 ends, turn_count 1 → 2, transition_reason=tool_result")  # the turn it ends
    assert what_happened(trace, 9) == "the loop ends: the model finished its answer (end_turn)"


def test_pairs_table_marks_errors_from_the_recover_sample():
    trace = sample("recover")
    table = pairs_table(trace, len(trace) - 1)
    assert list(table["is_error"]) == [True, False]
    assert list(table["turn"]) == [1, 2]
    assert "No such file" in table["result"][0]


def test_steps_table_has_a_row_per_step_and_marks_the_cursor():
    trace = sample("two-tools")
    table = steps_table(trace)
    assert len(table) == len(trace)
    assert list(table["stage"])[:4] == ["user_request", "call_model", "append_assistant", "decide"]
    assert [None if pd.isna(x) else x for x in table["turn"]] == [None, 1, 1, 1, 1, 1, 1, 2, 2, 2]  # request: before turn 1
    assert list(table["turn_count"]) == [1, 1, 1, 1, 1, 1, 2, 2, 2, 2]  # the write-back (step 7) moves it
    last = table.iloc[-1]
    assert (last["stop_reason"], last["messages"]) == ("end_turn", 4)
    assert pd.isna(last["transition_reason"])  # None, drawn as None
    assert table["transition_reason"].iloc[-2] == "tool_result"
    assert steps_window(trace, 3) == (0, len(trace))  # a short run: every row


def test_the_steps_window_keeps_the_cursor_in_view_in_a_long_run():
    trace = sample("hello-py")
    assert steps_window(trace, 10, around=2) == (8, 13)  # the cursor in the middle
    assert steps_window(trace, 0, around=2) == (0, 5)  # at the start: the first five
    assert steps_window(trace, len(trace) - 1, around=2) == (len(trace) - 5, len(trace))  # at the end: the last five


def test_state_rows_and_status_line():
    trace = sample("two-tools")
    end = len(trace) - 1
    assert dict(state_rows(trace, end)) == {"messages (count)": "4", "turn_count": "2", "transition_reason": "None"}
    assert dict(state_rows(trace, -1)) == {"messages (count)": "0", "turn_count": "1", "transition_reason": "None"}
    assert dict(state_rows(trace, 6))["turn_count"] == "1 → 2"  # the write-back
    assert status_line(trace, end) == "Step 10 of 10 · turn 2 · stop_reason: go on or end?"
    assert status_line(trace, 0) == "Step 1 of 10 · before turn 1 · 1 · user request into messages"
    assert status_line(trace, -1) == "Step 0 of 10 · not started"


def test_window_pages_back_and_never_past_the_oldest():
    assert window(5, 20) == (0, 5)
    assert window(5000, 20) == (4980, 5000)
    assert window(5000, 20, 1) == (4960, 4980)
    assert window(50, 20, 1) == (10, 30)
    assert window(50, 20, 2) == (0, 20)


def test_the_newest_window_keeps_its_first_message_while_messages_are_added():
    # Each step that adds a message adds it below the ones drawn; the window moves on only every `snap` messages.
    starts = [window(total, 12, snap=4)[0] for total in range(120, 130)]
    assert starts == [108, 108, 108, 108, 112, 112, 112, 112, 116, 116]
    assert all(12 <= total - start < 16 for total, start in zip(range(120, 130), starts))  # 12 to 15 drawn
    assert window(50, 20, 9) == (0, 20)


def test_pending_response_and_last_call():
    trace = sample("two-tools")
    call = next(i for i, s in enumerate(trace.steps) if s.stage == "call_model")
    assert pending_response(trace, call)["stop_reason"] == "tool_use"
    assert pending_response(trace, call + 1) is None
    assert last_call_at(trace, call + 3) == call
    assert last_call_at(trace, 0) is None


def test_short_cuts_and_flattens():
    assert short("a\n  b") == "a b"
    assert short({"command": "ls"}) == '{"command": "ls"}'
    assert len(short("x" * 500, 40)) == 40


def lit(picture: str) -> list[str]:
    return re.findall(r'<g class="ls-node ls-lit" data-stage="(\w+)"', picture)


def taken(picture: str) -> list[str]:
    return re.findall(r'<g class="ls-edge ls-taken" data-edge="([\w-]+)"', picture)


def test_diagram_lights_the_stage_and_the_edge_taken():
    plain = svg()
    assert plain.startswith("<svg") and lit(plain) == [] and taken(plain) == []
    trace = sample("two-tools")
    stages = [s.stage for s in trace.steps]
    second_tool = len(stages) - 1 - stages[::-1].index("run_tool")
    at_tool = svg_at(trace, second_tool)
    assert lit(at_tool) == ["run_tool"] and taken(at_tool) == ["tools-tools"]  # the "next tool_use" loop
    end = svg_at(trace, len(trace) - 1)  # decide, ending: the edge to the end is drawn, the end is green
    assert lit(end) == ["decide"] and taken(end) == ["decide-done"]
    assert '<g class="ls-node ls-ended" data-stage="stop">' in end
    assert taken(svg_at(trace, 6)) == ["tools-back"] and taken(svg_at(trace, 7)) == ["back-model"]


def test_the_diagram_numbers_each_of_the_five_stages_once_as_the_chapter_does():
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg())
    numbers = [t.split(" · ")[0] for t in texts if re.match(r"\d · ", t)]
    assert sorted(numbers) == ["1", "2", "3", "4", "5"], texts


def test_the_turn_box_holds_stages_2_to_5_and_names_the_turn_of_the_step():
    trace = sample("hello-py")
    for i, step in enumerate(trace.steps):
        picture = svg_at(trace, i)
        shown = re.search(r">turn (\d+)</text>", picture).group(1)
        assert int(shown) == max(1, step.turn), (i, step.stage)


def chart_rows(at) -> pd.DataFrame:
    """The rows the first chart on the page draws (Streamlit sends them to the browser as Arrow)."""
    import pyarrow

    return pyarrow.ipc.open_stream(at.get("vega_lite_chart")[0].proto.datasets[0].data.data).read_all().to_pandas()


def test_context_growth_chart_and_exports_follow_the_cursor():
    from loop.views.parts import growth_table

    at = app(scenario="hello-py", step="99")
    run = at.session_state["live-run"]
    growth = growth_table(run.trace, run.trace.cursor)
    assert list(growth.index) == [1, 2, 3] and list(growth["messages sent"]) == [1, 3, 5]  # the context grows
    assert growth["input tokens"].is_monotonic_increasing and growth["input tokens"].iloc[0] > 0
    assert len(at.get("vega_lite_chart")) == 0  # drawn only when asked for
    at.toggle(key="live-growth").set_value(True).run()
    assert len(at.get("vega_lite_chart")) == 2
    assert chart_rows(at)["messages sent"].tolist() == [1, 3, 5]  # what the chart draws
    assert "Every turn sends the whole history again" in " ".join(c.value for c in at.caption)
    at.session_state["live-exports"] = True  # open "Export this step"
    at.run()
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Save transcript", "Markdown", "LoopState CSV", "Pairs CSV"]
    _, markdown = download(at, "live-export-md")
    assert "python3 hello.py" in markdown.decode() and "- steps: 14 of 14" in markdown.decode()
    uses = [b["id"] for m in run.trace.messages for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert [f"| `{u}` | bash | paired | False |" in markdown.decode() for u in uses] == [True, True]  # the pairs
    slider(at, "live").set_value(2).run()  # after the first call only
    assert chart_rows(at)["messages sent"].tolist() == [1]  # the chart follows the cursor
    name, markdown = download(at, "live-export-md")  # what the learner gets: the history up to the cursor
    assert name == "create-hello-py-that-prints-a-greeting-t-step-2.md"
    text = markdown.decode()
    assert "- steps: 2 of 14" in text and "### 0. user" in text and "### 1." not in text
    assert "python3 hello.py" not in text
    name, pairs = download(at, "live-export-pairs")
    assert name.endswith("pairs-step-2.csv") and pairs.decode().splitlines() == [",".join(PAIR_COLUMNS)]  # no pair yet
    _, steps = download(at, "live-export-steps")  # the LoopState of every step, whatever the cursor
    rows = list(csv.DictReader(io.StringIO(steps.decode())))
    assert len(rows) == 14 and rows[1]["stage"] == "call_model" and rows[-1]["stop_reason"] == "end_turn"


def test_exports_are_drawn_only_when_their_expander_is_open():
    at = app()
    for _ in range(3):
        click(at, "live-step")
    keys = ("live-export-md", "live-export-steps", "live-export-pairs")
    drawn = lambda: {k for k in keys if any(getattr(b, "key", None) == k for b in at.get("download_button"))}  # noqa: E731
    assert drawn() == set()  # closed: nothing registered with the server on a click
    at.session_state["live-exports"] = True  # the learner opens "Export this step"
    at.run()
    assert not at.exception and drawn() == set(keys)
