"""A real Chromium steps the `overloaded` scenario in the complete loop: after each 529 the page counts the wait
down in the seconds really left, Step during the wait calls when it ends, and Skip the wait calls at once.

The server's waits are scaled to half (LOOPSCOPE_WAIT_SCALE=0.5: 0.5–1 s, 1–1.5 s, 2–2.5 s) so the test takes
seconds; what the page shows is the time left of those real waits. Saves docs/complete.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import IDLE, serve_app, wait_for_status

ROOT = Path(__file__).resolve().parent.parent
SCALE = "0.5"
# The Step button by its key: its name is not enough ("Help for Predict, then step" has it too, and may be drawn
# before it on a page whose buttons are still loading)
STEP = ".st-key-live-step button"


@pytest.fixture(scope="module")
def url(runs_folder):
    """A server of its own: its waits are the real ones at half their length, where the shared one (conftest.py)
    scales them down to almost nothing, too short to count down or to click during."""
    with serve_app(env={"LOOPSCOPE_WAIT_SCALE": SCALE}) as address:
        yield address


@pytest.fixture
def page(url, new_page):
    return new_page(1600, 1250)  # the screenshot's size from the start: no resize while a wait runs


def seconds_left(page) -> float | None:
    """The seconds the wait box says are left, or None when there is no wait box.

    Read in one look: the box goes when the wait ends, maybe between a count and a read, which would then wait for
    a box that is not coming back."""
    text = page.evaluate("() => document.querySelector('.st-key-live-wait')?.innerText ?? null")
    if text is None:
        return None
    found = re.search(r"waits ([\d.]+) s before attempt", text)
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

    page.locator(STEP).click()  # attempt 1: 529
    wait_for_status(page, "Step 2 of 2 · turn 1 · 2 · the call failed: wait, then retry")
    page.locator(".st-key-live-wait").wait_for(timeout=10_000)
    text = page.locator(".st-key-live-wait").inner_text()
    assert "Attempt 1 of 4 failed" in text and "529 overloaded_error" in text
    first = seconds_left(page)
    # (1 s + jitter) × 0.5, counted in real seconds: on a loaded machine the wait may be over (0.0) by this look
    assert first is not None and 0 <= first <= 1.0
    page.wait_for_function(COUNTED_DOWN, arg=first, timeout=10_000)  # it counts down while the page is idle

    wait_for_status(page, "Step 2 of 2")
    page.wait_for_function("() => document.querySelector('.st-key-live-wait') === null", timeout=10_000)
    page.locator(STEP).click()  # the wait is over: attempt 2 goes at once
    wait_for_status(page, "Step 3 of 3 · turn 1 · 2 · the call failed: wait, then retry")
    page.locator(".st-key-live-wait").wait_for(timeout=10_000)
    assert "Attempt 2 of 4 failed" in page.locator(".st-key-live-wait").inner_text()

    # Step during the wait: asked for, it goes when the wait ends, by itself
    page.locator(STEP).click()
    # asked for, not gone: the wait box says so while the wait runs (it did wait: no clock needed)
    page.get_by_text("The call goes out when the wait ends: you clicked Step.").wait_for(timeout=10_000)
    wait_for_status(page, "Step 4 of 4 · turn 1 · 2 · the call failed: wait, then retry", timeout=20_000)

    # Skip the wait: attempt 4 goes now, not 2–2.5 s later
    page.locator(".st-key-live-wait").wait_for(timeout=10_000)
    left = seconds_left(page)
    assert left is not None and left > 1.0
    page.screenshot(path=str(ROOT / "docs" / "complete.png"))
    page.locator(".st-key-live-wait").get_by_role("button", name="Skip the wait").click()
    wait_for_status(page, "Step 5 of 5 · turn 1 · 2 · call the model", timeout=20_000)
    waited, skipped = attempt_said(page, 4)
    assert skipped and waited < 2.0  # sooner than the wait it skipped (2–2.5 s)

    page.get_by_role("button", name="Run to end").click()
    wait_for_status(page, "Step 12 of 12", timeout=60_000)
    assert page.get_by_text("The loop has ended. The model finished its answer (end_turn).").count() >= 1
