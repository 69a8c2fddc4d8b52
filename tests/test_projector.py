"""On a projector: 1280×800, and presenter mode at 1280×720, in English, Japanese and Chinese, in a real Chromium.

No control may cut its own text (a button shrunk to a sliver, a heading or a label ending in "…"), no text may
run into other text or a control (a heading into the buttons under it), and no Chinese or Japanese is slanted.
In presenter mode the lit stage of the diagram stays on the screen, its text is as large as the note's, the
history fits the screen with room for a message or two, the block that matters is scrolled into view, and the
LoopState is one row. The screenshots go to docs/ (docs/projector/ for every language; docs/screenshot.png and
docs/presenter.png are the English ones).

A page load costs a second of the machine's CPU, so what else must hold on these pages in each language is checked
here too, on the pages already open: the document says the page's language (tests/test_browser_lang.py), the
LoopState table fits its column, the diagram's labels stay clear (tests/test_browser_diagram.py), and About,
opened first, has the app's menu and its code's comments upright.
"""

import contextlib
import functools
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from loop.text.catalogs import say
from tests.browser import DRAWN, PAINTED, settled
from tests.test_browser import url  # noqa: F401 (the app, served once for the browser tests, as a fixture)

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "docs" / "projector"
LANGS = ("en", "ja", "zh")

# Every element whose text a control shows: buttons, labels, headings, links, the select boxes' values.
CONTROLS = ", ".join([
    "button", "label", "[data-testid='stWidgetLabel']", "[data-testid='stPageLink'] a", "[role='tab']",
    "[data-baseweb='select'] [title]", "[data-baseweb='select'] > div", "h1", "h2", "h3", "h4",
    "[data-testid='stSidebarNav'] a", ".ls-state-row", "[data-testid='stAlertContentError']",
])
TRUNCATED = """(selector) => {
    const cut = [];
    const seen = new Set();
    for (const root of document.querySelectorAll(selector)) {
        for (const el of [root, ...root.querySelectorAll('*')]) {
            if (seen.has(el)) continue;
            seen.add(el);
            const box = el.getBoundingClientRect();
            if (!box.width || !box.height || el.closest('[aria-hidden="true"]')) continue;  // not drawn
            const style = getComputedStyle(el);
            if (style.overflowX === 'auto' || style.overflowX === 'scroll') continue;  // a scroll box by design
            if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && el.textContent.trim()) {
                cut.push(`${el.tagName.toLowerCase()}.${String(el.className).slice(0, 40)}: `
                         + `"${el.textContent.trim().slice(0, 60)}" (${el.scrollWidth} > ${el.clientWidth})`);
            }
        }
    }
    return cut;
}"""
# Text that runs into other text or a control: a heading's glyphs (not its padding) over the row of buttons under
# it, a caption under a select box. Only what is drawn counts (not a closed expander's content).
OVERLAPPING = r"""() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const glyphs = (el) => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect(); };
    const boxes = [];
    for (const el of main.querySelectorAll('h1, h2, h3, h4, .ls-h4, [data-testid="stMarkdownContainer"] > p, '
                                           + '[data-testid="stCaptionContainer"] p, .ls-caption')) {
        if (el.textContent.trim()) boxes.push([el, glyphs(el)]);
    }
    for (const el of main.querySelectorAll('button, .ls-state-row, [data-baseweb="select"], [data-testid="stCheckbox"], '
                                           + '.ls-diagram, .ls-note, .ls-panel')) {
        boxes.push([el, el.getBoundingClientRect()]);
    }
    const drawn = boxes.filter(([el, box]) => box.width && box.height && !el.closest('details:not([open])')
                                              && el.checkVisibility({visibilityProperty: true}));
    const name = (el) => `${el.tagName.toLowerCase()} "${el.textContent.trim().slice(0, 40)}"`;
    const out = [];
    for (let i = 0; i < drawn.length; i++) for (let j = i + 1; j < drawn.length; j++) {
        const [a, ra] = drawn[i], [b, rb] = drawn[j];
        if (a.contains(b) || b.contains(a)) continue;
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (w > 2 && h > 2) out.push(`${name(a)} over ${name(b)} (${Math.round(w)}×${Math.round(h)} px)`);
    }
    return out;
}"""
# Chinese characters or kana set in italics, which a browser slants (the HTML views' emphasis included).
SLANTED = r"""() => [...document.querySelectorAll('em, i, .token.comment')]
    .filter(el => /[\u3040-\u30ff\u3400-\u9fff]/.test(el.textContent) && getComputedStyle(el).fontStyle !== 'normal')
    .map(el => el.textContent.slice(0, 60))"""
# In presenter mode: the smallest text of the history (every text node's element, in the panel and its caption),
# against the note's size, and whether the panel has room for a whole message (the shortest card fits in it).
HISTORY_TEXT = """() => {
    const note = document.querySelector('.ls-note p');
    const panel = document.querySelector('.ls-panel');
    let smallest = null;
    for (const root of document.querySelectorAll('.ls-panel, .ls-panel-head .ls-caption')) {
        const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
            const el = node.parentElement;
            if (!node.textContent.trim() || !el.checkVisibility()) continue;
            const px = parseFloat(getComputedStyle(el).fontSize);
            if (!smallest || px < smallest.px) {
                smallest = {px, what: `${el.tagName.toLowerCase()}.${el.className} "${node.textContent.trim().slice(0, 30)}"`};
            }
        }
    }
    const cards = [...panel.querySelectorAll('.ls-msg')].map(m => m.getBoundingClientRect().height);
    return {notePx: note ? parseFloat(getComputedStyle(note).fontSize) : 0, smallest,
            shortestCard: cards.length ? Math.min(...cards) : 0, panelHeight: panel.clientHeight};
}"""


def history_as_large_as_the_note(page, where: str) -> None:
    """Presenter mode: no text of the history (heads, roles, ids, tool output, callouts, the caption) is smaller
    than the note, and the panel still has room for a whole message."""
    sizes = page.evaluate(HISTORY_TEXT)
    smallest = sizes["smallest"]
    assert smallest and smallest["px"] >= sizes["notePx"] - 0.01 > 0, (where, sizes)
    assert 0 < sizes["shortestCard"] <= sizes["panelHeight"], (where, sizes)


PRESENTER_FACTS = """() => {
    const lit = document.querySelector('.ls-diagram .ls-lit');
    const svg = document.querySelector('.ls-diagram');
    const label = svg && svg.querySelector('.ls-node text');
    const scale = svg ? svg.getBoundingClientRect().width / svg.viewBox.baseVal.width : 0;
    const note = document.querySelector('.ls-note p');
    const focus = document.querySelector('.ls-history .ls-focus');
    const panel = document.querySelector('.ls-panel');
    const rect = (el) => el ? el.getBoundingClientRect().toJSON() : null;
    const row = document.querySelector('.ls-state-row');
    return {
        lit: rect(lit), panel: rect(panel), focus: rect(focus), row: rect(row),
        fields: row ? [...row.querySelectorAll('code')].map(c => c.textContent) : [],
        diagramPx: label ? parseFloat(label.getAttribute('font-size')) * scale : 0,
        notePx: note ? parseFloat(getComputedStyle(note).fontSize) : 0,
        height: window.innerHeight, width: window.innerWidth,
        sliders: document.querySelectorAll('.st-key-present-top [data-testid="stSlider"]').length,
        stage: lit && lit.getAttribute('data-stage'),
        last: document.querySelector('.st-key-live-step button').disabled,
    };
}"""


# How the browser sets a label of the diagram: its writing mode, and a turn given to it
RAIL_LABEL = """(text) => {
    const label = [...document.querySelectorAll('.ls-diagram text')].find((t) => t.textContent === text);
    return label && {writingMode: getComputedStyle(label).writingMode, transform: label.getAttribute('transform')};
}"""


@pytest.fixture
def tab(module_tab, url):
    """The module's one page (tests/conftest.py), at 1280×800 and emptied as a new browser is (`forgotten`): each
    look opens a URL in it (a new session of the app). One page for the module rather than one a test: a new page
    builds the app's scripts again (measured: a permalink opened in a new page cost the machine 2.8-3.1
    core-seconds, in the page already open 1.1-1.7)."""
    forgotten(module_tab, url)
    module_tab.set_viewport_size({"width": 1280, "height": 800})
    return module_tab


def forgotten(page, url: str) -> None:
    """`page` left for a blank one, with nothing of the app's kept in its browser: no cookies, no permissions, no
    storage of the app's origin (local, session, IndexedDB, …): what a test before turned on (presenter mode),
    typed or saved is not there for the next, as in a new browser. The page itself, and its scripts built, stay."""
    if page.url.startswith(url):
        with contextlib.suppress(PlaywrightError):  # a page a failed test left broken: the rest still clears
            page.evaluate("() => sessionStorage.clear()")  # this tab's own, which the next session would find
    page.goto("about:blank")  # no session of the app left to write into what is cleared next
    cdp = page.context.new_cdp_session(page)
    cdp.send("Storage.clearDataForOrigin", {"origin": url, "storageTypes": "all"})
    cdp.detach()
    page.context.clear_cookies()
    page.context.clear_permissions()


def opened(tab, url: str, path: str, width: int, height: int):
    tab.set_viewport_size({"width": width, "height": height})
    tab.goto(f"{url}/{path}")
    settled(tab)  # fonts and the diagram in place
    return tab


# The LoopState table's size against its column's and the window's.
TABLE_FITS = """() => {
    const table = document.querySelector('table.ls-table[data-table="steps"]');
    const wrap = table.closest('.ls-wrap');
    const column = wrap.parentElement.getBoundingClientRect();
    return {scroll: wrap.scrollWidth, width: wrap.clientWidth, right: table.getBoundingClientRect().right,
            edge: Math.min(column.right, innerWidth)};
}"""


def about_opened_first(page, lang: str) -> None:
    """About, the first page of its session: the app's menu is there; in Chinese and Japanese the code's comments
    (which the highlighter sets in italics) are there and upright (`looked` checks them)."""
    if lang == "en":
        page.get_by_role("heading", name="About the loop").wait_for()
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Step through" in nav and "Replay" in nav and "About the loop" in nav
        assert "The tool result goes back into the message history" in page.content()
    else:
        page.wait_for_selector('[data-testid="stCode"] .token.comment', timeout=60_000)
        settled(page)
        comments = page.locator('[data-testid="stCode"] .token.comment').all_text_contents()
        assert any(re.search(r"[\u3040-\u30ff\u3400-\u9fff]", c) for c in comments), comments


def wait_for_step(page, k: int) -> None:
    page.wait_for_function(
        f"""(k) => document.querySelector(`.ls-panel[data-step="${{k}}"]`) !== null
                  && document.querySelector(`.ls-diagram-box[data-step="${{k}}"] svg`) !== null && {DRAWN}""",
        arg=k, timeout=60_000)
    page.evaluate(PAINTED)  # the panel's scroll happens in the next frame


def truncated(page) -> list[str]:
    return page.evaluate(TRUNCATED, CONTROLS)


# The three looks every screen gets (text cut, text over text, CJK slanted), in one call into the page: a walk over
# a scenario's steps makes them at each step.
LOOKS = f"""(selector) => ({{cut: ({TRUNCATED})(selector), over: ({OVERLAPPING})(), slanted: ({SLANTED})()}})"""


def looked(page, where: str) -> None:
    """Nothing cut, nothing over other text or a control, no Chinese or Japanese slanted, at `where`."""
    faults = page.evaluate(LOOKS, CONTROLS)
    assert faults["cut"] == [], f"text cut: {where}"
    assert faults["over"] == [], f"text over text or a control: {where}"
    assert faults["slanted"] == [], f"slanted: {where}"


# Where the note's first line ends, and the bottom of the screen.
NOTE_FOLD = """() => {
    const p = document.querySelector('.ls-note p');
    const box = p.getBoundingClientRect();
    return {stage: p.closest('.ls-note').dataset.stage, top: box.top,
            firstLine: box.top + parseFloat(getComputedStyle(p).lineHeight), fold: window.innerHeight};
}"""


def note_above_the_fold(page, where: str) -> str:
    """The stage's note (the why) starts on the first screen: its first line ends above the bottom of the window."""
    note = page.evaluate(NOTE_FOLD)
    assert note["firstLine"] <= note["fold"], (where, note)
    return note["stage"]


def speaks(page, lang: str) -> None:
    """The document says the page's language (tests/test_browser_lang.py says why)."""
    from tests.test_browser_lang import TAGS

    page.wait_for_function(f"document.documentElement.lang === {TAGS[lang]!r}")
    assert page.evaluate("document.documentElement.lang") == TAGS[lang]


# Scrolls an element to the top of the window, remembering where every box it scrolled was; `RESTORE` puts them back.
SCROLL_TO = """(el) => {
    const kept = [];
    for (let box = el.parentElement; box; box = box.parentElement) kept.push([box, box.scrollTop, box.scrollLeft]);
    window.lsScrolled = kept;
    el.scrollIntoView({block: 'start'});
}"""
RESTORE = """() => { for (const [box, top, left] of window.lsScrolled) { box.scrollTop = top; box.scrollLeft = left; } }"""


def shoot(page, path: Path, copy: Path | None = None) -> None:
    """A screenshot for docs/, and the same picture at `copy` (the English ones docs/ shows first): taken once."""
    page.screenshot(path=str(path))
    if copy is not None:
        shutil.copyfile(path, copy)


def shot_of_the_request(page, path: Path) -> None:
    """For docs/: the step's request (the history's head at the top of the window), then the page scrolled back as
    it was, for the checks that follow."""
    page.locator(".ls-panel-head").first.evaluate(SCROLL_TO)
    page.evaluate(PAINTED)
    page.screenshot(path=str(path))
    page.evaluate(RESTORE)
    page.evaluate(PAINTED)


@pytest.mark.parametrize("lang", LANGS)
def test_at_1280_by_800_no_control_cuts_its_text(tab, url, lang):
    from tests.test_browser_diagram import CLASHES, LABEL_PX

    page = opened(tab, url, f"?scenario=two-tools&step=7&lang={lang}", 1280, 800)
    wait_for_step(page, 7)
    speaks(page, lang)
    seen = {note_above_the_fold(page, f"{lang}, step 7")}
    SHOTS.mkdir(parents=True, exist_ok=True)
    shoot(page, SHOTS / f"step-{lang}.png", ROOT / "docs" / "screenshot.png" if lang == "en" else None)
    looked(page, f"1280×800 in {lang}")
    # the note is on the first screen at every stage: write_back above, then call_model (Step), run_tool (Back ×3)
    page.locator(".st-key-live-step button").click()
    wait_for_step(page, 8)
    seen.add(note_above_the_fold(page, f"{lang}, step 8"))
    # the LoopState table, token columns and all, fits its column: nothing past the right edge, no scrolling
    # sideways to read a call's tokens
    page.wait_for_selector('table.ls-table[data-table="steps"]', timeout=60_000)
    settled(page)
    box = page.evaluate(TABLE_FITS)
    assert box["scroll"] <= box["width"] + 1, (lang, box)  # no part of it scrolled out of view
    assert box["right"] <= box["edge"] + 1, (lang, box)
    if lang == "ja":  # for docs/: the request the second call sent, its tool_results marked new
        shot_of_the_request(page, SHOTS / f"request-{lang}.png")
    for k in (7, 6, 5):
        page.locator(".st-key-live-back button").click()
        wait_for_step(page, k)
    seen.add(note_above_the_fold(page, f"{lang}, step 5"))
    assert seen == {"write_back", "call_model", "run_tool"}, seen
    # the minimal loop's diagram at this size: no label over another or over a line, its text as large as drawn
    # for a reader (tests/test_browser_diagram.py)
    facts = page.evaluate(CLASHES)
    assert facts["clashes"] == [], lang
    assert facts["stagePx"] >= 12 and facts["labelPx"] >= LABEL_PX, (lang, facts["stagePx"], facts["labelPx"])
    # the other pages too: About, opened first, and the Mistakes lab (its refusal wraps), reached from About's
    # checklist as a reader goes there (a link inside the app: no new page for the browser to build)
    page.goto(f"{url}/about?lang={lang}")
    settled(page)
    for path in ("about", "mistakes"):
        if path == "mistakes":
            page.locator("[data-testid='stPageLink'] a[href*='mistake=no-write-back']").first.click()
            page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60_000)
            settled(page)
            assert "mistake=no-write-back" in page.url, page.url
        speaks(page, lang)
        if path == "about":
            about_opened_first(page, lang)
        looked(page, f"{path} in {lang}")
        if path == "mistakes":  # the API's words wrap inside the box, the rule under them
            box = page.evaluate("""() => { const e = document.querySelector("[data-testid='stAlertContentError']");
                return [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().right, innerWidth, e.innerText]; }""")
            assert box[0] <= box[1] + 1 and box[2] <= box[3], box[:4]
            assert "immediately after" in box[4]  # the sentence that states the rule is on the page


@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_at_1280_by_720_keeps_every_stage_readable_and_in_view(tab, url, lang):
    page = opened(tab, url, f"?scenario=recover&step=1&lang={lang}", 1280, 800)
    page.locator(".st-key-present label").click()
    page.wait_for_selector(".ls-state-row", timeout=60_000)
    wait_for_step(page, 1)
    settled(page)  # drawn and settled at 1280×800; then the projector's screen (F11): no rerun comes
    page.set_viewport_size({"width": 1280, "height": 720})
    page.evaluate(PAINTED)
    k, seen = 1, set()
    while True:
        facts = page.evaluate(PRESENTER_FACTS)
        stage = facts["stage"]
        seen.add(stage)
        where = f"{lang}, step {k} ({stage})"
        looked(page, where)
        lit = facts["lit"]
        assert lit and lit["top"] >= 0 and lit["bottom"] <= facts["height"] and lit["right"] <= facts["width"], where
        assert facts["diagramPx"] >= 0.9 * facts["notePx"] > 0, (where, facts["diagramPx"], facts["notePx"])
        assert facts["panel"]["bottom"] <= facts["height"] + 1, where  # the history fits the screen
        assert facts["panel"]["height"] >= 200, (where, facts["panel"])  # and has room for a message or two
        focus, panel = facts["focus"], facts["panel"]
        assert focus and panel["top"] - 1 <= focus["top"] < panel["bottom"] - 30, where  # what matters is in view
        assert facts["fields"][:4] == ["turn_count", "transition_reason", "stop_reason", "messages"], where
        assert facts["row"]["height"] < 60, where  # one row
        assert facts["sliders"] == 0, where  # the pause is a select box: no value sitting on a track
        history_as_large_as_the_note(page, where)
        if k == 1 and lang != "en":  # "next turn" up the left rail: its characters stand, as they are written
            rail = page.evaluate(RAIL_LABEL, say(lang, "next turn"))
            assert rail == {"writingMode": "vertical-rl", "transform": None}, (where, rail)
        if k == 7:  # recover: the call where the model reads the failed command's result
            ringed = page.evaluate("() => document.querySelector('.ls-history .ls-focus').className")
            assert "ls-error" in ringed, ringed
            SHOTS.mkdir(parents=True, exist_ok=True)
            shoot(page, SHOTS / f"presenter-{lang}.png", ROOT / "docs" / "presenter.png" if lang == "en" else None)
        if k == 11 and lang == "en":  # for docs/: the second write_back, two turns of results in the history
            assert stage == "write_back", where
            page.screenshot(path=str(SHOTS / "presenter-write-back-en.png"))
        if facts["last"]:  # Step disabled: the run has ended
            break
        k += 1
        page.locator(".st-key-live-step button").click()
        wait_for_step(page, k)
    assert {"user_request", "call_model", "append_assistant", "decide", "run_tool", "write_back"} <= seen


@functools.cache
def _moments(scenario: str) -> list[int]:
    """The steps (1-based) of a scenario that draw more than the chapter's loop: into a sub-agent, a step inside
    it, the answer taken; the summary call and the compactions."""
    from loop.engine.runner import start

    run = start(scenario=scenario)
    run.run_to_end()
    trace = run.trace
    if scenario == "subagent":
        child = next(t for t in trace.threads.values() if not t.is_main)
        first = trace.opened_at(child.id)
        return [first, first + 3, trace.returned_at(child.id) + 1]
    return [s.index + 1 for s in trace.steps if s.stage in ("summarize", "compact")]


LIT_FACTS = """() => {
    const lit = document.querySelector('.ls-diagram .ls-lit');
    const svg = document.querySelector('.ls-diagram');
    const scale = svg ? svg.getBoundingClientRect().width / svg.viewBox.baseVal.width : 0;
    const text = lit && lit.querySelector('text');
    const note = document.querySelector('.ls-note p');
    const panel = document.querySelector('.ls-panel');
    return {lit: lit ? lit.getBoundingClientRect().toJSON() : null, stage: lit && lit.getAttribute('data-stage'),
            litPx: text ? parseFloat(text.getAttribute('font-size')) * scale : 0,
            notePx: note ? parseFloat(getComputedStyle(note).fontSize) : 0,
            panel: panel ? panel.getBoundingClientRect().toJSON() : null,
            height: window.innerHeight, width: window.innerWidth};
}"""


def presenting_at(tab, url: str, query: str, k: int, where: str):
    """Step k opened by a permalink in presenter mode (`present=on`) at 1280×800, then the projector's 1280×720: the
    lit stage in view and as readable as the note, nothing cut or overlapping, the history with room. Returns the
    page (`tab`)."""
    page = opened(tab, url, f"?{query}&step={k}&present=on", 1280, 800)
    page.wait_for_selector(".ls-state-row", timeout=60_000)
    wait_for_step(page, k)
    settled(page)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.evaluate(PAINTED)
    lit_stage_readable(page, k, where)
    return page


def lit_stage_readable(page, k: int, where: str) -> None:
    """At step k in presenter mode at 1280×720: the lit stage in view and as readable as the note, nothing cut or
    overlapping, the history with room."""
    facts = page.evaluate(LIT_FACTS)
    where = f"{where}, step {k} ({facts['stage']})"
    looked(page, where)
    lit = facts["lit"]
    assert lit and lit["top"] >= 0 and lit["bottom"] <= facts["height"] and lit["right"] <= facts["width"], where
    assert facts["litPx"] >= 0.9 * facts["notePx"] > 0, (where, facts["litPx"], facts["notePx"])
    assert facts["panel"]["bottom"] <= facts["height"] + 1 and facts["panel"]["height"] >= 200, (where, facts)
    history_as_large_as_the_note(page, where)


# A Back click costs the machine about a seventh of a page load (measured: 0.3 against 2.3 core-seconds): a moment
# up to this many steps before the one on the screen is reached by Back, a farther one by its permalink.
BACKS = 4


@pytest.mark.parametrize("scenario", ["subagent", "compact"])
@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_inside_a_sub_agent_and_at_a_compaction_keeps_the_lit_stage_readable(tab, url, lang,
                                                                                            scenario):
    shown = None  # the step on the screen
    for k in sorted(_moments(scenario), reverse=True):  # the last first: the ones just before it are a Back away
        if shown is None or not 0 < shown - k <= BACKS:
            page = presenting_at(tab, url, f"scenario={scenario}&lang={lang}", k, f"{scenario}, {lang}")
        else:  # on the projector's screen already, as a presenter goes back over what the class just saw
            for back in range(shown - 1, k - 1, -1):
                page.locator(".st-key-live-back button").click()
                wait_for_step(page, back)
            page.evaluate(PAINTED)
            lit_stage_readable(page, k, f"{scenario}, {lang}")
        shown = k


@functools.cache
def _complete_moments() -> list[tuple[str, int]]:
    """Steps (1-based) of the complete loop where its own stages are lit: a retry, a recovery, a refused call."""
    from loop.engine.runner import start

    found = []
    for scenario, stage in (("overloaded", "retry"), ("max-tokens", "recover"), ("big-context", "refused")):
        run = start(scenario=scenario, profile="complete")
        while not run.done:
            run.skip_wait()
            run.execute()
        found.append((scenario, next(s.index + 1 for s in run.trace.steps if s.stage == stage)))
    return found


@pytest.mark.parametrize("lang", LANGS)
def test_presenter_mode_keeps_the_complete_loop_s_stages_as_readable_as_the_note(tab, url, lang):
    """The complete loop draws its retry and recovery stages beside the chapter's: a wider picture, which the
    projector's screen must not shrink below the note's size."""
    from tests.test_browser_diagram import CLASHES

    for scenario, k in _complete_moments():
        page = presenting_at(tab, url, f"scenario={scenario}&profile=complete&lang={lang}", k,
                             f"{scenario}, {lang}")
        assert page.locator(".ls-diagram [data-stage='retry']").count() == 1, scenario  # the complete loop's picture
        if scenario == "overloaded":
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"presenter-complete-{lang}.png"))
            # step 2, a retry (its edge drawn bold): its labels stay clear on the projector too
            # (tests/test_browser_diagram.py measures them at 1280×800)
            facts = page.evaluate(CLASHES)
            assert "stage retry" in facts["stages"] and facts["clashes"] == [], lang
