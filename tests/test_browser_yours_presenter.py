"""Your loop in presenter mode, as a teacher types the loop live in front of the class: 1280×800, in English, Japanese
and Chinese, in a real Chromium. The editor's text and the code beside the step are no smaller than the presenter
note, the page's long caption is gone, Run is on the first screen, and nothing is cut or wider than its column.
A learner's link (`?code=…`) follows the cursor in the address bar."""

from urllib.parse import parse_qs, urlparse

import pytest

from loop.text.catalogs import say
from loop.yours.listing import CHAPTER_LOOP
from pages.views.permalink import source_of
from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)
from tests.test_projector import tab, truncated  # noqa: F401 (the module's one page, emptied for each test)

CAPTION = "Write the chapter's agent_loop yourself."
# The presenter note's size (presenter.py: .ls-note p, 1.05rem), which no text a class reads may be under.
NOTE_PX = "parseFloat(getComputedStyle(document.documentElement).fontSize) * 1.05"
# The editor's text, through the component's own editor (Ace keeps it on its element as `env.editor`).
EDITOR = "document.querySelector('.ace_editor').env.editor"
ACE_PX = "parseFloat(getComputedStyle(document.querySelector('.ace_editor')).fontSize)"
# Any element of the page wider than the column it is in, or the page wider than the window (a scroll box is not).
TOO_WIDE = """() => {
    const out = [];
    if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push(`page ${document.documentElement.scrollWidth}`);
    for (const column of document.querySelectorAll('[data-testid="stMain"] [data-testid="stColumn"]')) {
        const edge = column.getBoundingClientRect().right;
        for (const el of column.querySelectorAll('*')) {
            const box = el.getBoundingClientRect();
            if (box.width && box.right > edge + 1 && !el.closest('.ls-yours-code')) {
                out.push(`${el.tagName.toLowerCase()}.${String(el.className).slice(0, 30)} ${box.right} > ${edge}`);
            }
        }
    }
    const code = document.querySelector('.ls-yours-code');
    if (code && code.getBoundingClientRect().right > code.parentElement.getBoundingClientRect().right + 1) {
        out.push('the code beside the step');
    }
    return out;
}"""


# The lit line of the code beside the step is inside the code's box as the browser shows it (the box scrolls)
LIT_IN_VIEW = """() => {
    const box = document.querySelector('#ls-yours-code').getBoundingClientRect();
    const lit = document.querySelector('#ls-yours-code div.lit').getBoundingClientRect();
    return lit.top >= box.top - 1 && lit.bottom <= box.bottom + 1;
}"""


# The editor's lines whose text runs past its right edge (their first characters, and by how many pixels)
CUT_AT_THE_EDGE = """() => {
    const edge = document.querySelector('.ace_scroller').getBoundingClientRect().right;
    return [...document.querySelectorAll('.ace_text-layer .ace_line')].map((line) => {
        const range = document.createRange();
        range.selectNodeContents(line);
        return [line.textContent.slice(0, 30), Math.round(range.getBoundingClientRect().right - edge)];
    }).filter(([, past]) => past > 1);
}"""


def editor(page):
    page.frame_locator("iframe[title*='code_editor']").locator(".ace_editor").wait_for(timeout=60_000)
    return next(f for f in page.frames if "code_editor" in f.url)


def presenting(page, lang: str) -> None:
    page.get_by_text(say(lang, "Presenter mode"), exact=True).click()
    page.locator("[data-testid='stSidebar']").wait_for(state="hidden", timeout=30_000)
    page.wait_for_function(f"() => !document.body.innerText.includes({CAPTION!r})", timeout=30_000)
    settled(page)


def lit(page, n: int) -> None:
    page.wait_for_function(f"() => document.querySelector('#ls-yours-code div.lit[data-line=\"{n}\"]') !== null",
                           timeout=60_000)
    settled(page)


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_a_teacher_types_and_runs_the_loop_in_presenter_mode_readable_from_the_back(url, tab, lang):  # noqa: F811
    page = tab
    page.goto(f"{url}/yours?lang={lang}")
    settled(page)
    assert editor(page).evaluate(ACE_PX) < page.evaluate(NOTE_PX)  # the page's usual size, before presenting
    editor(page).wait_for_function("() => document.querySelector('.ace_text-layer .ace_line')", timeout=30_000)
    assert editor(page).evaluate(CUT_AT_THE_EDGE) == [], lang  # the first comment, long in every language, wraps
    presenting(page, lang)
    frame = editor(page)
    frame.wait_for_function(f"() => {ACE_PX} >= 18", timeout=30_000)
    assert frame.evaluate(ACE_PX) >= page.evaluate(NOTE_PX)
    run = page.get_by_role("button", name=say(lang, "Run"), exact=True)
    box = run.bounding_box()
    assert box and box["y"] + box["height"] <= 800, box  # Run is on the first screen
    assert truncated(page) == [], lang
    assert page.evaluate(TOO_WIDE) == [], lang

    run.click()
    page.locator("#ls-yours-code").wait_for(timeout=60_000)
    page.locator(".st-key-yours-step button").click()
    call = CHAPTER_LOOP.splitlines().index("        response = client.messages.create(") + 2  # under the comment
    lit(page, call)
    sizes = page.evaluate("""() => ({
        code: parseFloat(getComputedStyle(document.querySelector('#ls-yours-code div.lit')).fontSize),
        note: parseFloat(getComputedStyle(document.querySelector('.ls-note p')).fontSize),
        state: [...document.querySelectorAll('[data-testid="stMain"] table *')].filter(el => el.textContent.trim()
                    && el.closest('[data-testid="stColumn"]')).map(el => parseFloat(getComputedStyle(el).fontSize))
        })""")
    assert sizes["code"] >= sizes["note"] > 0, sizes
    assert sizes["state"] and min(sizes["state"]) >= sizes["note"], sizes  # the learner's state beside the chapter's
    assert page.locator(".ls-present").count() == 1  # the step drawn as presenter mode draws it
    assert truncated(page) == [], lang
    assert page.evaluate(TOO_WIDE) == [], lang
    if lang == "en":  # the lit line is in the code's view, far down the file as it may be: step 5 runs the tool
        for k in (3, 4, 5):
            page.locator(".st-key-yours-step button").click()
            page.wait_for_function("(k) => new URLSearchParams(location.search).get('step') === String(k)", arg=k)
        tool = CHAPTER_LOOP.splitlines().index("                output = run_tool(block)") + 2
        lit(page, tool)
        assert page.evaluate(LIT_IN_VIEW), tool
        for k in (6, 7):  # the next call: the learner's transition_reason is "tool_result", its state table the widest
            page.locator(".st-key-yours-step button").click()
            page.wait_for_function("(k) => new URLSearchParams(location.search).get('step') === String(k)", arg=k)
        lit(page, call)
        page.wait_for_function("() => document.querySelector('.st-key-yours-state').innerText.includes('tool_result')")
        assert page.evaluate(TOO_WIDE) == [], "step 7"
        # The address bar followed the cursor (Step waited for it above) and holds the run's own code and scenario:
        # a learner's link to this moment, nothing else of the browser's. (A link opened fills the editor and shows
        # its step: tests/test_app_yours_link.py::test_opening_a_link_fills_the_editor_runs_the_code_once_and_shows_
        # step_k_and_a_rerun_does_not_run_it_again; the editor in Chromium shows the text the page gives it:
        # tests/test_browser_yours.py.)
        query = parse_qs(urlparse(page.url).query)
        text = editor(page).evaluate(f"{EDITOR}.getValue()")
        assert query["scenario"] == ["list-files"] and query["step"] == ["7"], query  # the page opens on list-files
        assert source_of(query["code"][0]) == text and text.startswith("# ") and CHAPTER_LOOP in text
        assert set(query) <= {"code", "scenario", "step", "lang", "present"}, query  # present: a teacher's bookmark
