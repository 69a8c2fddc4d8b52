"""The complete loop's diagram at normal size, at 1280×800, in a real Chromium, in English, Japanese and Chinese.

The complete loop draws its retry, recovery and compact stages beside the chapter's loop, so its picture is wider
than the minimal loop's and is scaled down more to fit its column. Two things must hold for a reader:
- no label runs into another label or a stage, and no other edge's line (nor the turn box's) runs through a label;
- its text stays readable. At this size the minimal loop's stages are drawn at 12.4-12.9 px and its edge labels
  at 10.2-10.6 px; the complete loop's picture was drawn at 8.5-8.9 px and 6.3-6.6 px, where a kanji's or a
  hanzi's strokes run together (呼/乎, 続/绩). Its wider picture may be a little smaller than the minimal one's,
  at most a sixth: every stage's text at least STAGE_PX (≈ 5/6 × 12.5 px) and every label at least LABEL_PX
  (≈ 5/6 × 10.2 px), measured as drawn (font-size × the SVG's scale).
"""

import pytest

from tests.browser import wait_for_status
from tests.test_browser import LANGUAGE_NAMES, url  # noqa: F401 (url: the app, served once, as a fixture)
from tests.test_browser_ahead import HEADINGS
from tests.test_projector import LANGS, opened, wait_for_step


@pytest.fixture
def tab(module_tab):
    """The module's one page (tests/conftest.py): each look opens a URL in it, a new session of the app."""
    return module_tab


STAGE_PX = 10.5  # a stage's text, as drawn
LABEL_PX = 8.5  # an edge's label, as drawn

# Every text of the diagram against every other text, every stage's shape (not its own) and every line it is not
# the label of (the edges' paths and the turn box, sampled every unit of length): what overlaps, in CSS px.
CLASHES = r"""() => {
    const svg = document.querySelector('.ls-diagram');
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const texts = [...svg.querySelectorAll('text')].map(el => ({
        el, group: el.closest('g.ls-node, g.ls-edge'), name: `"${el.textContent}"`, box: el.getBoundingClientRect(),
        px: parseFloat(el.getAttribute('font-size')) * scale, stage: !!el.closest('g.ls-node')}));
    const cross = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5
                            && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
    const shapes = [...svg.querySelectorAll('g.ls-node')].map(g => ({
        group: g, name: `stage ${g.dataset.stage}`, box: g.querySelector('rect, polygon').getBoundingClientRect(),
        diamond: !!g.querySelector('polygon')}));
    const inDiamond = (d, x, y) => Math.abs(x - (d.left + d.right) / 2) / (d.width / 2)
                                   + Math.abs(y - (d.top + d.bottom) / 2) / (d.height / 2) < 1;
    const overShape = (t, s) => !s.diamond ? cross(t, s.box)  // a diamond: its outline, not the box around it
        : [[t.left, t.top], [t.right, t.top], [t.left, t.bottom], [t.right, t.bottom]]
             .some(([x, y]) => inDiamond(s.box, x, y))
          || [[s.box.left, (s.box.top + s.box.bottom) / 2], [s.box.right, (s.box.top + s.box.bottom) / 2],
              [(s.box.left + s.box.right) / 2, s.box.top], [(s.box.left + s.box.right) / 2, s.box.bottom]]
             .some(([x, y]) => x > t.left && x < t.right && y > t.top && y < t.bottom);
    // each line's points, every unit of its length, on the screen: worked out once, not once a text (a few thousand
    // points a picture: asking the SVG for them again for each of its texts cost a second of the browser's CPU)
    const lines = [...svg.querySelectorAll('g.ls-edge path, rect.ls-turn')].map(el => {
        const m = el.getScreenCTM(), length = el.getTotalLength(), points = [];
        for (let d = 0; d <= length; d += 1) points.push(el.getPointAtLength(d).matrixTransform(m));
        return {group: el.closest('g.ls-edge'), points, name: el.closest('g.ls-edge')
            ? `edge ${el.closest('g.ls-edge').dataset.edge}` : 'the turn box'};
    });
    const out = [];
    texts.forEach((t, i) => {
        for (const u of texts.slice(i + 1)) {  // (a stage's two lines touch by their line height: not a clash)
            if (!(t.stage && t.group === u.group) && cross(t.box, u.box)) out.push(`${t.name} over ${u.name}`);
        }
        for (const s of shapes) if (s.group !== t.group && overShape(t.box, s)) out.push(`${t.name} over ${s.name}`);
        for (const l of lines) {
            if (l.group && l.group === t.group) continue;  // a label beside its own edge
            if (l.points.some(p => p.x > t.box.left + 0.5 && p.x < t.box.right - 0.5 && p.y > t.box.top + 0.5
                                   && p.y < t.box.bottom - 0.5)) out.push(`${l.name} through ${t.name}`);
        }
    });
    const px = (list) => list.length ? Math.min(...list.map(t => t.px)) : 0;
    return {clashes: out, stagePx: px(texts.filter(t => t.stage)), labelPx: px(texts.filter(t => !t.stage)),
            stages: shapes.map(s => s.name)};
}"""


# The language picker's name of each language, and the <html lang> it sets (tests/test_browser.py's, for ja and zh)
PICKER = {"en": ("English", "en"), **LANGUAGE_NAMES}


def diagram_facts(tab, lang: str, k: int) -> dict:
    """The page's language switched to `lang` by the sidebar's picker (a rerun of the open page: a page load costs the
    machine more), and what CLASHES measures of step k's diagram once it is drawn in it."""
    name, tag = PICKER[lang]
    if tab.evaluate("() => document.documentElement.lang") != tag:
        tab.locator("[data-testid='stSidebar']").get_by_text(name, exact=True).click()
        tab.wait_for_function("(tag) => document.documentElement.lang === tag", arg=tag, timeout=60_000)
    wait_for_status(tab, HEADINGS[lang].format(k=k))
    wait_for_step(tab, k)
    return tab.evaluate(CLASHES)


# a retry taken (its edge drawn bold), and a compaction lit: the stages beside the chapter's loop in use
@pytest.mark.parametrize("query, k", [("scenario=overloaded&profile=complete", 5),
                                      ("scenario=compact&profile=complete", 5)])
def test_the_complete_loop_s_diagram_has_no_label_over_another_and_readable_text(tab, url, query, k):  # noqa: F811
    """Each moment opened once, then drawn in each language in turn: the same facts in en, ja and zh."""
    opened(tab, url, f"?{query}&step={k}&lang={LANGS[0]}", 1280, 800)
    for lang in LANGS:
        facts = diagram_facts(tab, lang, k)
        where = f"{query}, step {k}, {lang}"
        assert {"stage retry", "stage recover", "stage compact"} <= set(facts["stages"]), where  # the complete loop
        assert facts["clashes"] == [], where
        assert facts["stagePx"] >= STAGE_PX, (where, facts["stagePx"])
        assert facts["labelPx"] >= LABEL_PX, (where, facts["labelPx"])


# The minimal loop's diagram at 1280×800 (step 5 of two-tools) and the complete loop's in presenter mode (step 2 of
# overloaded, a retry) are measured with CLASHES where tests/test_projector.py has those pages open in each
# language: a page load costs a second of the machine's CPU.
