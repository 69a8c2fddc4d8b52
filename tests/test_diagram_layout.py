"""The loop diagram's layout, read from its SVG without a browser: no label over another, no edge through a label.

For every loop the pages draw (the minimal loop, with compaction, with a sub-agent's loop under it or the cursor
inside one, the complete loop), every stage lit, at normal size and in presenter mode, in English, Japanese and
Chinese. A label's box is estimated from its characters: a CJK character 1 em wide, any other character 0.55 em,
1 em high, placed by its text-anchor and baseline. 0.55 em is above what the page's font (Source Sans) draws: every
label's Latin letters measure 0.45-0.51 em on average in Chromium; a rounder 0.6 em would call labels tangled that
are 10 px apart on the screen, and room kept for them widens the picture, which shrinks every stage's text.
A stage's text is its own shape's business (the shape is sized to it): its box is kept inside the shape.
An edge is every line of an `ls-edge` group (its path and its arrowhead) and the turn box's outline.
tests/test_browser_diagram.py measures some of these pictures as Chromium draws them; this test covers every case.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
import xml.etree.ElementTree as ET

import pytest

from loop.text.catalogs import say
from loop.views.diagram import COMPLETE_TAKEN, COMPACT_TAKEN, LARGE, NORMAL, TAKEN, svg

LANGS = ("en", "ja", "zh")
SIZES = {"normal": NORMAL, "large": LARGE}
SVG = "{http://www.w3.org/2000/svg}"
SLACK = 0.5  # px: a line that only touches a box's edge does not cross it
APART = 1.5  # px: the least room around an arrowhead, free of other edges, for a reader to tell them apart


def _stages(complete: bool) -> list[dict]:
    """svg()'s arguments for every step a run can be at: each (stage before, stage now) the diagram knows."""
    pairs = set(TAKEN) | set(COMPACT_TAKEN) | (set(COMPLETE_TAKEN) if complete else set())
    out = [{}] + [{"stage": now, "previous": before} for before, now in sorted(pairs)]
    out += [{"stage": "decide", "previous": "append_assistant", "continues": c} for c in (True, False)]
    out += [{"stage": "stop", "previous": "write_back", "ended": True}]
    # a broken loop's call refused by the API: the loop ends there, stage 2 marked refused
    out += [{"stage": "refused", "previous": before, "ended": True, "refused": True}
            for before in ("user_request", "write_back")]
    if complete:
        out += [{"stage": "retry", "previous": "retry", "ended": True},
                {"stage": "decide", "previous": "append_assistant", "recovering": True}]
    return out


def _cases() -> list[tuple[str, dict]]:
    cases = []
    for args in _stages(complete=False):
        cases.append(("minimal", args))
        cases.append(("minimal+compact", dict(args, compact=True)))
    for args in _stages(complete=True):
        cases.append(("complete", dict(args, complete=True)))
    # a sub-agent's loop: drawn small under the chapter's, its answer taken, or the cursor inside it
    for args in _stages(complete=False):
        cases.append(("sub-agent under", dict(args, child={})))
    for args in _stages(complete=True):
        cases.append(("complete, sub-agent under", dict(args, complete=True, child={})))
    cases.append(("sub-agent answered", {"stage": "run_tool", "previous": "decide", "turn": 2,
                                         "child": {"returned": True}}))
    for args in _stages(complete=False):
        if args:
            child = {"stage": args["stage"], "previous": args["previous"], "continues": args.get("continues"),
                     "ended": bool(args.get("ended")), "turn": 2}
            cases.append(("inside a sub-agent", {"turn": 2, "child": child}))
    return cases


# -- reading the SVG --

def _matrix(transform: str | None) -> tuple:
    """An SVG transform (translate and rotate, the ones the diagram uses) as an affine matrix (a, b, c, d, e, f)."""
    m = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    for name, args in re.findall(r"(\w+)\(([^)]*)\)", transform or ""):
        v = [float(x) for x in re.split(r"[ ,]+", args.strip())]
        if name == "translate":
            step = (1, 0, 0, 1, v[0], v[1] if len(v) > 1 else 0)
        elif name == "rotate":
            r = math.radians(v[0])
            cx, cy = (v[1], v[2]) if len(v) == 3 else (0, 0)
            cos, sin = math.cos(r), math.sin(r)
            step = (cos, sin, -sin, cos, cx - cos * cx + sin * cy, cy - sin * cx - cos * cy)
        else:
            raise AssertionError(f"a transform the test does not read: {name}")
        m = _times(m, step)
    return m


def _times(m: tuple, n: tuple) -> tuple:
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + c * b2, b * a2 + d * b2, a * c2 + c * d2, b * c2 + d * d2, a * e2 + c * f2 + e,
            b * e2 + d * f2 + f)


def _apply(m: tuple, x: float, y: float) -> tuple[float, float]:
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def _width(text: str, font: float) -> float:
    return sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.55 for ch in text) * font


def _text_box(el: ET.Element, m: tuple) -> tuple[float, float, float, float]:
    """A text's box (left, top, right, bottom), from its characters, anchor and baseline."""
    x, y, font = float(el.get("x")), float(el.get("y")), float(el.get("font-size"))
    w = _width(el.text or "", font)
    if el.get("writing-mode") == "vertical-rl":  # set from top to bottom, one em wide, centred on its line x
        top = {"start": y, "middle": y - w / 2, "end": y - w}[el.get("text-anchor", "start")]
        corners = [_apply(m, px, py) for px in (x - font / 2, x + font / 2) for py in (top, top + w)]
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        return min(xs), min(ys), max(xs), max(ys)
    left = {"start": x, "middle": x - w / 2, "end": x - w}[el.get("text-anchor", "start")]
    top = y - font / 2 if el.get("dominant-baseline") == "central" else y - font * 0.8
    corners = [_apply(m, px, py) for px in (left, left + w) for py in (top, top + font)]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def _path_points(d: str) -> list[list[tuple[float, float]]]:
    """The polylines of a path (M, L, H, V and C, a curve sampled), in its own coordinates."""
    tokens = re.findall(r"[MLHVCZ]|-?\d+(?:\.\d+)?", d)
    lines, here, i, cmd = [], (0.0, 0.0), 0, ""
    while i < len(tokens):
        if tokens[i].isalpha():
            cmd, i = tokens[i], i + 1
            if cmd == "Z":
                lines[-1].append(lines[-1][0])
                continue
        n = {"M": 2, "L": 2, "H": 1, "V": 1, "C": 6}[cmd]
        v = [float(t) for t in tokens[i:i + n]]
        i += n
        if cmd == "M":
            here = (v[0], v[1])
            lines.append([here])
            continue
        if cmd == "C":
            (x0, y0), (x1, y1, x2, y2, x3, y3) = here, v
            for k in range(1, 17):
                t = k / 16
                u = 1 - t
                lines[-1].append((u ** 3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t ** 3 * x3,
                                  u ** 3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t ** 3 * y3))
            here = (x3, y3)
            continue
        here = {"L": (v[0], v[-1]), "H": (v[0], here[1]), "V": (here[0], v[0])}[cmd]
        lines[-1].append(here)
    return lines


def _lines_of(el: ET.Element, m: tuple) -> list[list[tuple[float, float]]]:
    tag = el.tag.removeprefix(SVG)
    if tag == "path":
        lines = _path_points(el.get("d"))
    elif tag == "polygon":
        pts = [tuple(float(v) for v in p.split(",")) for p in el.get("points").split()]
        lines = [pts + pts[:1]]
    elif tag == "rect":
        x, y, w, h = (float(el.get(k)) for k in ("x", "y", "width", "height"))
        lines = [[(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)]]
    else:
        return []
    return [[_apply(m, *p) for p in line] for line in lines]


def _crosses(a: tuple, b: tuple, box: tuple) -> bool:
    """Whether the segment a-b runs inside `box` (its inner part, SLACK from each side)."""
    left, top, right, bottom = box[0] + SLACK, box[1] + SLACK, box[2] - SLACK, box[3] - SLACK
    if left >= right or top >= bottom:
        return False
    (x0, y0), (x1, y1) = a, b
    t0, t1 = 0.0, 1.0  # Liang-Barsky: clip the segment to the box
    for p, q in ((-(x1 - x0), x0 - left), (x1 - x0, right - x0), (-(y1 - y0), y0 - top), (y1 - y0, bottom - y0)):
        if p == 0:
            if q < 0:
                return False
        else:
            r = q / p
            if p < 0:
                t0 = max(t0, r)
            else:
                t1 = min(t1, r)
    return t0 < t1


def _overlap(a: tuple, b: tuple, slack: float = SLACK) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) >= slack and min(a[3], b[3]) - max(a[1], b[1]) >= slack


def layout(picture: str) -> tuple[list, list]:
    """The labels (name, box, group) and the lines (name, polyline, "line" or "arrowhead") of a drawn diagram.

    A stage's text is kept inside its stage's shape: the shape is sized to the text (its width from the diagram's
    own measure, close to the page's font), and an edge ends at the shape's border, not in its text."""
    labels, lines = [], []

    def walk(el: ET.Element, m: tuple, group: str | None, shape: tuple | None):
        tag = el.tag.removeprefix(SVG)
        if tag != "text":
            m = _times(m, _matrix(el.get("transform")))
        cls = el.get("class") or ""
        if tag == "g" and ("ls-edge" in cls or "ls-node" in cls):
            group = f'edge {el.get("data-edge")}' if "ls-edge" in cls else f'stage {el.get("data-stage")}'
            if "ls-node" in cls:
                outline = _lines_of(next(c for c in el if c.tag.removeprefix(SVG) in ("rect", "polygon")), m)[0]
                xs, ys = [p[0] for p in outline], [p[1] for p in outline]
                shape = (min(xs), min(ys), max(xs), max(ys))
        if tag == "text":
            box = _text_box(el, _times(m, _matrix(el.get("transform"))))
            if shape:
                box = (max(box[0], shape[0]), max(box[1], shape[1]), min(box[2], shape[2]), min(box[3], shape[3]))
            labels.append((f'"{el.text}"', box, group))
        elif group and group.startswith("edge") or "ls-turn" in cls:
            kind = "arrowhead" if tag == "polygon" else "line"
            lines.extend((group or "the turn box", line, kind) for line in _lines_of(el, m))
        for child in el:
            walk(child, m, group, shape)

    walk(ET.fromstring(picture), (1.0, 0.0, 0.0, 1.0, 0.0, 0.0), None, None)
    return labels, lines


def tangles(picture: str) -> list[str]:
    """Every label over another, and every edge (or the turn box) through a label."""
    labels, lines = layout(picture)
    lines = [(what, line, kind, _bounds(line)) for what, line, kind in lines]

    def through(line: list, bounds: tuple, box: tuple) -> bool:
        return _overlap(bounds, box, 0.0) and any(_crosses(a, b, box) for a, b in zip(line, line[1:]))

    out = []
    for i, (name, box, group) in enumerate(labels):
        for other, box2, group2 in labels[i + 1:]:
            # a stage's two lines are set a line height apart: their estimated boxes may touch
            if not (group == group2 and group and group.startswith("stage")) and _overlap(box, box2):
                out.append(f"{name} over {other}")
        for what, line, _, bounds in lines:
            if through(line, bounds, box):
                out.append(f"{what} through {name}")
    # where edges meet a stage, each arrowhead stands apart: no other edge's arrowhead or line over it or at its side
    heads = [(what, (b[0] - APART, b[1] - APART, b[2] + APART, b[3] + APART))
             for what, _, kind, b in lines if kind == "arrowhead"]
    for what, box in heads:
        for other, line, kind, bounds in lines:
            if other != what and other != "the turn box" and through(line, bounds, box):
                out.append(f"{other}'s {kind} through the arrowhead of {what}")
    return out


def _bounds(line: list) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in line], [p[1] for p in line]
    return min(xs), min(ys), max(xs), max(ys)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("lang", LANGS)
def test_no_label_of_the_diagram_is_over_another_or_crossed_by_an_edge(lang, size):
    translate = functools.partial(say, lang)
    found = {}
    for kind, args in _cases():
        clashes = tangles(svg(**args, translate=translate, size=SIZES[size]))
        for clash in clashes:
            found.setdefault(clash, f"{kind} {args}")
    assert found == {}, "\n".join(f"{clash}  (first at: {where})" for clash, where in found.items())


def test_in_presenter_mode_the_sub_agent_s_task_link_does_not_cross_max_turns():
    # subagent step 24 in Japanese: the parent takes the sub-agent's answer, the link drawn bold
    from pathlib import Path

    from loop.files import transcript
    from loop.views.step import view

    trace = transcript.load(Path(__file__).resolve().parent.parent / "samples" / "ja" / "subagent.json")
    record = view(trace, 23, "ja")
    picture = svg(**record.diagram, translate=functools.partial(say, "ja"), size=LARGE)
    assert 'data-edge="tools-child"' in picture and "最大 turn 数" in picture
    assert [clash for clash in tangles(picture) if "tools-child" in clash or "最大 turn 数" in clash] == []


@pytest.mark.parametrize("lang", LANGS)
def test_the_complete_loop_s_edges_meet_call_the_model_apart(lang):
    # overloaded, profile complete, at 1280 px: four edges end or start on stage 2's right side
    picture = svg(stage="retry", previous="call_model", complete=True, translate=functools.partial(say, lang))
    assert [clash for clash in tangles(picture) if "model" in clash] == []


@pytest.mark.parametrize("size", SIZES)
def test_a_refused_call_has_a_look_of_its_own_not_an_answer_s_end(size):
    """Stage 2 marked refused (its red, and the word), the loop's end drawn as an end by an error: never the lit
    stage's orange nor the green end of a loop that ended on an answer (end_turn)."""
    from loop.views.diagram import END_FILL, REFUSED_LINE

    translate = functools.partial(say, "ja")
    for compact in (False, True):
        refused = ET.fromstring(svg(stage="refused", previous="write_back", ended=True, refused=True, turn=2,
                                    compact=compact, translate=translate, size=SIZES[size]))
        nodes = {g.get("data-stage"): g for g in refused.iter(f"{SVG}g") if "ls-node" in (g.get("class") or "")}
        model, end = nodes["call_model"], nodes["stop"]
        assert "ls-refused" in model.get("class") and "ls-lit" in model.get("class")
        assert model.find(f"{SVG}rect").get("stroke") == REFUSED_LINE
        assert say("ja", "refused") in [t.text for t in model.iter(f"{SVG}text")]
        assert "ls-refused" in end.get("class") and end.find(f"{SVG}rect").get("fill") != END_FILL
        taken = [g.get("data-edge") for g in refused.iter(f"{SVG}g") if "ls-taken" in (g.get("class") or "")]
        assert taken == ["back-model"]  # the call was made: the edge into stage 2, as for any call
    answered = svg(stage="decide", previous="append_assistant", continues=False, ended=True, translate=translate)
    assert "ls-refused" not in answered and END_FILL in answered  # an answer's end: green


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("lang", LANGS)
def test_a_label_along_an_upright_line_is_written_upright_in_chinese_and_japanese(lang, size):
    """"next turn" runs up the left rail: English is turned to read upwards, 下一轮 and 次の turn are set vertically,
    their characters standing (turned with the line, they lay on their side)."""
    picture = ET.fromstring(svg(stage="call_model", previous="write_back", turn=2, size=SIZES[size],
                                translate=functools.partial(say, lang)))
    [label] = [t for t in picture.iter(f"{SVG}text") if t.text == say(lang, "next turn")]
    if lang == "en":
        assert (label.get("transform") or "").startswith("rotate(-90") and label.get("writing-mode") is None
    else:
        assert label.get("writing-mode") == "vertical-rl" and label.get("transform") is None


def test_a_learner_s_loop_refused_by_the_api_is_drawn_refused_at_that_call():
    """Your loop without the append: the API refuses its second call, and the loop ends there; the diagram at that
    step draws the refusal, and at the step before it, nothing of it."""
    from loop.views.diagram import svg_at
    from loop.yours.listing import CHAPTER_LOOP
    from loop.yours.reading import read
    from tests.learner import record

    broken = CHAPTER_LOOP.replace('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''', "")
    trace = read(record(broken)).trace
    [at] = [i for i, step in enumerate(trace.steps) if step.stage == "refused"]
    assert at == len(trace) - 1 and 'class="ls-node ls-lit ls-refused" data-stage="call_model"' in svg_at(trace, at)
    assert "ls-refused" not in svg_at(trace, at - 1)
