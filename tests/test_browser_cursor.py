"""A cursor move in a real browser: Context growth, the exports and the raw JSON stay under the tables while
closed (the step's fragment no longer sends them at each move), and once opened they follow the cursor."""

from __future__ import annotations

import pytest

from tests.browser import IDLE, wait_for_status
from tests.test_browser import wait_for_controls

# The labels under the step, top to bottom, as a learner sees them, and whether each is below the tables
BELOW = """() => {
    const last = [...document.querySelectorAll('table')].map((t) => t.getBoundingClientRect().bottom)
        .reduce((a, b) => Math.max(a, b), 0);
    return ['growth', 'exports', 'raw'].map((name) => {
        const el = document.querySelector('.st-key-live-' + name);
        if (!el || el.getBoundingClientRect().height === 0) return [name, null, false];
        return [name, el.innerText.split('\\n').map((l) => l.trim()).find((l) => l && !/^[a-z_]+$/.test(l)), el.getBoundingClientRect().top >= last];
    });
}"""


@pytest.fixture
def url(app_server):
    return app_server[0]


def _below(page) -> list[tuple[str, str, bool]]:
    """Context growth, the exports and the raw JSON: each one's first line, and whether it is under the tables."""
    return [tuple(found) for found in page.evaluate(BELOW)]


def test_the_closed_panels_stay_under_the_tables_and_an_open_one_follows_the_cursor(url, new_page):
    page = new_page(1280, 900)
    page.goto(f"{url}/?scenario=two-tools&step=10")
    wait_for_status(page, "Step 10 of 10")
    wait_for_controls(page, "live")
    before = _below(page)
    assert all(below for _, _, below in before)
    for k in (9, 8):
        page.locator(".st-key-live-back button").first.click()
        wait_for_status(page, f"Step {k} of 10")
        page.wait_for_selector(IDLE)
        assert _below(page) == before  # not sent again, still there, in the same place
    page.locator(".st-key-live-raw summary").first.click()  # opened: drawn by the step from now on
    page.get_by_text("Response", exact=True).first.wait_for()
    raw = page.locator(".st-key-live-raw").first
    at_8 = raw.inner_text()
    page.locator(".st-key-live-back button").first.click()
    wait_for_status(page, "Step 7 of 10")
    page.wait_for_selector(IDLE)
    page.wait_for_function("() => document.querySelector('.st-key-live-raw').innerText.includes('locally')")
    assert "did its work locally" not in at_8  # step 8 is a model call; step 7 wrote the results back
    assert _below(page) == before
    page.locator(".st-key-live-raw summary").first.click()  # closed again
    page.wait_for_selector(IDLE)
    for k in (6, 5):
        page.locator(".st-key-live-back button").first.click()
        wait_for_status(page, f"Step {k} of 10")
        page.wait_for_selector(IDLE)
        assert _below(page) == before


def test_a_cursor_move_sends_only_what_follows_the_cursor(url):
    """What the server sends for a click on Back, read as the page reads it: no slider, no Find query, no closed
    panel under the tables; the step, its buttons and its views."""
    import asyncio

    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from tests.wire import Wire

    async def sent_by_back() -> list[str]:
        page = Wire(url, query="scenario=two-tools&step=6")
        await page.open()
        await page.rerun("live-back")
        await page.close()
        assert page.status() == (5, 6) and not page.errors  # the run made up to step 6
        sent = []
        for raw in page.text:
            delta = ForwardMsg.FromString(raw).delta
            if delta.WhichOneof("type") == "new_element":
                element = delta.new_element
                what = element.WhichOneof("type")
                sent.append(f"{what}:{getattr(getattr(element, what), 'id', '').rsplit('-', 1)[-1]}")
            elif delta.WhichOneof("type") == "add_block":
                sent.append(f"block:{delta.add_block.id.rsplit('-', 1)[-1]}")
        return sent

    sent = asyncio.run(sent_by_back())
    assert any(s.startswith("button:") and s.endswith("back") for s in sent)  # the buttons, enabled anew
    assert not [s for s in sent if s.startswith(("slider:", "selectbox:", "text_input:"))], sent
    assert not [s for s in sent if s.endswith(("growth", "exports", "raw"))], sent
    assert len(sent) <= 24, sent
