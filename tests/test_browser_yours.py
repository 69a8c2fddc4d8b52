"""Your loop in Chromium: the editor holds the chapter's listing, Run draws the learner's run with the line lit (on
the scenario the page opens with), Step moves it, a pasted agent file runs on a scenario picked, a broken loop typed
into the editor is named in Japanese, an exercise is checked and ticked, and nothing is fetched from elsewhere."""

import re
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from loop.text.catalogs import say
from loop.engine.mistakes import MISTAKES
from loop.engine.scenarios import SCENARIOS
from loop.yours.exercises import EXERCISES, run_exercise
from loop.yours.lines import MADE, SAID
from loop.yours.listing import CHAPTER_LOOP, chapter_loop
from tests.browser import settled, wait_for_status
from pages.views.yours import starting_code
from tests.learner import record
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)
from tests.test_projector import tab  # noqa: F401 (the module's one page, emptied for each test)

SHOTS = Path(__file__).resolve().parent.parent / "docs" / "projector"
# The editor's text, through the component's own editor (Ace keeps it on its element as `env.editor`).
EDITOR = "document.querySelector('.ace_editor').env.editor"
# Every editor on the page, from the page itself: picking an exercise opens a new editor in a new frame, and the
# one it replaces may linger a moment.
EDITORS = ("[...document.querySelectorAll(\"iframe[title*='code_editor']\")].map(f => f.contentDocument && "
           "f.contentDocument.querySelector('.ace_editor')).filter(e => e && e.env && e.env.editor).map(e => e.env.editor)")
CALL = CHAPTER_LOOP.splitlines().index("        response = client.messages.create(") + 1 + 1  # under the comment
# The listing as a Japanese page opens it, with its stage 3 (the comment and the append) deleted
NO_APPEND = re.sub(r'        # [^\n]*\n        state\["messages"\]\.append\(\{\n            "role": "assistant",\n'
                   r'            "content": response\.content,\n        \}\)\n\n', "", chapter_loop("ja"), count=1)


# Streamlit draws the tab's icon (a page's :material/…: icon) from Google's icon server, on every page alike: the
# browser asks for it, and nothing of the page waits for it.
FAVICON = "https://fonts.gstatic.com/s/i/short-term/release/materialsymbolsrounded/"


def watched(page) -> list[str]:
    """The addresses `page` asks for from now on."""
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    return requested


def fetched_elsewhere(requested: list[str]) -> set[str]:
    return {u for u in requested if urlparse(u).scheme in ("http", "https", "ws", "wss")
            and urlparse(u).hostname not in ("127.0.0.1", "localhost") and not u.startswith(FAVICON)}


def editor(page):
    frame = page.frame_locator("iframe[title*='code_editor']")
    frame.locator(".ace_editor").wait_for(timeout=60_000)
    return next(f for f in page.frames if "code_editor" in f.url)


def run_and_wait(page, label: str) -> None:
    page.get_by_role("button", name=label, exact=True).click()
    page.locator("#ls-yours-code").wait_for(timeout=60_000)
    settled(page)


def test_a_loop_typed_without_the_append_is_named_in_japanese_and_survives_a_reload(url, tab):  # noqa: F811
    page = tab  # emptied as a new browser is: what it types is kept in its storage
    requested = watched(page)
    page.goto(f"{url}/yours?lang=ja")
    settled(page)
    editor(page).evaluate(f"(text) => {EDITOR}.setValue(text, -1)", NO_APPEND)
    page.get_by_role("button", name=say("ja", "Start again from the chapter's listing")).wait_for()  # the page has it
    settled(page)
    run_and_wait(page, say("ja", "Run"))
    named = page.locator("[data-testid='stAlertContentError']").first
    named.wait_for(timeout=30_000)
    said = named.inner_text()
    assert say("ja", MISTAKES["no-assistant-append"].title) in said
    assert "400" in said and "unexpected `tool_use_id` found in `tool_result` blocks" in said
    # named at the line that made the message the API refused (the write-back of results nothing asked for)
    line = NO_APPEND.splitlines().index('        state["messages"].append({') + 1
    assert say("ja", SAID[MADE], line=line, message=2, call=2, code='state["messages"].append({') in said
    assert named.get_by_role("link").get_attribute("href").endswith("/mistakes?mistake=no-assistant-append")
    assert "Traceback" not in page.inner_text("body")
    marked = editor(page).locator(".ace_gutter-cell.ace_error")  # the line marked in the editor too
    marked.wait_for(timeout=30_000)
    assert marked.inner_text().strip() == str(line)
    assert editor(page).evaluate(f"{EDITOR}.getValue()") == NO_APPEND  # what they typed stays in the editor
    assert not fetched_elsewhere(requested), sorted(fetched_elsewhere(requested))
    named.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "yours-broken-ja.png"))  # for docs/: a broken loop named in Japanese

    page.reload()  # a new session: the browser puts back what was typed
    settled(page)
    editor(page).wait_for_function(f"(text) => {EDITOR}.getValue() === text", arg=NO_APPEND, timeout=30_000)
    page.get_by_role("button", name=say("ja", "Start again from the chapter's listing")).wait_for()  # the page has it


def pick(page, scenario: str, label: str = "Scenario", key: str = "yours-scenario") -> None:
    """Choose `scenario` in the page's picker (or the option so named in the picker `label`), as a user does: open
    its list, click the name."""
    option = page.get_by_role("option", name=scenario, exact=True)
    for _ in range(5):  # a rerun that lands as the option is clicked moves the page under it: open the list again
        open_list(page, label, key, option)
        try:
            option.click(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    page.wait_for_function("([label, name]) => document.querySelector(`input[aria-label='${label}']`).value === name",
                           arg=[label, scenario], timeout=30_000)
    settled(page)


def open_list(page, label: str, key: str, option) -> None:
    """Open the picker `label`'s list until `option` shows in it, in the window."""
    picker = page.get_by_label(label)
    inside = "o => o.getBoundingClientRect().bottom <= innerHeight"
    for _ in range(5):  # a rerun that lands as the list opens closes it again: open it until it stays
        # Under the editor, the list opens below the window's edge: the user scrolls the picker up first.
        page.locator(f".st-key-{key}").evaluate("e => e.scrollIntoView({block: 'center'})")
        if picker.get_attribute("aria-expanded") != "true":
            page.locator(f".st-key-{key} button[aria-label='Open']").click()  # (the two pickers are side by side)
        try:
            option.wait_for(timeout=5_000)
            if option.evaluate(inside):
                break
        except PlaywrightTimeout:
            pass
        page.keyboard.press("Escape")  # not there, or the page moved under it: close the list, open it again
    option.wait_for(timeout=5_000)


# In the browser: the listing on the scenario the page opens with (Step lights the line), then a pasted agent file on
# a scenario picked (its run drawn in place of the last). The listing's run on every scenario the picker offers, each
# ending by itself with every rule kept, is checked without a browser in tests/test_yours_cli.py (list-files by
# test_the_chapters_listing_holds_and_a_loop_without_the_append_is_named_with_the_400_and_its_line, the others by
# test_the_chapters_listing_keeps_every_rule_on_every_offered_scenario_and_check_holds), and tests/test_app_yours.py
# draws a run of the listing (recover) with the page's own views.


def test_one_page_runs_the_listing_lights_its_line_runs_a_pasted_file_ticks_an_exercise_and_fetches_nothing(
        url, tab):  # noqa: F811
    """A learner's session on Your loop, in a page emptied as a new browser is (its progress is its own): one page for
    every run (each Run draws its own run in place of the last) and the exercise after them; a page load costs the
    machine more than these checks."""
    page = tab
    requested = watched(page)
    page.goto(f"{url}/yours")
    editor(page)  # the editor drawn: the page below it no longer moves
    settled(page)
    the_listing_runs_and_lights_its_line_and_a_pasted_agent_file_runs(page)
    an_exercise_opens_its_starter_check_says_not_yet_at_the_call_then_passes_and_the_tick_is_kept(page)
    assert requested and not fetched_elsewhere(requested), sorted(fetched_elsewhere(requested))


def the_listing_runs_and_lights_its_line_and_a_pasted_agent_file_runs(page) -> None:
    from tests.test_yours_learners import S01  # an agent file as learners write it after the course's s01

    text = editor(page).evaluate(f"{EDITOR}.getValue()")
    assert CHAPTER_LOOP in text and text.startswith("# Write agent_loop(state)")
    scenario = "list-files"  # the one picked when the page opens
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text(SCENARIOS[scenario].task_in("en")).first.wait_for(timeout=60_000)
    page.locator("#ls-yours-code").wait_for(timeout=60_000)
    settled(page)
    # the listing's run on list-files: 2 model calls in 9 steps, as the sandbox records it (its stages one by one:
    # tests/test_yours_reading.py::test_the_chapters_loop_reads_as_step_through_records_it_and_check_holds)
    page.get_by_text("Your loop ended by itself and kept every rule: 2 model calls.").wait_for(timeout=30_000)
    wait_for_status(page, "Step 1 of 9")
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    assert "Traceback" not in page.inner_text("body")
    page.locator(".st-key-yours-step button").click()  # Step moves the run and the learner's line lit with it
    wait_for_status(page, "Step 2 of 9")
    page.locator("#ls-yours-code div.lit").wait_for(timeout=30_000)
    lit = page.locator("#ls-yours-code div.lit")
    assert lit.get_attribute("data-line") == str(CALL) and "client.messages.create(" in lit.inner_text()
    # the state beside the code keeps to its column, each field's name on one line (not "transition_r / eason")
    state = page.locator(".st-key-yours-state")
    assert state.evaluate("(box) => box.querySelector('table').getBoundingClientRect().right"
                          " <= box.getBoundingClientRect().right + 1")
    assert state.locator("td:first-child code").evaluate_all("(names) => names.map((c) => c.getClientRects().length)"
                                                             ) == [1, 1]

    # A whole agent file pasted in place of the listing runs on Run, and its tool runs show their ids.
    editor(page).evaluate(f"(text) => {EDITOR}.setValue(text, -1)", S01)
    page.get_by_role("button", name="Start again from the chapter's listing").wait_for()  # the page has it
    settled(page)
    pick(page, "two-tools")
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text(SCENARIOS["two-tools"].task_in("en")).first.wait_for(timeout=60_000)  # its run, not the last
    page.get_by_text("Your loop ended by itself and kept every rule: 2 model calls.").wait_for(timeout=60_000)
    wait_for_status(page, "Step 1 of 10")
    assert "Traceback" not in page.inner_text("body")
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    printed = page.locator("pre.ls-terminal")  # beside the steps, as a terminal shows it, scrolled to its end
    assert "$ date -u" in printed.inner_text() and "\\x1b" not in printed.inner_text()
    assert printed.evaluate("(box) => box.scrollTop + box.clientHeight >= box.scrollHeight - 1")
    for k in range(2, 6):  # to the first run_tool step
        page.locator(".st-key-yours-step button").click()
        wait_for_status(page, f"Step {k} of 10")
    settled(page)
    shown = page.inner_text("body")
    assert re.search(r"toolu_[0-9a-f]{24}", shown) and "(None)" not in shown
    # its long lines scroll sideways in the code's box, and the lit line's colour runs under all of its text
    assert page.locator("#ls-yours-code").evaluate("(box) => box.scrollWidth > box.clientWidth")
    assert page.locator("#ls-yours-code [data-line]").evaluate_all(
        "(lines) => lines.filter((line) => line.scrollWidth > line.clientWidth).length") == 0
    # the whole file keeps `messages` alone: no state of its own, said as such, never as a turn_count of None
    assert page.locator(".st-key-yours-state td:nth-child(2)").all_inner_texts() == ["—", "—"]


def an_exercise_opens_its_starter_check_says_not_yet_at_the_call_then_passes_and_the_tick_is_kept(page) -> None:
    exercise = EXERCISES["write-back"]
    statement = say("en", "Statement {n}: {title}", n=exercise.statement, title=exercise.title)
    pick(page, statement, "Exercise", "yours-exercise")
    starter = starting_code("en", "write-back")
    page.wait_for_function(f"(text) => {EDITORS}.some(e => e.getValue() === text)", arg=starter, timeout=30_000)
    assert exercise.missing not in starter and f"# TODO: {exercise.todo}" in starter

    page.get_by_role("button", name="Check", exact=True).click()
    verdict = run_exercise(exercise, starter, "en", record)  # what the page must say
    said = page.locator("[data-testid='stAlertContentError']").filter(has_text="Not yet")
    said.wait_for(timeout=60_000)
    assert f"Not yet: on {verdict.scenario}, at model call {verdict.call + 1}." in said.inner_text()
    assert verdict.scenario == "recover" and verdict.why.replace("`", "") in said.inner_text()  # `x` drawn as code

    fixed = starter.replace(f"        # TODO: {exercise.todo}\n", exercise.missing).replace(  # what the learner types
        '''                    "content": output,
''', '''                    "content": output,
                    "is_error": output.is_error,
''')
    page.evaluate(f"([old, text]) => {EDITORS}.find(e => e.getValue() === old).setValue(text, -1)", [starter, fixed])
    page.get_by_role("button", name="Start again from the exercise's starter").wait_for()  # the page has it
    settled(page)
    page.get_by_role("button", name="Check", exact=True).click()
    page.get_by_text("Passed: your loop does it on recover, two-tools.").wait_for(timeout=60_000)
    page.wait_for_function("(name) => document.querySelector(`input[aria-label='Exercise']`).value === name",
                           arg="✓ " + statement, timeout=30_000)  # the closed picker ticks it too
    ticked(page, statement)

    page.reload()  # a new session: the progress is the browser's, in the store
    settled(page)
    ticked(page, statement)


def ticked(page, statement: str) -> None:
    """The exercise picker's list shows `statement` ticked."""
    settled(page)
    open_list(page, "Exercise", "yours-exercise", page.get_by_role("option", name="✓ " + statement, exact=True))
    page.keyboard.press("Escape")


def test_a_yours_link_s_code_is_in_the_editor_with_the_run_row_while_it_runs(url, tab):  # noqa: F811
    """A link a teacher sends (`?code=`) opens its code in the editor, with Run under it, before its run ends: the
    learner reads the code the spinner is running (a program that waits, here, before its loop is called: 20 s, for
    a loaded machine to load the page meanwhile)."""
    from pages.views.permalink import code_param

    waiting = "import time\ntime.sleep(20)\n\n\ndef agent_loop(state):\n    return\n"
    page = tab
    page.goto(f"{url}/yours?code={code_param(waiting)}")
    page.wait_for_function(
        """() => document.querySelector("[data-testid='stSpinner']") !== null
              && [...document.querySelectorAll("iframe[title*='code_editor']")].length > 0
              && document.querySelector('.st-key-yours-run-button button') !== null""",
        timeout=60_000)
    page.get_by_text("your loop never called the model").first.wait_for(timeout=120_000)  # and then its run is drawn
    assert editor(page).evaluate(f"{EDITOR}.getValue()") == waiting
