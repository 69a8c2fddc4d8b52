"""The Replay page's "Go to step" slider, moved as a person moves it: a click on its track."""

from __future__ import annotations

from tests.browser import IDLE

SLIDER_TRACK = ".st-key-replay-slider [data-testid='stSlider'] [data-orientation='horizontal'] [data-orientation='horizontal']"
GOTO = ".st-key-replay-goto button"  # the "Go to step" popover that holds the slider
SHOWN_STEP = """async ([before, idle, timeout]) => {
    const started = performance.now();
    const heading = () => [...document.querySelectorAll('h3')].map(h => h.textContent).find(t => /^Step \\d+ of/.test(t)) || '';
    while (heading().startsWith(before) || document.querySelector(idle) === null) {
        if (performance.now() - started > timeout) throw new Error(`still "${before}" after ${timeout} ms`);
        await new Promise(requestAnimationFrame);
    }
    return heading();
}"""


def to_middle(page, n: int) -> int:
    """Open "Go to step", click the slider's track at its middle, as a person would: the step it lands on (0-based)."""
    page.wait_for_selector(IDLE)
    page.locator(GOTO).first.click()
    track = page.locator(SLIDER_TRACK).first
    track.wait_for(timeout=60_000)
    box = track.bounding_box()
    before = next(h for h in page.locator("h3").all_text_contents() if h.startswith("Step "))
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    shown = page.evaluate(SHOWN_STEP, [before.split(" · ")[0] + " ", IDLE, 60_000])
    page.keyboard.press("Escape")  # close the popover again
    page.wait_for_selector(SLIDER_TRACK, state="detached")
    return int(shown.split()[1]) - 1
