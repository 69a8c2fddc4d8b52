"""The loop drawn as an SVG picture, the stage of step i lit up and the edge that led there drawn bold.

              1 · user request into messages
      .- - - - - - - - - - - - - - - - turn k - .
      |  2 · call the model      <------------.  |
      |  3 · append the assistant response    |  |
      |  stop_reason == tool_use? --no--> the loop ends
      |  4 · run each tool_use  (next tool_use)  |
      |  5 · write tool_results back --next turn-'
      '- - - - - - - - - - - - - - - - - - - - - '

The turn box holds stages 2 to 5: a turn, as the chapter counts it (stage 1
comes once, before turn 1). The picture is laid out here, on a grid of rows and
columns, rather than by Graphviz in the browser: a click redraws it as plain
SVG, its text has the size asked for (large on a projector), and nothing moves
from one step to the next but the colours. To add a node, give it a cell in
NODES; an edge between two nodes of one column or one row is routed by itself.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from html import escape
from typing import Callable

from .catalogs import N_
from .trace import Trace


@dataclass(frozen=True)
class Node:
    label: str  # English; the page translates it. "\n" breaks a line
    short: str  # one line, for presenter mode
    stage: str  # the stage it stands for
    row: int
    col: int = 0
    shape: str = "box"  # "box", "diamond" or "end"
    in_turn: bool = True  # inside the turn box


@dataclass(frozen=True)
class Edge:
    a: str
    b: str
    label: str = ""
    route: str = "auto"  # "auto" (same column or row), "self", "back" (up the left rail), "corner" (across, then up)
    dashed: bool = False


NODES = {
    "user": Node(N_("1 · user request\ninto messages"), N_("1 · user request into messages"), "user_request", 0,
                 in_turn=False),
    "model": Node(N_("2 · call the model"), N_("2 · call the model"), "call_model", 1),
    "append": Node(N_("3 · append the\nassistant response"), N_("3 · append the assistant response"), "append_assistant", 2),
    "decide": Node(N_("stop_reason\n== tool_use?"), N_("stop_reason == tool_use?"), "decide", 3, shape="diamond"),
    "tools": Node(N_("4 · run each tool_use,\ncollect its tool_result"), N_("4 · run each tool_use"), "run_tool", 4),
    "back": Node(N_("5 · write tool_results\nback into messages"), N_("5 · write tool_results back"), "write_back", 5),
    "done": Node(N_("the loop ends"), N_("the loop ends"), "stop", 3, col=1, shape="end", in_turn=False),
}
EDGES = [
    Edge("user", "model"),
    Edge("model", "append"),
    Edge("append", "decide"),
    Edge("decide", "tools", N_("yes")),
    Edge("decide", "done", N_("no")),
    Edge("tools", "tools", N_("next tool_use"), route="self"),
    Edge("tools", "back"),
    Edge("back", "model", N_("next turn"), route="back"),
    Edge("back", "done", N_("max turns"), route="corner", dashed=True),
]
# (stage before, stage now) -> the edge that led here
TAKEN = {
    ("user_request", "call_model"): ("user", "model"),
    ("write_back", "call_model"): ("back", "model"),
    ("call_model", "append_assistant"): ("model", "append"),
    ("append_assistant", "decide"): ("append", "decide"),
    ("decide", "run_tool"): ("decide", "tools"),
    ("run_tool", "run_tool"): ("tools", "tools"),
    ("run_tool", "write_back"): ("tools", "back"),
    ("write_back", "stop"): ("back", "done"),
}
NODE_OF = {node.stage: name for name, node in NODES.items()}
TURN = N_("turn {k}")  # the turn box's name

FILL, LINE, INK, EDGE_INK = "#f1f3f5", "#adb5bd", "#212529", "#868e96"
LIT_FILL, LIT_LINE = "#ffe3c2", "#d9480f"  # the stage just executed, the edge taken
END_FILL, END_LINE = "#d3f9d8", "#2b8a3e"
TURN_LINE = "#748ffc"


@dataclass(frozen=True)
class Size:
    font: float  # px, node labels
    pad_x: float
    pad_y: float
    gap: float  # between rows
    short: bool  # one-line labels

    @property
    def small(self) -> float:  # edge labels
        return round(self.font * 0.82, 1)


NORMAL = Size(font=13, pad_x=10, pad_y=6, gap=22, short=False)
LARGE = Size(font=19, pad_x=11, pad_y=5, gap=19, short=True)  # presenter mode: as large as the note's text


def text_width(text: str, font: float) -> float:
    """About how wide `text` is set in the page's sans-serif at `font` px (a little generous)."""
    width = 0.0
    for ch in text:
        if unicodedata.east_asian_width(ch) in "WF":
            width += 1.0
        elif ch in "mwMW@—":
            width += 0.8
        elif ch.isupper() or ch in "_=?":
            width += 0.6
        elif ch in "iljtfr.,:;'|!·() ":
            width += 0.3
        else:
            width += 0.51
    return width * font


def _arrow(x: float, y: float, dx: float, dy: float, colour: str, size: float) -> str:
    """An arrowhead at (x, y) pointing along (dx, dy), a unit direction."""
    px, py = -dy, dx
    a = (x - dx * size + px * size * 0.5, y - dy * size + py * size * 0.5)
    b = (x - dx * size - px * size * 0.5, y - dy * size - py * size * 0.5)
    return f'<polygon points="{x:.1f},{y:.1f} {a[0]:.1f},{a[1]:.1f} {b[0]:.1f},{b[1]:.1f}" fill="{colour}"/>'


def _label(x: float, y: float, text: str, size: float, colour: str, anchor: str = "middle", bold: bool = False) -> str:
    weight = ' font-weight="600"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="{anchor}"'
            f' dominant-baseline="central"{weight}>{escape(text)}</text>')


def svg(stage: str | None = None, previous: str | None = None, *, continues: bool | None = None,
        ended: bool = False, turn: int = 1, translate: Callable[[str], str] = str, size: Size = NORMAL) -> str:
    """The loop as an SVG element, `stage` lit and the edge from `previous` drawn bold.

    At a `decide` step the edge drawn is the one it chose: to the tools when
    `continues`, to the end otherwise. `turn` names the turn box; `translate`
    turns each English label into the page's language.
    """
    lit = NODE_OF.get(stage or "")
    taken = TAKEN.get((previous or "", stage or ""))
    if stage == "decide" and continues is not None:
        taken = ("decide", "tools") if continues else ("decide", "done")

    # -- sizes and places --
    line_h = size.font * 1.25
    lines = {name: translate(n.short if size.short else n.label).split("\n") for name, n in NODES.items()}
    box = {}
    for name, node in NODES.items():
        w = max(text_width(line, size.font) for line in lines[name]) + 2 * size.pad_x
        h = len(lines[name]) * line_h + 2 * size.pad_y
        if node.shape == "diamond":
            w, h = w * 1.3, h * 1.45
        box[name] = (w, h)
    rail = size.font * 2.2  # the left rail of "next turn", with its label beside it
    loop_room = text_width(translate("next tool_use"), size.small) + 30  # the self-loop and its label
    col0 = max(box[n][0] for n, node in NODES.items() if node.col == 0)
    cx0 = rail + 14 + col0 / 2
    # the turn box's right side: past the widest stage of column 0 and the self-loop's label
    right_of_col0 = cx0 + max(max(box[n][0] for n, node in NODES.items() if node.in_turn) / 2 + 12,
                              box["tools"][0] / 2 + loop_room)
    col_x = {0: cx0, 1: right_of_col0 + 22 + box["done"][0] / 2}
    rows = max(n.row for n in NODES.values()) + 1
    row_h = [max((box[n][1] for n, node in NODES.items() if node.row == r), default=0) for r in range(rows)]
    top = 6.0
    row_y = []
    for r in range(rows):
        extra = size.small * 1.7 if r == 1 else 0  # room for the turn box's name above stage 2
        row_y.append(top + extra + row_h[r] / 2)
        top += extra + row_h[r] + size.gap
    centre = {name: (col_x[n.col], row_y[n.row]) for name, n in NODES.items()}
    width = col_x[1] + box["done"][0] / 2 + 6
    height = top - size.gap + 10

    def edge_of(name: str, side: str) -> tuple[float, float]:
        x, y = centre[name]
        w, h = box[name]
        return {"top": (x, y - h / 2), "bottom": (x, y + h / 2), "left": (x - w / 2, y), "right": (x + w / 2, y)}[side]

    parts: list[str] = []
    # -- the turn box --
    inside = [n for n, node in NODES.items() if node.in_turn]
    x0 = rail - 2
    y0 = min(centre[n][1] - box[n][1] / 2 for n in inside) - size.small * 1.5
    x1 = right_of_col0 - 4
    y1 = max(centre[n][1] + box[n][1] / 2 for n in inside) + 8
    parts.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="10" fill="none"'
                 f' stroke="{TURN_LINE}" stroke-width="1.5" stroke-dasharray="6 4" class="ls-turn"/>')
    parts.append(_label(x0 + 10, y0 + size.small * 0.8, translate(TURN).replace("{k}", str(max(1, turn))),
                        size.small, TURN_LINE, anchor="start", bold=True))

    # -- edges, under the nodes --
    for e in EDGES:
        bold = (e.a, e.b) == taken
        parts.append(f'<g class="ls-edge{" ls-taken" if bold else ""}" data-edge="{e.a}-{e.b}">')
        colour = LIT_LINE if bold else EDGE_INK
        stroke = f'stroke="{colour}" stroke-width="{3.2 if bold else 1.3}" fill="none"'
        if e.dashed:
            stroke += ' stroke-dasharray="5 4"'
        head = size.font * (0.7 if bold else 0.55)
        label = translate(e.label) if e.label else ""
        ink = LIT_LINE if bold else "#495057"
        a, b = NODES[e.a], NODES[e.b]
        if e.route == "self":
            x, y = edge_of(e.a, "right")
            h = box[e.a][1]
            y_out, y_in = y - h / 4, y + h / 4
            bulge = 22
            parts.append(f'<path d="M {x:.1f} {y_out:.1f} C {x + bulge:.1f} {y_out - 6:.1f}, {x + bulge:.1f} '
                         f'{y_in + 6:.1f}, {x + 1:.1f} {y_in:.1f}" {stroke}/>')
            parts.append(_arrow(x + 1, y_in, -1, 0, colour, head))
            if label:
                parts.append(_label(x + bulge + 4, y, label, size.small, ink, anchor="start"))
        elif e.route == "back":
            sx, sy = edge_of(e.a, "left")
            tx, ty = edge_of(e.b, "left")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {rail / 2:.1f} V {ty:.1f} H {tx - 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 1, 0, colour, head))
            if label:
                mid = (sy + ty) / 2
                parts.append(f'<text x="{rail / 2 - 5:.1f}" y="{mid:.1f}" font-size="{size.small}" fill="{ink}" '
                             f'text-anchor="middle" transform="rotate(-90 {rail / 2 - 5:.1f} {mid:.1f})">'
                             f'{escape(label)}</text>')
        elif e.route == "corner":
            sx, sy = edge_of(e.a, "right")
            tx, ty = edge_of(e.b, "bottom")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {tx:.1f} V {ty + 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 0, -1, colour, head))
            if label:  # along the horizontal stretch, right of the turn box
                parts.append(_label((right_of_col0 + tx) / 2 + 6, sy - size.small * 0.75, label, size.small, ink))
        elif a.col == b.col:
            sx, sy = edge_of(e.a, "bottom")
            tx, ty = edge_of(e.b, "top")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} V {ty - 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 0, 1, colour, head))
            if label:
                parts.append(_label(sx + 6, (sy + ty) / 2, label, size.small, ink, anchor="start"))
        else:  # one row
            sx, sy = edge_of(e.a, "right" if b.col > a.col else "left")
            tx, ty = edge_of(e.b, "left" if b.col > a.col else "right")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {tx - 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 1 if b.col > a.col else -1, 0, colour, head))
            if label:
                parts.append(_label((sx + tx) / 2, sy - size.small * 0.75, label, size.small, ink))
        parts.append("</g>")

    # -- nodes --
    for name, node in NODES.items():
        x, y = centre[name]
        w, h = box[name]
        fill, line, pen, dash = FILL, LINE, 1.2, ""
        if name == lit:
            fill, line, pen = LIT_FILL, LIT_LINE, 3.2
        elif node.shape == "end" and ended:
            fill, line, pen = END_FILL, END_LINE, 2.2
        if node.shape == "end" and not (ended or name == lit):
            dash = ' stroke-dasharray="5 3"'
        attrs = f'fill="{fill}" stroke="{line}" stroke-width="{pen}"{dash}'
        classes = "ls-node ls-lit" if name == lit else "ls-node ls-ended" if node.shape == "end" and ended else "ls-node"
        parts.append(f'<g class="{classes}" data-stage="{node.stage}">')
        if node.shape == "diamond":
            parts.append(f'<polygon points="{x:.1f},{y - h / 2:.1f} {x + w / 2:.1f},{y:.1f} {x:.1f},{y + h / 2:.1f} '
                         f'{x - w / 2:.1f},{y:.1f}" {attrs}/>')
        else:
            parts.append(f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" '
                         f'rx="{min(10, h / 3):.1f}" {attrs}/>')
        first = y - (len(lines[name]) - 1) * line_h / 2
        for i, text in enumerate(lines[name]):
            parts.append(_label(x, first + i * line_h, text, size.font, INK, bold=name == lit))
        parts.append("</g>")

    return (f'<svg class="ls-diagram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" role="img" '
            f'style="max-width:100%;height:auto;display:block;margin:0 auto">' + "".join(parts) + "</svg>")


def svg_at(trace: Trace, cursor: int, translate: Callable[[str], str] = str, size: Size = NORMAL) -> str:
    """The diagram for step `cursor` of `trace` (nothing lit before the first step)."""
    if not 0 <= cursor < len(trace):
        return svg(translate=translate, size=size)
    step = trace.steps[cursor]
    previous = trace.steps[cursor - 1].stage if cursor > 0 else None
    return svg(step.stage, previous, continues=step.detail.get("continues"), ended=step.ended is not None,
               turn=max(1, step.turn), translate=translate, size=size)


def labels() -> list[str]:
    """Every English text the diagram draws (for the translations)."""
    out = [n.label for n in NODES.values()] + [n.short for n in NODES.values()]
    return out + [e.label for e in EDGES if e.label] + [TURN]
