"""The document says the page's language (`<html lang>`): a browser picks the glyphs by it, so Chinese is drawn with
Chinese forms, not Japanese ones, and a screen reader reads each page in its own language.

Each page's own language is checked where the tests open it in each language anyway (Step through, the Mistakes
lab and About in tests/test_projector.py, Compare in tests/test_browser_compare.py): a page load costs a second
of the machine's CPU. Here: the picker changes it."""

from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)

TAGS = {"en": "en", "ja": "ja", "zh": "zh-CN"}


def test_the_picker_changes_the_document_s_language(url, module_tab):  # noqa: F811
    page = module_tab
    page.goto(f"{url}/?lang=ja")
    settled(page)
    page.wait_for_function("document.documentElement.lang === 'ja'")
    page.locator("[data-testid='stSidebar']").get_by_text("中文", exact=True).click()
    page.wait_for_function("document.documentElement.lang === 'zh-CN'")
