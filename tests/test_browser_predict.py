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

    context = _chromium.get().new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


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
