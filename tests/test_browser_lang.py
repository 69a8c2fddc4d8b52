"""The document says the page's language (`<html lang>`): a browser picks the glyphs by it, so Chinese is drawn with
Chinese forms, not Japanese ones, and a screen reader reads each page in its own language.

Each page's own language is checked where the tests open it in each language anyway (Step through, the Mistakes
lab and About in tests/test_projector.py, Compare in tests/test_browser_compare.py): a page load costs a second
of the machine's CPU. Here: the picker changes it, from English to Japanese, Japanese to Chinese and Chinese back
to English, on one page whose sidebar choices are checked at each language too."""

from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)

TAGS = {"en": "en", "ja": "ja", "zh": "zh-CN"}


# The sidebar's settings as the browser shows them: each radio's chosen option (its index, -1 when none is), the
# select boxes' shown values, the typed task, the numbers, the gate, and whether a real model's fields are there.
SIDEBAR = """() => {
    const q = (key) => document.querySelector('.st-key-' + key);
    const chosen = (key) => [...q(key).querySelectorAll('input[type=radio]')].findIndex((i) => i.checked);
    const shown = (key) => q(key).querySelector('input[role=combobox]').value;
    const error = document.querySelector('[data-testid=stSidebar] [data-testid=stAlertContentError]');
    return {model: chosen('set-model'), loop: chosen('set-profile'), task: shown('set-scenario'),
            toolset: shown('set-toolset'), typed: q('set-task') ? q('set-task').querySelector('textarea').value : null,
            timeout: q('set-tool-timeout').querySelector('input').value, turns: q('set-max-turns').querySelector('input').value,
            gate: q('set-approve').querySelector('input').checked, realModel: !!q('set-model-id'),
            error: error ? error.innerText : null};
}"""
TASK = "Count the files in the workspace."


def _choose(page, key: str, option: str) -> None:
    """Pick `option` in the select box `key`, as a person does: open its list, click the option."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wanted = page.get_by_role("option", name=option, exact=True)
    for _ in range(5):  # a rerun that lands as the list opens closes it: open it again
        settled(page)
        if page.locator(f".st-key-{key} input[role=combobox]").get_attribute("aria-expanded") != "true":
            page.locator(f".st-key-{key} button[aria-label='Open']").click()
        try:
            wanted.click(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    page.wait_for_function("([key, option]) => document.querySelector(`.st-key-${key} input[role=combobox]`)"
                           ".value === option", arg=[key, option])
    settled(page)


def _number(page, key: str, value: int) -> None:
    field = page.locator(f".st-key-{key} input")
    field.fill(str(value))
    field.press("Enter")
    page.wait_for_function("([key, value]) => document.querySelector(`.st-key-${key} input`).value === value"
                           " && document.querySelector(`[data-test-script-state='notRunning']`)", arg=[key, str(value)])
    settled(page)


def _switch(page, lang: str) -> None:
    page.locator("[data-testid='stSidebar']").get_by_text(NAMES[lang], exact=True).click()
    page.wait_for_function(f"document.documentElement.lang === {TAGS[lang]!r}")
    settled(page)


NAMES = {"en": "English", "ja": "日本語", "zh": "中文"}


def test_a_language_switch_keeps_every_choice_of_the_sidebar_and_new_run_runs_offline(url, new_page):  # noqa: F811
    """A learner's first clicks: Step in English, choose the next run, switch to Japanese (then Chinese): every
    choice is still chosen, whatever its words become, and New run starts it on the offline model."""
    from loop.text.catalogs import say

    page = new_page(1280, 800)  # a fresh browser: no key anywhere, nothing chosen before
    page.goto(url)
    settled(page)
    page.locator(".st-key-live-step button").click()
    settled(page)
    _choose(page, "set-scenario", "A task of my own…")  # the one task whose name is translated
    page.locator(".st-key-set-task textarea").fill(TASK)
    page.locator(".st-key-set-task textarea").press("Control+Enter")
    settled(page)
    page.locator(".st-key-set-profile").get_by_text("complete", exact=False).click()
    settled(page)
    _choose(page, "set-toolset", "s02")
    _number(page, "set-tool-timeout", 12)
    _number(page, "set-max-turns", 7)
    page.locator(".st-key-set-approve label").click()
    page.wait_for_function("() => document.querySelector('.st-key-set-approve input').checked")
    settled(page)
    chosen = {"model": 0, "loop": 1, "task": "A task of my own…", "toolset": "s02", "typed": TASK, "timeout": "12",
              "turns": "7", "gate": True, "realModel": False, "error": None}
    assert page.evaluate(SIDEBAR) == chosen
    for lang in ("ja", "zh"):  # the picker changes the document's language at each switch (_switch waits for it)
        _switch(page, lang)
        assert page.evaluate(SIDEBAR) == {**chosen, "task": say(lang, "A task of my own…")}, lang
        page.locator("[data-testid=stSidebar]").get_by_role("button", name=say(lang, "New run")).click()
        page.wait_for_function("(task) => [...document.querySelectorAll('[data-testid=stCaptionContainer]')]"
                               ".some((c) => c.innerText.includes(task))", arg=TASK)  # the new run's task
        settled(page)
        assert page.locator("[data-testid=stMain] h3").first.inner_text().startswith(say(lang, "Step 0 of {n} · not started", n=0))
        assert page.evaluate(SIDEBAR) == {**chosen, "task": say(lang, "A task of my own…")}, lang  # nothing refused
        caption = page.locator("[data-testid=stCaptionContainer]", has_text=TASK).first.inner_text()
        assert say(lang, "scripted model (offline, no key)") in caption and "complete" in caption, caption
    _switch(page, "en")  # from Chinese, back to the English the learner started in
    assert page.evaluate(SIDEBAR) == chosen
