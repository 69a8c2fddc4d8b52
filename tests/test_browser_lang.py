"""The document says the page's language (`<html lang>`): a browser picks the glyphs by it, so Chinese is drawn with
Chinese forms, not Japanese ones, and a screen reader reads each page in its own language."""

import pytest

from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)

TAGS = {"en": "en", "ja": "ja", "zh": "zh-CN"}


@pytest.mark.parametrize("path", ["/", "/compare", "/about"])
def test_the_document_s_language_is_the_page_s(url, module_tab, path):  # noqa: F811
    page = module_tab
    for lang, tag in TAGS.items():
        page.goto(f"{url}{path}?lang={lang}")
        settled(page)
        page.wait_for_function(f"document.documentElement.lang === {tag!r}")
        assert page.evaluate("document.documentElement.lang") == tag


def test_the_picker_changes_the_document_s_language(url, module_tab):  # noqa: F811
    page = module_tab
    page.goto(f"{url}/?lang=ja")
    settled(page)
    page.wait_for_function("document.documentElement.lang === 'ja'")
    page.locator("[data-testid='stSidebar']").get_by_text("中文", exact=True).click()
    page.wait_for_function("document.documentElement.lang === 'zh-CN'")
