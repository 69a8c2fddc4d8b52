"""Two browsers on one server never see each other's trace, workspace, key or saved runs.

Two Playwright browser contexts (separate cookies, storage and connections: two
students, or a teacher and a student) against one `streamlit run app.py`.
"""

import re

import pytest

from tests.browser import IDLE, resume_saved_run, settled, wait_for_status

KEY = "sk-ant-api03-student-A-secret-0123456789"


@pytest.fixture
def url(app_server):
    """The app, served once for the browser tests (tests/conftest.py)."""
    return app_server[0]


def status(page) -> str:
    heads = [h for h in page.locator("h3").all_text_contents() if h.startswith("Step ")]
    return heads[0] if heads else ""


def step(page, k: int) -> None:
    page.locator(".st-key-live-step button").click()
    wait_for_status(page, f"Step {k} of {k}")


def workspace(page) -> str:
    caption = page.get_by_text(re.compile(r"Task: .* workspace /")).first.inner_text()
    return re.search(r"workspace\s+(/\S+)", caption).group(1)


def open_app(new_page, url: str, status: str = "Step 0 of 0"):
    """(context, page): the app in a browser of its own (a context with no cookies and no storage, its cache warm)."""
    page = new_page(1400, 900)
    context = page.context
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=60_000)
    wait_for_status(page, status)
    return context, page


def browser_cookie(context) -> str:
    """The browser id the page set in this browser (once its script has set it)."""
    context.pages[0].wait_for_function(
        "() => document.cookie.split('; ').some(c => c.startsWith('loopscope_browser='))", timeout=30_000)
    return next(c["value"] for c in context.cookies() if c["name"] == "loopscope_browser")


def test_two_browsers_keep_their_own_trace_workspace_key_and_runs_and_a_copied_link_hands_over_the_step_only(
        url, new_page):
    """A teacher (browser A) steps, starts a new run, steps again, copies the address bar for a slide and gives the
    page an API key; a student (browser B) opens the link: the step, in a trace, workspace and browser of its own,
    and none of A's runs or key. (One teacher and one student for both checks: each browser's page loads cost the
    machine more than the checks.)"""
    a_context, a = open_app(new_page, url)
    a_context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    step(a, 1)  # a run is saved from its first step (pages/views/runs.py): one step makes A's first saved run
    a.wait_for_selector(IDLE)
    a.get_by_role("button", name="New run").first.click()
    wait_for_status(a, "Step 0 of 0")
    for k in (1, 2):
        step(a, k)
    a.wait_for_function("() => location.search.includes('step=2')", timeout=30_000)
    link = a.url
    assert "scenario=two-tools" in link and "session" not in link
    a_id = browser_cookie(a_context)
    assert a_id.split(".")[0] not in link
    # "Copy link" copies the same clean link
    a.get_by_role("button", name="Copy link").first.click()
    a.get_by_role("button", name="Link copied").first.wait_for(timeout=10_000)
    assert a.evaluate("navigator.clipboard.readText()") == link
    a.get_by_text("An Anthropic model").click()
    a.wait_for_selector(IDLE)
    key_field = a.get_by_role("textbox", name="API key")
    key_field.fill(KEY)
    key_field.press("Enter")
    a.get_by_text("Press Enter to apply").wait_for(state="detached")  # sent to the server
    settled(a)
    assert "session" not in a.url  # the browser's id is in a cookie, never in the address bar

    # B opens the link: the step, in a session, workspace and browser of its own, and none of A's runs or key.
    b_context, b = open_app(new_page, link, status="Step 2 of 2")
    b.get_by_text("Saved runs · 0").wait_for(timeout=30_000)  # A's saved runs are not listed
    assert b.get_by_text("Saved runs · 1").count() == 0 and b.get_by_text("Saved runs · 2").count() == 0
    assert browser_cookie(b_context) != a_id
    assert "session" not in b.url
    assert workspace(b) != workspace(a), (workspace(a), workspace(b))
    html = b.content()
    assert KEY not in html and "student-A" not in html

    # B steps; A is where it was (its reload keeps its session: both its runs, in its browser only).
    step(b, 3)
    assert status(b).startswith("Step 3 of 3")
    a.reload()
    a.wait_for_selector(IDLE, timeout=60_000)
    wait_for_status(a, "Step 2 of 2")
    a.get_by_text("Saved runs · 2").wait_for(timeout=30_000)
    assert browser_cookie(a_context) == a_id
    resume_saved_run(a, "Saved runs · 2", "Resumed: 2 steps, at step 2")  # the newest of A's runs: the one stepped
    wait_for_status(a, "Step 2 of 2")
    assert KEY not in a.content()  # the key was never saved, so it does not come back either
    assert "Step 3 of 3" in status(b) and KEY not in b.content()
