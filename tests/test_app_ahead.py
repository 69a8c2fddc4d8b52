"""The steps a page sends ahead of a click (pages/views/ahead.py) are exactly what the server draws once the
click reaches it: the browser shows them at once, and the server's answer must not change a word."""

from __future__ import annotations

import json
import re

import pytest

from loop.scripted import SCENARIOS
from tests.apptest import app, click
from tests.tables import html_bodies
from tests.test_app_replay import replay_page


def ahead(at, key: str) -> dict:
    """The steps beside the cursor that the page sent ahead, by cursor, and the heading of the one under it."""
    body = next(b for b in html_bodies(at) if 'class="ls-ahead"' in b)
    data = json.loads(re.search(r"const data = (\{.*?\});\ndata\.server", body, re.S).group(1))
    assert data["key"] == key
    return {int(k): step for k, step in data["steps"].items()}, data["status"]


def drawn(at, key: str, ids) -> dict:
    """What the server drew of the step under the cursor, in the form steps are sent ahead in: the heading's
    text, the elements with these `ids`, the views."""
    bodies = html_bodies(at)

    def element(marker: str) -> str:
        found = [b for b in bodies if marker in b]
        assert len(found) == 1, marker
        return found[0]

    heads = [m.value for m in at.markdown if m.value.startswith("### Step ")]
    assert len(heads) == 1
    return {"status": heads[0].removeprefix("### "), "parts": {i: element(f'id="{i}"') for i in ids},
            "views": element(f'id="ls-grid-{key}"')}


def trace_of(at, key: str):
    return at.session_state["live-run"].trace if key == "live" else at.session_state["replay"]["trace"]


def walk_back_and_forth(at, key: str) -> int:
    """Back from the last step to the first, then Step to the last again, checking every click against the
    steps sent ahead of it. Returns the clicks checked."""
    trace = trace_of(at, key)
    checked = 0
    for action, by, stop in (("back", -1, 0), ("step", 1, len(trace) - 1)):
        while trace.cursor != stop:
            k = trace.cursor
            sent, heading = ahead(at, key)
            assert set(sent) == {k - 1, k + 1} & set(range(len(trace)))
            ids = sent[k + by]["parts"]
            assert heading == drawn(at, key, ids)["status"]  # how the browser finds the heading it changes
            click(at, f"{key}-{action}")
            assert trace.cursor == k + by
            assert drawn(at, key, ids) == sent[k + by], (action, k)
            checked += 1
    return checked


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_step_sent_ahead_is_the_step_the_server_draws(scenario):
    at = app(scenario=scenario, step="99")
    n = len(at.session_state["live-run"].trace)
    assert walk_back_and_forth(at, "live") == 2 * (n - 1)  # every Back, and every Step over recorded steps


def test_the_complete_loop_and_a_replay_send_their_steps_ahead_too():
    at = app(scenario="overloaded", profile="complete", step="99")
    n = len(at.session_state["live-run"].trace)
    assert walk_back_and_forth(at, "live") == 2 * (n - 1)
    at = replay_page()
    click(at, "replay-to-end")
    assert walk_back_and_forth(at, "replay") > 0


def test_a_live_run_s_end_is_not_sent_ahead():
    at = app(scenario="two-tools", step="3")
    run = at.session_state["live-run"]
    assert sorted(ahead(at, "live")[0]) == [len(run.trace) - 2]  # Step here executes: there is no step 4 yet


def test_a_presenter_s_steps_are_sent_ahead_with_its_one_row_loop_state():
    at = app(scenario="subagent", step="99")
    at.toggle(key="present").set_value(True).run()
    sent, _ = ahead(at, "live")
    assert all(set(step["parts"]) == {"ls-state-live"} for step in sent.values())
    n = len(at.session_state["live-run"].trace)
    assert walk_back_and_forth(at, "live") == 2 * (n - 1)


def test_two_clicks_the_server_gets_in_one_go_both_count():
    # A click shown ahead at once invites the next one before the server has answered the first: when both
    # reach the page's next run, both must be done, in order (one left out would leave the page on a step
    # the learner did not ask for).
    at = app(scenario="two-tools", step="6")
    trace = at.session_state["live-run"].trace
    at.button(key="live-first").click()
    at.button(key="live-step").click()
    at.run()
    assert not at.exception and trace.cursor == 1  # First, then Step: step 2
