"""The LoopState table, token columns and all, fits its column at 1280×800 in every language: nothing past the
right edge, no scrolling sideways to read a call's tokens."""

import pytest

from tests.browser import settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)
from tests.test_projector import opened, wait_for_step

FITS = """() => {
    const table = document.querySelector('table.ls-table[data-table="steps"]');
    const wrap = table.closest('.ls-wrap');
    const column = wrap.parentElement.getBoundingClientRect();
    return {scroll: wrap.scrollWidth, width: wrap.clientWidth, right: table.getBoundingClientRect().right,
            edge: Math.min(column.right, innerWidth)};
}"""


@pytest.mark.parametrize("lang", ["en", "ja", "zh"])
def test_the_steps_table_with_its_token_columns_fits_at_1280_by_800(module_tab, url, lang):  # noqa: F811
    page = opened(module_tab, url, f"?lang={lang}&scenario=two-tools&step=8", 1280, 800)
    wait_for_step(page, 8)
    page.wait_for_selector('table.ls-table[data-table="steps"]', timeout=60_000)
    settled(page)
    box = page.evaluate(FITS)
    assert box["scroll"] <= box["width"] + 1, (lang, box)  # no part of it scrolled out of view
    assert box["right"] <= box["edge"] + 1, (lang, box)
