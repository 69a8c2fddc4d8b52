"""Find's keys in a real browser: Alt+↓ and Alt+↑ jump to the next and the previous error of a replay."""

from pathlib import Path

import pytest

from loop.files import transcript
from loop.views.find import ERRORS, Query, matches
from tests.browser import wait_for_status
from tests.test_browser import shortcut_of, wait_for_controls

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def url(app_server):
    return app_server[0]


def test_alt_down_and_alt_up_jump_between_the_errors(url, new_page):
    trace = transcript.load(ROOT / "samples" / "overloaded.json")
    errors = matches(trace, Query(ERRORS))  # the three overloaded calls, each retried
    n = len(trace)
    assert len(errors) == 3
    page = new_page(1600, 1000)
    page.goto(f"{url}/replay?sample=overloaded&step=1")
    wait_for_status(page, f"Step 1 of {n}")
    wait_for_controls(page, "replay")
    page.locator(".st-key-replay-find-next button").first.wait_for()
    assert shortcut_of(page, "replay", "find-next") and shortcut_of(page, "replay", "find-previous")
    page.get_by_role("heading", name="Replay a run").click()  # the focus on the page, as a person's click puts it
    for k in errors:
        page.keyboard.press("Alt+ArrowDown")
        wait_for_status(page, f"Step {k + 1} of {n}", timeout=15_000)
    page.keyboard.press("End")
    wait_for_status(page, f"Step {n} of {n}", timeout=15_000)
    page.keyboard.press("Alt+ArrowUp")
    wait_for_status(page, f"Step {errors[-1] + 1} of {n}", timeout=15_000)
    page.keyboard.press("Alt+ArrowUp")
    wait_for_status(page, f"Step {errors[-2] + 1} of {n}", timeout=15_000)
