"""Minimal beside complete in a real Chromium at 1280×800, in English, Japanese and Chinese: at the call where the
minimal loop stops, its sent messages are expanded in both columns; every line of them stays inside its own column
(it wraps, or it scrolls in a box made to scroll), and none runs over the other column."""

import pytest

from loop.text.catalogs import say

from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)
from tests.test_browser_lang import NAMES, TAGS
from tests.test_projector import LANGS


@pytest.fixture
def tab(module_tab):
    """The module's one page (tests/conftest.py): each scenario opens its URL in it, a new session of the app."""
    return module_tab


# Every element inside each bordered column of calls that is wider than the column, or reaches past its right edge.
# An element inside a box made to scroll (overflow-x auto or scroll) that itself fits is the box's to show: not
# counted. What is drawn at no size (a collapsed expander's content) is not counted either.
SPILLS = r"""() => {
    const out = [];
    const columns = [...document.querySelectorAll('[data-testid="stColumn"]')]
        .filter(c => c.querySelector('[data-testid="stExpander"]'));
    for (const column of columns) {
        const edge = column.getBoundingClientRect();
        const fits = el => {
            const b = el.getBoundingClientRect();
            return b.left >= edge.left - 0.5 && b.right <= edge.right + 0.5;
        };
        const scrollBox = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX) && fits(el);
        for (const el of column.querySelectorAll('*')) {
            const box = el.getBoundingClientRect();
            if (box.width === 0 && box.height === 0) continue;
            let inBox = false;
            for (let up = el.parentElement; up && up !== column; up = up.parentElement) {
                if (scrollBox(up)) { inBox = true; break; }
            }
            if (inBox) continue;
            if (scrollBox(el)) continue;
            if (el.scrollWidth > edge.width + 0.5 || !fits(el)) {
                out.push(`<${el.tagName.toLowerCase()} class="${el.className}"> ${Math.round(el.scrollWidth)} px wide `
                         + `in a ${Math.round(edge.width)} px column: ${el.textContent.slice(0, 60)}`);
            }
        }
    }
    return {columns: columns.length, spills: out};
}"""


def compare_page(tab, url, lang: str, scenario: str):  # noqa: F811
    """The Compare page on `scenario` in `lang`. The tests go through each scenario's languages in turn: a page
    already on the scenario is switched to the next language with the sidebar's picker, as a learner does (a page
    load costs the machine a second or two more than the picker's rerun); another scenario is opened by its link.
    Either way the page then shows what a fresh one shows (the picker keeps the expanders as they were opened:
    the call where the minimal loop stops, and no Raw JSON, which its check closes again)."""
    tab.set_viewport_size({"width": 1280, "height": 800})
    if f"scenario={scenario}" in tab.url and "/compare" in tab.url:
        if tab.evaluate("document.documentElement.lang") != TAGS[lang]:  # (a click on the chosen one unchooses it)
            tab.locator("[data-testid='stSidebar']").get_by_text(NAMES[lang], exact=True).click()
    else:
        tab.goto(f"{url}/compare?lang={lang}&scenario={scenario}")
    # the document says the page's language (tests/test_browser_lang.py says why): the picker's rerun has drawn it
    tab.wait_for_function(f"document.documentElement.lang === {TAGS[lang]!r}", timeout=120_000)
    # both runs made and drawn: the page's run is over and the call where the minimal loop stops is expanded
    tab.wait_for_function("""() => document.querySelectorAll('[data-testid="stColumn"] [data-testid="stExpander"] '
                                  + 'details[open]').length >= 2""", timeout=120_000)
    settled(tab)
    assert tab.evaluate("document.documentElement.lang") == TAGS[lang]
    assert tab.locator("h1").first.inner_text() == say(lang, "Minimal beside complete")  # in the language asked
    return tab


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("scenario", ["long-answer", "big-context"])
def test_the_sent_messages_stay_inside_their_column_where_the_minimal_loop_stops(tab, url, lang, scenario):  # noqa
    # (F811: tab and url are fixtures)
    page = compare_page(tab, url, lang, scenario)
    facts = page.evaluate(SPILLS)
    assert facts["columns"] >= 4, facts  # at least two rows of calls, side by side
    assert facts["spills"] == [], f"{scenario}, {lang}: " + "\n".join(facts["spills"][:10])
    if scenario == "long-answer" and lang in ("en", "ja"):  # on the page already open
        the_raw_json_of_a_call_scrolls_inside_its_column(page)


def the_raw_json_of_a_call_scrolls_inside_its_column(page):
    opened = page.evaluate("() => document.querySelectorAll('[data-testid=\"stExpander\"] details[open]').length")
    page.locator("[data-testid='stExpander'] summary", has_text="Raw JSON").nth(2).click()  # call 2, the minimal
    # loop's last (left of the second row): its messages are open above it
    # until the opened Raw JSON holds the request (it is filled when opened): not any code block of the page
    page.wait_for_function("""(n) => document.querySelectorAll('[data-testid="stExpander"] details[open]').length > n
                              && [...document.querySelectorAll('[data-testid="stColumn"] [data-testid="stExpander"]'
                                  + ' details[open] [data-testid="stCode"] pre')]
                                 .some(pre => pre.textContent.includes('"max_tokens"'))""",
                           arg=opened, timeout=60_000)
    settled(page)
    facts = page.evaluate(SPILLS)
    assert facts["spills"] == [], "\n".join(facts["spills"][:10])
    box = page.evaluate("""() => { const code = [...document.querySelectorAll(
        '[data-testid="stColumn"] [data-testid="stExpander"] details[open] [data-testid="stCode"] pre')]
        .find(pre => pre.textContent.includes('"max_tokens"'));
        return code && {height: code.clientHeight, content: code.scrollHeight}; }""")
    assert box and box["content"] > box["height"] > 0, box  # the whole request, in a box that scrolls
    # closed again, as a fresh page has it: the next language's look (compare_page) is of the page a learner opens
    page.locator("[data-testid='stExpander'] summary", has_text="Raw JSON").nth(2).click()
    page.wait_for_function("""(n) => document.querySelectorAll('[data-testid="stExpander"] details[open]').length === n
                              && ![...document.querySelectorAll('[data-testid="stColumn"] [data-testid="stExpander"]'
                                  + ' details[open] [data-testid="stCode"] pre')]
                                 .some(pre => pre.textContent.includes('"max_tokens"'))""", arg=opened, timeout=60_000)
    settled(page)
