"""The steps a page sends ahead of a click (pages/views/ahead.py) are exactly what the server draws once the
click reaches it: the browser shows them at once, and the server's answer must not change a word."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from loop.engine.scenarios import SCENARIOS
from tests.apptest import app, click
from tests.tables import html_bodies
from tests.test_app_replay import replay_page, upload

ROOT = Path(__file__).resolve().parent.parent


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


HOSTILE = ('<img src=x onerror="alert(1)"><script>alert(2)</script></script><svg onload=alert(3)> '
           '[link](javascript:alert(4)) "quoted" \\u003c/script\\u003e')


def hostile_transcript() -> bytes:
    """The two-tools sample with markup, a script and a javascript: link in every text the model and the tools wrote."""
    data = json.loads((ROOT / "samples" / "two-tools.json").read_text(encoding="utf-8"))
    for message in data["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "text":
                block["text"] += HOSTILE
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                block["content"] += HOSTILE
    return json.dumps(data).encode()


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)
            self._in_script = False


def test_a_hostile_transcript_s_steps_sent_ahead_carry_no_markup_of_its_own():
    # The steps sent ahead are put in the page without the sanitiser st.html applies: what makes them safe is
    # that the page draws every text as text. A transcript full of markup must not get one element or script in.
    at = replay_page()
    upload(at, "hostile.json", hostile_transcript())
    click(at, "replay-to-end")
    seen = 0
    trace = trace_of(at, "replay")
    while trace.cursor > 0:
        sent, _ = ahead(at, "replay")
        for step in sent.values():
            for html in [step["views"], *step["parts"].values()]:
                parsed = Elements()
                parsed.feed(html)
                assert not [tag for tag, _ in parsed.found if tag in ("img", "iframe", "object", "embed")]
                assert not [a for _, attrs in parsed.found for a in attrs if a.startswith("on")]
                assert not [v for _, attrs in parsed.found for v in attrs.values() if v and "javascript:" in v]
                assert all(s.startswith('document.getElementById("ls-') for s in parsed.scripts), parsed.scripts
                seen += HOSTILE.split(" ")[0].replace("<", "&lt;") in html or "&lt;img" in html
        click(at, "replay-back")
    assert seen  # the markup was there, as text
