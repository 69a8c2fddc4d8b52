"""The app in a real browser: Debian's chromium driven by Playwright against `streamlit run app.py`.

Steps a scenario to its end by clicking Step, checks that every tool_use id is
on the page with its tool_result, and uses the keyboard shortcuts. The
screenshots the README shows are taken by tests/test_projector.py.
"""

import re
from pathlib import Path

import pytest

from loop.files import transcript
from tests.browser import IDLE, settled, wait_for_status

ROOT = Path(__file__).resolve().parent.parent
# The blocks of the history's messages, in page order: (kind, text) for each block's heading and its code.
READ_HISTORY = """() => {
    const out = [];
    for (const el of document.querySelectorAll('.ls-history .ls-msg .ls-bh, .ls-history .ls-msg pre')) {
        out.push([el.matches('pre') ? 'code' : 'markdown', el.innerText]);
    }
    return out;
}"""


@pytest.fixture
def url(app_server):
    """The app, served once for every browser test (tests/conftest.py)."""
    return app_server[0]


@pytest.fixture
def page(module_tab):
    """The module's one page (tests/conftest.py) at 1600×1000, for a test that opens the app's page it looks at: a
    new session of the app, in the browser that opened the module's pages before it (its cookies, storage and
    cache). A page the test does not look at is not opened first: it would cost a session and a page load."""
    module_tab.set_viewport_size({"width": 1600, "height": 1000})
    return module_tab


@pytest.fixture
def first_page(url, new_page):
    """The app's first page, in a browser of its own (no run saved in it yet), once its script has run."""
    page = new_page(1600, 1000)
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=60_000)
    return page


def status(page) -> str:
    heads = [h for h in page.locator("h3").all_text_contents() if h.startswith("Step ")]
    return heads[0] if heads else ""


def click_step(page, k: int, n: int | None = None) -> None:
    page.locator(".st-key-live-step button").click()
    wait_for_status(page, f"Step {k} of {n or k}")


def pairs_on_page(page) -> tuple[list[str], dict[str, str]]:
    """The tool_use ids in the history, and each tool_result's text by the id it answers."""
    uses, results, answering = [], {}, None
    for kind, text in page.evaluate(READ_HISTORY):
        head = text.split()[:2]  # an icon's name, then the block's type
        if kind == "markdown" and "tool_use" in head:
            uses.extend(re.findall(r"toolu_\w+", text))
        elif kind == "markdown" and "tool_result" in head:
            answering = re.findall(r"toolu_\w+", text)[0]
        elif kind == "code" and answering:
            results[answering], answering = text.strip(), None
    return uses, results


def test_step_to_the_end_shows_every_tool_use_with_its_result(first_page):
    page = first_page
    assert page.get_by_role("heading", name="Step through the loop").is_visible()
    assert "Step 0 of 0" in status(page)
    k = 0
    while not page.get_by_text("The loop has ended").count():
        k += 1
        assert k <= 12, "two-tools should end within 10 steps"
        click_step(page, k)
    assert k == 10 and status(page) == "Step 10 of 10 · turn 2 · stop_reason: go on or end?"
    assert page.locator(".st-key-live-step button").is_disabled()

    uses, results = pairs_on_page(page)
    assert len(uses) == 2 and set(results) == set(uses)
    date, size = (results[u] for u in uses)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", date), date
    assert re.search(r"^\S+\s+\.", size), size  # du -sh . prints "<size>\t."
    final = page.locator('.ls-history .ls-msg').last.inner_text()
    assert "Two tool calls in one turn" in final

    # Save transcript: the file the browser downloads is the run on the page.
    with page.expect_download() as saving:
        page.get_by_role("button", name="Save transcript").click()
    saved = transcript.loads(Path(saving.value.path()).read_bytes())
    assert saving.value.suggested_filename.startswith("loopscope-what-is-the-date") and len(saved) == 10
    assert [b["id"] for b in saved.messages[1]["content"] if b["type"] == "tool_use"] == uses
    assert {b["tool_use_id"]: b["content"].strip() for b in saved.messages[2]["content"]} == {u: results[u] for u in uses}

    # Back moves the cursor; the history is the one of that step, and nothing runs.
    for k in (9, 8, 7):
        page.locator(".st-key-live-back button").click()
        wait_for_status(page, f"Step {k} of 10")
    assert status(page) == "Step 7 of 10 · turn 1 · 5 · write tool_results back"
    assert page.get_by_text("added by this step").count() == 1


def wait_for_controls(page, key: str) -> None:
    """Until First, Back, Step and the others are drawn as buttons (not yet loading placeholders): a key
    pressed before a button is drawn has no button to press, for a person as for the test."""
    for name in ("first", "back", "step", "to-end") + (("last",) if key == "live" else ()):
        page.locator(f".st-key-{key}-{name} button").first.wait_for()
    page.wait_for_selector(IDLE)


def shortcut_of(page, key: str, name: str) -> str | None:
    """The key a button shows it answers to (Streamlit draws it on the button), or None."""
    hint = page.locator(f'.st-key-{key}-{name} button [aria-label^="Shortcut"]').first
    return hint.get_attribute("aria-label").removeprefix("Shortcut ") if hint.count() else None


def test_one_replay_page_speaks_each_language_keys_and_go_to_step_move_the_cursor_a_second_file_replaces_the_first(
        page, url):
    """Four things on Replay, one after the other on the page Replay opens (a page load costs the machine more than
    the checks): the empty uploader speaks the page's language in each language, then, in English again, the
    keyboard moves the cursor, Go to step then Step and Back move one step each, and a second dropped file replaces
    the first."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{url}/replay?lang=en")
    the_uploader_speaks_the_page_s_language(page)
    page.locator("[data-testid='stSidebar']").get_by_text("English", exact=True).click()
    page.wait_for_function("() => document.documentElement.lang === 'en'", timeout=60_000)
    page.set_viewport_size({"width": 1600, "height": 1000})
    keyboard_shortcuts_move_the_cursor(page)
    go_to_step_then_step_and_back_move_one_step_each(page)
    a_file_dropped_after_another_replaces_it(page)


def keyboard_shortcuts_move_the_cursor(page):
    wait_for_status(page, "Step 1 of 10")
    wait_for_controls(page, "replay")
    page.get_by_role("heading", name="Replay a run").click()  # the focus on the page, as a person's click puts it
    for key, now in (("ArrowRight", "Step 2 of 10"), ("End", "Step 10 of 10"), ("ArrowLeft", "Step 9 of 10"),
                     ("Home", "Step 1 of 10")):
        page.keyboard.press(key)
        wait_for_status(page, now, timeout=15_000)


def test_keyboard_never_executes_a_stage_in_a_live_run_and_presenter_mode_autoplays_pauses_and_fits_one_screen(
        page, url):
    """Both on the one live run a permalink opens (a page load costs the machine more than the checks)."""
    page.set_viewport_size({"width": 1600, "height": 900})  # a projector's 16:9
    page.goto(f"{url}/?scenario=two-tools&step=3")
    keyboard_never_executes_a_stage_in_a_live_run(page)
    presenter_mode_autoplays_pauses_and_fits_one_screen(page)


def keyboard_never_executes_a_stage_in_a_live_run(page):
    wait_for_status(page, "Step 3 of 3")
    wait_for_controls(page, "live")
    # At the end of the trace Step executes, so it answers no key; Last answers End, Run to end none.
    assert (shortcut_of(page, "live", "step"), shortcut_of(page, "live", "last")) == (None, "End")
    assert shortcut_of(page, "live", "to-end") is None
    page.get_by_role("heading", name="Step through the loop").click()
    page.keyboard.press("ArrowRight")  # at the end: nothing runs
    page.keyboard.press("ArrowLeft")
    wait_for_status(page, "Step 2 of 3", timeout=15_000)  # still three steps: → ran no stage
    assert shortcut_of(page, "live", "step") == "→"  # in the middle, Step only moves, so → is its key
    page.keyboard.press("Home")
    wait_for_status(page, "Step 1 of 3", timeout=15_000)
    page.keyboard.press("End")  # the last recorded step, not the end of the loop
    wait_for_status(page, "Step 3 of 3", timeout=15_000)
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    wait_for_status(page, "Step 2 of 3", timeout=15_000)


def presenter_mode_autoplays_pauses_and_fits_one_screen(page):
    wait_for_status(page, "Step 2 of 3")  # where the keys left the run: Play shows step 3, then runs stage 4
    page.get_by_text("Presenter mode").click()
    page.get_by_role("button", name="Play").wait_for()
    page.wait_for_selector(IDLE)
    page.locator('[data-testid="stSidebar"]').wait_for(state="hidden")  # no sidebar (its style may come a moment later)
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector("
                         "'.ls-note p')).fontSize)")
    # large type: above the page's 16 px (16.8 px, the floor of the history's text too: the note, the diagram and a
    # whole message of the history all fit 1280×720 at that size)
    assert size >= 16.8, size

    page.get_by_role("button", name="Play").click()  # 2 s between stages
    wait_for_status(page, "Step 4 of 4")  # autoplay steps on its own
    page.get_by_role("button", name="Pause").click()
    page.get_by_role("button", name="Play").wait_for()
    page.wait_for_selector(IDLE)
    stopped = status(page)
    page.wait_for_timeout(2500)
    assert status(page) == stopped, "autoplay went on after Pause"

    # The diagram and the newest message are on the one screen.
    for selector in (".ls-diagram", ".ls-history .ls-msg"):
        box = page.locator(selector).last.bounding_box()
        assert box and box["y"] < 900 and box["y"] + 40 < 900, (selector, box)


def go_to_step_then_step_and_back_move_one_step_each(page):
    """The slider waits in a popover; a value picked there must not come back and move the cursor later."""
    from tests.slider import to_middle

    wait_for_status(page, "Step 1 of 10")
    k = to_middle(page, 10) + 1
    assert 3 <= k <= 8, k
    page.locator(".st-key-replay-step button").click()
    wait_for_status(page, f"Step {k + 1} of 10")
    page.locator(".st-key-replay-back button").click()
    wait_for_status(page, f"Step {k} of 10")
    page.locator(".st-key-replay-back button").click()
    wait_for_status(page, f"Step {k - 1} of 10")


# Elements matching a selector whose text runs past their box.
CUT = """(selector) => [...document.querySelectorAll(selector)].filter(e => e.getClientRects().length
    && e.scrollWidth > e.clientWidth + 1).map(e => [e.tagName, e.textContent.slice(0, 80), e.scrollWidth, e.clientWidth])"""
UPLOADER_WORDS = """() => {
    const zone = document.querySelector('[data-testid="stFileUploaderDropzone"]');
    const shown = el => getComputedStyle(el).fontSize === '0px' ? getComputedStyle(el, '::after').content
                                                                : el.innerText;
    return [shown(zone.querySelector('button [data-testid="stMarkdownContainer"] p')),
            shown(zone.querySelector('[data-testid="stFileUploaderDropzoneInstructions"] span'))];
}"""
DRAG_A_FILE = """() => {
    const zone = document.querySelector('[data-testid="stFileUploaderDropzone"]');
    const files = new DataTransfer();
    files.items.add(new File(["{}"], "t.json"));
    zone.dispatchEvent(new DragEvent('dragenter', {dataTransfer: files, bubbles: true}));
}"""
DRAG_WORDS = """() => {
    const el = document.querySelector('[data-testid="stFileUploaderDropzone"] > div:not([data-testid]) > span');
    return getComputedStyle(el).fontSize === '0px' ? getComputedStyle(el, '::after').content : el.innerText;
}"""


DRAG_LEAVE = DRAG_A_FILE.replace("'dragenter'", "'dragleave'")
UPLOADER = {  # the limit is the server's own, set in .streamlit/config.toml
    "en": ["Upload", "50MB per file", "Drag and drop files here"],  # it takes several (a session and its sub-agents)
    "ja": ['"ファイルを開く"', '"またはここにドロップ · 1 ファイル 50 MB まで"', '"ここにファイルをドロップ"'],
    "zh": ['"打开文件"', '"或拖放到这里 · 每个文件最多 50 MB"', '"把文件拖放到这里"'],
}
LANGUAGE_NAMES = {"ja": ("日本語", "ja"), "zh": ("中文", "zh-CN")}  # in the sidebar's picker; <html lang>


def the_uploader_speaks_the_page_s_language(page):
    """Streamlit writes "Upload", "50MB per file" and, while a file is dragged over it, "Drag and drop files
    here" in English; in ja and zh the page shows its own words there, whole at 1280×800. The Replay page opened in
    English at 1280×800, in each language the sidebar's picker gives it (a page load costs the machine more than a
    language switch)."""
    for lang, words in UPLOADER.items():
        if lang in LANGUAGE_NAMES:
            name, tag = LANGUAGE_NAMES[lang]
            page.locator("[data-testid='stSidebar']").get_by_text(name, exact=True).click()
            page.wait_for_function("(tag) => document.documentElement.lang === tag", arg=tag, timeout=60_000)
        page.wait_for_selector('[data-testid="stFileUploaderDropzoneInstructions"]', timeout=60_000)
        settled(page)
        assert page.evaluate(UPLOADER_WORDS) == words[:2], lang
        assert page.evaluate(CUT, '[data-testid="stFileUploaderDropzoneInstructions"] span') == [], lang
        page.evaluate(DRAG_A_FILE)
        dragged = '[data-testid="stFileUploaderDropzone"] > div:not([data-testid]) > span'
        page.wait_for_selector(dragged)
        assert page.evaluate(DRAG_WORDS) == words[2], lang
        page.evaluate(DRAG_LEAVE)  # the file taken away again: the uploader as it was, for the next language
        page.wait_for_selector(dragged, state="detached")


# About opened first (its menu, its words) and About's code comments upright in Chinese and Japanese are checked in
# tests/test_projector.py, which opens About in each language: a page load costs a second of the machine's CPU.


def a_file_dropped_after_another_replaces_it(page):
    """The uploader holds the files of the last drop: a second transcript replaces the first, in the uploader and
    on the page (never both, refused as several sessions' logs), and the sample box names no sample meanwhile."""
    page.wait_for_selector('[data-testid="stFileUploaderDropzoneInput"]', state="attached", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    for name in ("recover", "hello-py"):
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(ROOT / "samples" / f"{name}.json"))
        page.get_by_text(f"Replaying {name}.json").wait_for(timeout=60_000)
        page.wait_for_selector(IDLE, timeout=60_000)
    assert page.locator('[data-testid="stFileChipName"]').all_inner_texts() == ["hello-py.json"]
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    assert page.locator(".st-key-replay-sample input").input_value() == ""
