"""In Chromium: Replay lists the sessions folder of the user's own machine, opens one, and follows it as it is written."""

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser import serve_app, settled, wait_for_status
from tests.test_import_claude_code import TASK, Log
from tests.test_sessions_folder import folder, lines


# The heading says the cursor is on the last step of more than n.
AT_END = """(n) => [...document.querySelectorAll('h3')].some(h => {
    const m = h.textContent.match(/^Step (\\d+) of (\\d+)/); return m && +m[2] > n && m[1] === m[2]; })"""


@pytest.fixture(scope="module")
def sessions_app(tmp_path_factory):
    projects = folder(tmp_path_factory.mktemp("sessions"))
    with serve_app(env={"LOOPSCOPE_SESSIONS_DIR": str(projects), "LOOPSCOPE_LIST_SESSIONS": "1"}) as address:
        yield address, projects


def open_session(page, which: str, url: str | None = None) -> list[str]:
    """Pick the session whose line holds `which` in Replay's list and open it (Replay opened at `url` first, when
    given; else the list on the page, opened again: an open session folds it away); the list's lines, newest
    first."""
    if url is not None:
        page.goto(f"{url}/replay")
    settled(page)
    page.get_by_text(re.compile(r"^Your sessions")).first.wait_for()
    sessions = page.locator("[data-testid='stExpander'] details", has_text=re.compile(r"Your sessions")).first
    option = page.get_by_role("option", name=re.compile(re.escape(which))).first
    for _ in range(5):  # a rerun that lands as the list opens (or as the option is clicked) closes it: open it again
        picker = page.locator(".st-key-replay-session-choice input")
        if picker.evaluate("(el) => !!el.closest('[inert]')"):  # the expander folded (its content inert): unfold it
            sessions.locator("summary").click()
            page.wait_for_function("() => !document.querySelector('.st-key-replay-session-choice').closest('[inert]')")
            settled(page)
        if picker.get_attribute("aria-expanded") != "true":
            page.locator(".st-key-replay-session-choice").click()
        try:
            option.wait_for(timeout=5_000)
            listed = page.get_by_role("option").all_inner_texts()
            option.click(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        raise AssertionError(f"no session {which!r} in the list")
    page.get_by_role("button", name="Open the session").click()
    return listed


def test_replay_lists_the_sessions_opens_one_then_another_and_follows_it_as_it_is_written(sessions_app, new_page):
    """One page, as a person has it: the list, a session opened from it, then another from the same list (the
    page's reruns read the folder again), followed while its agent writes on. (One page load, not one a session.)"""
    url, projects = sessions_app
    live = Log()
    live.history(TASK)  # written in two parts: the request and the tool_use lines, then the results and the answer
    path = projects / "-home-ada-live" / "live.jsonl"
    path.parent.mkdir()
    path.write_bytes(lines(live.records[:5]))  # the newest session: first in the list
    page = new_page()
    listed = open_session(page, "review the parser", url)
    page.get_by_text("Replaying new.jsonl with 1 sub-agent log").wait_for()
    wait_for_status(page, "Step ")
    assert len(listed) >= 3
    assert "-home-ada-live · count the lines" in listed[0], listed
    new, old = listed[-2:]  # the oldest last
    assert "-home-ada-parser · review the parser" in new and "sub-agents 1 · compactions 0 · errors 0" in new
    assert "-home-ada-wc · count the lines" in old and "compactions 1 · errors 1" in old

    listed = open_session(page, "-home-ada-live")
    assert "-home-ada-live · count the lines" in listed[0], listed
    page.get_by_text("Replaying live.jsonl").wait_for()
    wait_for_status(page, "Step 1 of ")
    page.get_by_role("button", name="Run to end").first.click()  # Replay's "Run to end" jumps to the last step
    page.wait_for_function(AT_END, arg=0, timeout=30_000)
    page.get_by_text("Follow", exact=True).click()
    settled(page)
    heading = page.locator("h3", has_text=re.compile(r"^Step \d+ of \d+")).first.text_content()
    n = int(re.match(r"Step (\d+) of (\d+)", heading).group(2))
    with open(path, "ab") as f:  # the agent writes its results, then its answer
        f.write(lines(live.records[5:]))
    # the new steps drawn, the cursor with them, up to the answer (a poll may read the results before the answer)
    page.wait_for_function(AT_END, arg=n, timeout=30_000)
    page.wait_for_function("(text) => document.documentElement.outerHTML.includes(text)",
                           arg="a has 3 lines, b is missing, c has 1.", timeout=30_000)
    page.wait_for_function(AT_END, arg=n, timeout=30_000)
