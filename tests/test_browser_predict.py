"""Predict, then step in Chromium: a question blocks the reveal, whether Step is clicked or → pressed, and the
browser's steps ahead (pages/views/ahead.py) do not show it either; an answer (a click, or a key 1 to 4) reveals
the step, and a wrong one shows the why, in English, Japanese and Chinese.

Whether the browser shows a step by itself is seen with the server stopped (SIGSTOP): whatever the page shows
then, the browser drew alone."""

from __future__ import annotations

import re

import pytest

from loop.files.transcript import load
from loop.views.questions import question_before
from pages.views.replay import sample_path
from tests.browser import IDLE, settled
from tests.test_browser_ahead import HEADINGS, stopped

NOT_QUITE = {"en": "Not quite.", "ja": "惜しい。", "zh": "不太对。"}
K = 3  # the question before step index 3 of two-tools (its first decide): the page opens on the step before it

# The heading, the step the views are of, whether they were drawn ahead of the server, the question, the verdict
READ = """() => {
    const heading = [...document.querySelectorAll('h3')].map(h => h.textContent).find(t => /\\d/.test(t)) || '';
    const grid = document.getElementById('ls-grid-replay');
    const text = (id) => { const el = document.getElementById(id); return el ? el.innerText : null; };
    const verdict = document.getElementById('ls-verdict-replay');
    return {heading, panel: grid && grid.querySelector('.ls-panel') ? grid.querySelector('.ls-panel').dataset.step : null,
            ahead: !!(grid && grid.dataset.ahead), question: text('ls-question-replay'), verdict: text('ls-verdict-replay'),
            kind: verdict ? verdict.dataset.verdict : null};
}"""
# Past every task the click or key queued in the page (the ahead script shows its step in a setTimeout), and a frame
AFTER_THE_PAGE_S_OWN_WORK = "() => new Promise((done) => setTimeout(() => requestAnimationFrame(() => done()), 0))"


@pytest.fixture(scope="module")
def page(app_server):
    """One page for every check (each opens its own URL on it)."""
    from tests.conftest import _chromium

    context, page = _chromium.page(1280, 900)  # a kept context's: its scripts already in its cache
    yield page
    _chromium.keep(context)


def opened(page, url: str, lang: str):
    page.goto(f"{url}/replay?sample=two-tools&step={K}&predict=on&lang={lang}")
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_selector(f'#ls-grid-replay .ls-panel[data-step="{K}"]', timeout=60_000)
    settled(page)
    trace = load(sample_path("two-tools", lang))
    q = question_before(trace, K, lang)
    assert q is not None and q.kind == "continues"
    return q


def still_before(page, lang: str) -> dict:
    seen = page.evaluate(READ)
    assert seen["heading"].startswith(HEADINGS[lang].format(k=K)) and seen["panel"] == str(K), seen
    assert not seen["ahead"], seen
    return seen


def answered(page, lang: str) -> dict:
    page.wait_for_selector("#ls-verdict-replay", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    seen = page.evaluate(READ)
    assert seen["heading"].startswith(HEADINGS[lang].format(k=K + 1)) and seen["panel"] == str(K + 1), seen
    assert seen["question"] is None
    return seen


def plain(markdown: str) -> str:
    return re.sub(r"[`*]", "", markdown)


@pytest.mark.parametrize("lang, by_key", [("en", True), ("ja", False), ("zh", True)])
def test_a_question_blocks_the_reveal_and_a_wrong_answer_shows_the_why(app_server, chromium, page, lang, by_key):
    url, process = app_server
    q = opened(page, url, lang)
    page.locator(".st-key-replay-predict [data-testid='stTooltipIcon']").click()  # the `?` beside the toggle
    page.evaluate(AFTER_THE_PAGE_S_OWN_WORK)
    assert page.locator(".st-key-replay-predict input").is_checked()  # shows the help, turns nothing off
    wrong = next(n for n in range(len(q.choices) - 1) if n != q.answer)
    with stopped(process):  # the browser alone: neither the click nor → shows the step
        if by_key:
            page.locator("h1").first.click()  # the focus on the page, as a person's click puts it
            page.keyboard.press("ArrowRight")
        else:
            page.locator(".st-key-replay-step button").click()
        page.evaluate(AFTER_THE_PAGE_S_OWN_WORK)
        still_before(page, lang)
    page.wait_for_selector("#ls-question-replay", timeout=60_000)  # the server asks
    page.wait_for_selector(IDLE, timeout=60_000)
    asking = still_before(page, lang)  # and still shows the step before
    assert plain(q.question)[:20] in asking["question"]
    if by_key:
        page.locator("h1").first.click()
        page.keyboard.press(str(wrong + 1))
    else:
        page.locator(f".st-key-replay-choice-{wrong} button").click()
    seen = answered(page, lang)
    assert seen["kind"] == "wrong" and NOT_QUITE[lang] in seen["verdict"]
    assert plain(q.why)[:20] in seen["verdict"]


def test_presenter_mode_asks_large_with_a_count_down_and_a_break_on_recover_is_drawn_beside_the_loop(app_server, chromium,
                                                                                                        page):
    """In presenter mode the question fills the row under the buttons, as large as the note, with a count-down
    the teacher can skip; Break it here on recover (ja) draws the refused call. Both pictures go to docs/."""
    from pathlib import Path

    shots = Path(__file__).resolve().parent.parent / "docs" / "projector"
    shots.mkdir(parents=True, exist_ok=True)
    url, _ = app_server
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/?scenario=recover&lang=ja&step=3&predict=on&present=on")
    page.wait_for_selector(".ls-state-row", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.locator(".st-key-live-step button").click()
    page.wait_for_selector("#ls-question-live.ls-question-big", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    settled(page)
    sizes = page.evaluate("""() => ({
        question: parseFloat(getComputedStyle(document.querySelector('#ls-question-live p:last-child')).fontSize),
        note: parseFloat(getComputedStyle(document.querySelector('.ls-note p')).fontSize),
        countdown: !!document.querySelector('.ls-countdown'),
        reveal: !!document.querySelector('.st-key-live-reveal button'),
        bottom: document.querySelector('.st-key-live-question').getBoundingClientRect().bottom})""")
    assert sizes["question"] >= sizes["note"] > 0 and sizes["countdown"] and sizes["reveal"], sizes
    assert sizes["bottom"] <= 720, sizes  # the whole question on the projector's screen
    page.screenshot(path=str(shots / "predict-presenter-ja.png"))
    # Break it here, on the page a learner has (presenter mode off): recover at step 7, the assistant response
    # left out of messages from there on
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/?scenario=recover&lang=ja&step=7")
    page.wait_for_selector(IDLE, timeout=60_000)
    if page.locator(".ls-state-row").count():  # presenter mode is kept for the session: off
        page.locator(".st-key-present label").click()
        page.wait_for_selector(".ls-state-row", state="detached", timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
    page.locator(".st-key-live-break-6 summary").click()
    page.wait_for_selector(".st-key-live-break-go-6 button", timeout=60_000)
    page.get_by_text("assistant response を messages に append しない").click()
    page.locator(".st-key-live-break-go-6 button").click()
    page.wait_for_selector(".st-key-live-broken [data-testid='stAlertContentError']", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.locator(".st-key-live-broken [data-testid='stAlertContentError']").first.evaluate(
        "e => e.scrollIntoView({block: 'center'})")  # the API's words, with the calls before them
    settled(page)
    error = page.locator(".st-key-live-broken [data-testid='stAlertContentError']").first.inner_text()
    assert "400" in error and "invalid_request_error" in error, error
    page.screenshot(path=str(shots / "break-recover-ja.png"))
