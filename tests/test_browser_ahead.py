"""Back and Step show their step in the browser at once, before the server answers (pages/views/ahead.py),
in every language; the server's answer then changes nothing the learner reads. Shown with the server
stopped (SIGSTOP): whatever the page shows then, the browser drew by itself."""

from __future__ import annotations

import contextlib
import os
import signal
import pytest

from tests.browser import IDLE, PAINTED, settled

# What a learner reads of the step on the screen: the heading, the line saying what happened, the line beside the
# buttons and the views (the diagram's lit stage, the note, the history), which step the views are of, and the step
# the address names (a copied address, a reload opens it).
READ = """() => {
    const heading = [...document.querySelectorAll('h3')].map(h => h.textContent).find(t => /\\d/.test(t)) || '';
    const text = (id) => { const el = document.getElementById(id); return el ? el.innerText : null; };
    const grid = document.getElementById('ls-grid-live');
    return {heading, said: text('ls-said-live'), words: text('ls-words-live'), state: text('ls-state-live'),
            views: grid ? grid.innerText : null,
            panel: grid && grid.querySelector('.ls-panel') ? grid.querySelector('.ls-panel').dataset.step : null,
            diagram: grid && grid.querySelector('.ls-diagram-box svg') ? grid.querySelector('.ls-diagram-box').dataset.step
                                                                     : null,
            ahead: document.querySelector('[data-ahead]') !== null,
            address: new URLSearchParams(location.search).get('step')};
}"""
HEADINGS = {"en": "Step {k} of", "ja": "ステップ {k} /", "zh": "第 {k} /"}


@pytest.fixture
def server(app_server):
    """The app served once for the browser tests (tests/conftest.py), and its process, which a test stops for a
    while (each test lets it go on before it ends)."""
    return app_server


@contextlib.contextmanager
def stopped(process):
    """The server stopped: it reads nothing and answers nothing until the block ends."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


def open_page(page, url: str, heal: int = 3_600_000, **query: str):
    """`page` (the module's one page, tests/conftest.py) at 1280×800, opened at the app with `query`: a new session.

    A click the server does not answer goes back to the server's step after 3 s (`heal`, ahead.py): on a loaded
    machine a test can take longer than that to read the step drawn ahead: the page waits `heal` ms instead (an
    hour, unless the test is about it)."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.add_init_script(HEARD)  # (once would do: a second copy does nothing)
    page.goto(url + "/?" + "&".join(f"{k}={v}" for k, v in query.items()))
    page.evaluate("(ms) => { window.lsAheadHeal = ms; }", heal)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_selector("#ls-grid-live .ls-diagram-box svg", timeout=60_000)
    settled(page)
    return page


def shows(page, lang: str, k: int, ahead: bool, timeout: float = 10_000) -> dict:
    """Wait until the page shows step k (ahead of the server, or as the server drew it); what it shows, read in the
    same look (the server's answer may change the page between two looks)."""
    found = page.wait_for_function(
        """([prefix, k, ahead, idle]) => {
            const heading = [...document.querySelectorAll('h3')].some(h => h.textContent.startsWith(prefix));
            const grid = document.getElementById('ls-grid-live');
            return heading && grid && grid.querySelector(`.ls-panel[data-step="${k}"]`) !== null
                && grid.querySelector(`.ls-diagram-box[data-step="${k}"] svg`) !== null
                && (grid.dataset.ahead === '1') === ahead && (ahead || document.querySelector(idle) !== null)
                && (READ)();
        }""".replace("READ", READ), arg=[HEADINGS[lang].format(k=k), k, ahead, IDLE], timeout=timeout)
    return found.json_value()


# Counts the messages the page's connection has received from the server: `window.lsHeard`. A run's state on the
# page ('running') cannot tell that the server has answered: a loaded browser may draw a whole run at once.
HEARD = """(() => {
    if (window.lsHeard !== undefined) return;
    window.lsHeard = 0;
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
        constructor(...args) { super(...args); this.addEventListener('message', () => { window.lsHeard += 1; }); }
    };
})();"""


def server_drew(page, expected: dict, heard: int, step: int, timeout: float = 60_000) -> dict:
    """Wait until the server has said something since the page had heard `heard` messages (window.lsHeard), its run
    over, the address says `step` (as the server writes it: a link opens this very step), and the page shows
    `expected` (what READ reads); what it shows, read in the same look. For a step the browser drew itself as the
    server's (not ahead): the page shows it before the server has read the click, and, once the server answers, may
    show another step for a while (a click answered after a later one, its address too) and the step's parts one by
    one, some after the run has ended."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        found = page.wait_for_function(
            """([expected, heard, step, idle]) => {
                if (!(window.lsHeard > heard && document.querySelector(idle) !== null)) return false;
                const now = (READ)();
                return new URLSearchParams(location.search).get('step') === String(step)
                    && Object.keys(now).length === Object.keys(expected).length
                    && Object.keys(expected).every((k) => now[k] === expected[k]) && now;
            }""".replace("READ", READ), arg=[expected, heard, step, IDLE], timeout=timeout)
        return found.json_value()
    except PlaywrightTimeout:  # what it shows instead, said by the caller's assert
        assert page.evaluate("window.lsHeard") > heard, "the server has not answered"
        return {**page.evaluate(READ), "step in the address": page.evaluate("location.search")}


# The language picker's name of each language, and the <html lang> it sets.
PICKER = {"ja": ("日本語", "ja"), "zh": ("中文", "zh-CN")}


def test_back_and_step_show_their_step_before_the_server_answers_in_each_language(server, module_tab):
    """One page, in English, then in each other language the sidebar's picker gives it (a page load costs the machine
    more than a language switch and a click): the same checks in each, from the end of the run."""
    url, process = server
    page = open_page(module_tab, url, scenario="two-tools", step="99", lang="en")
    back_and_step_show_their_step_before_the_server_answers(page, process, "en")
    for lang, (name, tag) in PICKER.items():
        page.locator("[data-testid='stSidebar']").get_by_text(name, exact=True).click()
        page.wait_for_function("(tag) => document.documentElement.lang === tag", arg=tag, timeout=60_000)
        shows(page, lang, 9, ahead=False, timeout=60_000)  # where the language before left the run, in this one
        page.locator(".st-key-live-step button").click()  # to the end again: a recorded step
        shows(page, lang, 10, ahead=False, timeout=60_000)
        settled(page)
        back_and_step_show_their_step_before_the_server_answers(page, process, lang)


def back_and_step_show_their_step_before_the_server_answers(page, process, lang: str) -> None:
    """From the end of two-tools (step 10, drawn by the server in `lang`); ends at step 9, drawn by the server."""
    at_end = page.evaluate(READ)
    assert at_end["panel"] == "10" and not at_end["ahead"], lang
    with stopped(process):
        page.locator(".st-key-live-back button").click()
        early = shows(page, lang, 9, ahead=True)
    answered = shows(page, lang, 9, ahead=False)
    assert {**early, "ahead": False} == answered  # the server's answer changes nothing the learner reads
    assert early["said"] and early["words"] and early["views"] and early["heading"] != at_end["heading"]
    with stopped(process):
        page.keyboard.press("ArrowRight")  # → is Step where Step only moves
        early = shows(page, lang, 10, ahead=True)
    assert {**early, "ahead": False} == shows(page, lang, 10, ahead=False) == {**at_end, "ahead": False}
    page.locator(".st-key-live-back button").click()
    middle = shows(page, lang, 9, ahead=False)  # (at the end Step is off until the server says it is not)
    with stopped(process):  # Back, and Step again before the server answers: the step it drew comes back as it was
        page.locator(".st-key-live-back button").click()
        shows(page, lang, 8, ahead=True)
        page.locator(".st-key-live-step button").click()
        assert shows(page, lang, 9, ahead=False) == middle
        heard = page.evaluate("window.lsHeard")
    # The server has answered both clicks (drawing step 8 on the way), the address too.
    assert server_drew(page, middle, heard, step=9) == middle


def test_a_presenter_s_click_shows_its_step_its_one_row_loop_state_and_its_address_at_once(server, module_tab):
    url, process = server
    page = open_page(module_tab, url, scenario="two-tools", step="99")
    page.locator(".st-key-present label").click()
    page.wait_for_selector("#ls-state-live", timeout=60_000)
    settled(page)
    at_end = shows(page, "en", 10, ahead=False)
    assert at_end["address"] == "10"
    with stopped(process):
        page.keyboard.press("ArrowLeft")  # a presenter's clicker sends the arrow keys
        early = shows(page, "en", 9, ahead=True)
    assert early["state"] != at_end["state"] and "turn_count" in early["state"] and early["address"] == "9"
    assert {**early, "ahead": False} == shows(page, "en", 9, ahead=False)
    page.locator(".st-key-live-first button").click()
    shows(page, "en", 1, ahead=False)
    for k in (2, 3, 4, 5):  # four Steps: the address names each step as the page shows it, then as the server does
        with stopped(process):
            page.locator(".st-key-live-step button").click()
            early = shows(page, "en", k, ahead=True)
        assert early["address"] == str(k), early
        assert {**early, "ahead": False} == shows(page, "en", k, ahead=False)


def test_a_click_the_server_does_not_answer_goes_back_to_the_server_s_step_until_it_does(server, module_tab):
    url, process = server
    page = open_page(module_tab, url, scenario="two-tools", step="99")
    with stopped(process):
        page.locator(".st-key-live-back button").click()
        shows(page, "en", 9, ahead=True)
        page.evaluate("() => { window.lsAheadHeal = 1; }")  # read: the wait for an answer may end now
        shows(page, "en", 10, ahead=False, timeout=30_000)  # no answer yet: the step the server drew last comes back
    shows(page, "en", 9, ahead=False)  # the click was not lost: the server answers it


def test_a_step_that_executes_a_stage_waits_for_the_server(server, module_tab):
    url, process = server
    page = open_page(module_tab, url, scenario="two-tools", step="3")
    with stopped(process):
        page.locator(".st-key-live-step button").click()
        page.evaluate(PAINTED)  # the click's handler has run (it draws a step ahead in a task of its own, at once)
        now = page.evaluate(READ)
        assert now["heading"].startswith("Step 3 of 3") and now["panel"] == "3" and not now["ahead"]
    shows(page, "en", 4, ahead=False, timeout=30_000)
