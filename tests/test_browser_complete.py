"""A real Chromium steps the `overloaded` scenario in the complete loop: after each 529 the page counts the wait
down in the seconds really left, Step during the wait calls when it ends, and Skip the wait calls at once.

The server's waits are the rule's at twice their length (LOOPSCOPE_WAIT_SCALE=2: 2–4 s, 4–6 s, 8–10 s): a click
must land inside a wait, and a loaded machine may take a second or two to draw the step that starts it. What the
page shows is the time left of those real waits. Saves docs/complete.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import IDLE, serve_app, wait_for_status

ROOT = Path(__file__).resolve().parent.parent
SCALE = "2"
# The Step button by its key: its name is not enough ("Help for Predict, then step" has it too, and may be drawn
# before it on a page whose buttons are still loading)
STEP = ".st-key-live-step button"


@pytest.fixture(scope="module")
def url(runs_folder):
    """A server of its own: its waits are the real ones at twice their length, where the shared one (conftest.py)
    scales them down to almost nothing, too short to count down or to click during."""
    with serve_app(env={"LOOPSCOPE_WAIT_SCALE": SCALE}) as address:
        yield address


@pytest.fixture
def page(url, new_page):
    return new_page(1600, 1250)  # the screenshot's size from the start: no resize while a wait runs


def wait_box(page) -> str | None:
    """What the wait box says, or None when there is none. Read in one look: the box goes when the wait ends,
    maybe between a count and a read, which would then wait for a box that is not coming back."""
    return page.evaluate("() => document.querySelector('.st-key-live-wait')?.innerText ?? null")


def seconds_left(text: str | None) -> float | None:
    """The seconds the wait box's `text` says are left."""
    found = text and re.search(r"waits ([\d.]+) s before attempt", text)
    return float(found.group(1)) if found else None


# The wait box says less time is left than `first`, or is gone (the wait is over).
COUNTED_DOWN = r"""(first) => {
    const box = document.querySelector('.st-key-live-wait');
    const found = box && /waits ([\d.]+) s before attempt/.exec(box.innerText);
    return !box || (found && parseFloat(found[1]) < first);
}"""


def attempt_said(page, k: int) -> tuple[float, bool]:
    """What the line under the heading says of attempt k's call (one that was answered): the seconds the server
    waited before it, and whether the wait was skipped."""
    said = page.locator("#ls-said-live").inner_text()
    found = re.search(rf"attempt {k}, after waiting ([\d.]+) s", said)
    assert found, said
    return float(found.group(1)), "(the wait was skipped)" in said


def test_step_overloaded_the_page_counts_the_wait_down_and_can_skip_it(page, url):
    page.goto(f"{url}/?scenario=overloaded&profile=complete&step=1")
    page.wait_for_selector(IDLE, timeout=60_000)
    wait_for_status(page, "Step 1 of 1")
    assert page.get_by_text("loop: complete").count() >= 1

    page.locator(STEP).click()  # attempt 1: 529, then a wait of (1 s + jitter) × 2
    wait_for_status(page, "Step 2 of 2 · turn 1 · 2 · the call failed: wait, then retry")
    text = wait_box(page)  # None: the machine drew the step after its wait was over (attempt 2's box is read alike)
    if text is not None:
        assert "Attempt 1 of 4 failed" in text and "529 overloaded_error" in text, text
        first = seconds_left(text)
        assert first is not None and 0 <= first <= 4.0, text
        page.wait_for_function(COUNTED_DOWN, arg=first, timeout=10_000)  # it counts down while the page is idle
    wait_for_status(page, "Step 2 of 2")
    page.wait_for_function("() => document.querySelector('.st-key-live-wait') === null", timeout=10_000)

    page.locator(STEP).click()  # the wait is over: attempt 2 goes at once, fails, and waits (2 s + jitter) × 2
    wait_for_status(page, "Step 3 of 3 · turn 1 · 2 · the call failed: wait, then retry")
    page.locator(".st-key-live-wait").wait_for(timeout=10_000)
    text = wait_box(page)
    assert text and "Attempt 2 of 4 failed" in text and "529 overloaded_error" in text, text
    second = seconds_left(text)
    assert second is not None and 0 <= second <= 6.0, text
    page.wait_for_function(COUNTED_DOWN, arg=second, timeout=10_000)

    # Step during the wait: asked for, it goes when the wait ends, by itself
    page.locator(STEP).click()
    # asked for, not gone: the wait box says so while the wait runs (it did wait: no clock needed)
    page.get_by_text("The call goes out when the wait ends: you clicked Step.").wait_for(timeout=10_000)
    wait_for_status(page, "Step 4 of 4 · turn 1 · 2 · the call failed: wait, then retry", timeout=30_000)

    # Skip the wait: attempt 4 goes now, not 8–10 s later
    page.locator(".st-key-live-wait").wait_for(timeout=10_000)
    left = seconds_left(wait_box(page))
    assert left is not None and left > 1.0
    page.screenshot(path=str(ROOT / "docs" / "complete.png"))
    page.locator(".st-key-live-wait").get_by_role("button", name="Skip the wait").click()
    wait_for_status(page, "Step 5 of 5 · turn 1 · 2 · call the model", timeout=20_000)
    waited, skipped = attempt_said(page, 4)
    assert skipped and waited < 8.0  # sooner than the wait it skipped (8–10 s)

    page.get_by_role("button", name="Run to end").click()
    wait_for_status(page, "Step 12 of 12", timeout=60_000)
    assert page.get_by_text("The loop has ended. The model finished its answer (end_turn).").count() >= 1
