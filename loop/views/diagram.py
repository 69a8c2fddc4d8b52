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

Beyond the chapter, and drawn only for a run that has them: a compact stage
beside "call the model" (s06: compaction happens before a call), and a
sub-agent's loop under the chapter's loop (s04), lit while the cursor is inside
it, the parent's tool stage waiting for its answer.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from html import escape
from typing import Callable

from ..text.catalogs import N_
from ..engine.trace import Trace


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
# A call the API refused (a broken loop's 400): stage 2 marked refused, and the loop's end drawn as an end by an
# error, never as the green end an answer (`end_turn`) reaches
REFUSED_FILL, REFUSED_LINE, REFUSED_END = "#ffe3e3", "#c92a2a", "#fff5f5"
REFUSED = N_("refused")
TURN_LINE = "#748ffc"
BUSY = "#fff4e6"  # the tool stage waiting for its sub-agent
DIM = "#ced4da"

# Compaction (loop/engine/compact.py): a summary call, then the rewrite, before the call the model is about to make.
# Beside the chapter's loop, a stage's presenter label keeps two short lines: the right column's width is taken
# from the whole picture's, and a wide picture shrinks every stage's text on the projector.
COMPACT = Node(N_("compact messages\n(micro · summary)"), N_("compact\nmessages"), "compact", 1, col=1, in_turn=False)
COMPACT_EDGES = [Edge("compact", "model", N_("before a call")),
                 Edge("compact", "compact", N_("summary call"), route="self")]
COMPACT_TAKEN = {("compact", "call_model"): ("compact", "model"), ("summarize", "compact"): ("compact", "compact"),
                 ("compact", "summarize"): ("compact", "compact")}
# The complete loop (profiles.py): a retry on the call, a recovery from the decision, compaction when the prompt is
# too long. Drawn only for a run of that profile, right of the chapter's loop, each lit when taken.
RETRY = Node(N_("retry: wait 1 s × 2^k\n(timeout · 429 · 5xx · 529)"), N_("retry:\nwait 1 s × 2^k"), "retry", 0,
             col=1, in_turn=False)
RECOVER = Node(N_("recover: ask the model\nto continue"), N_("recover:\nask to continue"), "recover", 2, col=1,
               in_turn=False)
COMPLETE_TAKEN = {  # (stage before, stage now) -> the edge that led here
    ("call_model", "retry"): ("model", "retry"), ("summarize", "retry"): ("model", "retry"),
    ("retry", "retry"): ("model", "retry"), ("retry", "call_model"): ("retry", "model"),
    ("decide", "recover"): ("decide", "recover"), ("recover", "call_model"): ("recover", "model"),
    ("write_back", "refused"): ("model", "compact"), ("recover", "refused"): ("model", "compact"),
    ("retry", "refused"): ("model", "compact"), ("refused", "summarize"): ("model", "compact"),
    ("user_request", "refused"): ("model", "compact"), ("compact", "refused"): ("model", "compact"),
    ("user_request", "retry"): ("model", "retry"), ("write_back", "retry"): ("model", "retry"),
    ("recover", "retry"): ("model", "retry"), ("compact", "retry"): ("model", "retry"),
}
# Where the complete loop's edges meet stage 2's right side, from the top, in font sizes from its middle: each
# arrowhead apart from the next and from the line that leaves, and no two of them crossing on the way (the one that
# leaves runs up the inner lane, over the ones that come in).
MODEL_PORTS = {("model", "retry"): -1.15, ("retry", "model"): -0.55, ("compact", "model"): 0.3,
               ("recover", "model"): 1.15}
# A sub-agent's loop: the chapter's stages with its own first and last words.
CHILD_WORDS = {"user": N_("1 · the task's prompt\ninto its own messages"), "done": N_("its final text\ngoes back")}
CHILD_LABEL = N_("a sub-agent's loop (its own messages)")


LOOP_OUT = 16.5  # px: how far a stage's self-loop reaches out of its right side


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


def room(text: str, font: float) -> float:
    """The room kept for an edge's label: a CJK character 1 em, any other 0.55 em, wider than the page's font draws
    any label (its Latin letters are 0.45-0.51 em on average), so that no label runs into a line or the turn box."""
    return sum(1.0 if unicodedata.east_asian_width(ch) in "WF" else 0.55 for ch in text) * font


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


def _upward(x: float, y: float, text: str, size: float, colour: str, central: bool = True) -> str:
    """A label along a line that runs up and down, centred on y. Latin text is turned to read from bottom to top,
    its middle (`central`) or its baseline on x; text with Chinese characters or kana is set vertically, each
    character upright, as it is written (turned, 下一轮 would lie on its side), in the same place."""
    if any(unicodedata.east_asian_width(ch) in "WF" for ch in text):
        x = x if central else x - size * 0.3  # a turned line's glyphs stand on its baseline: left of x
        return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="middle" '
                f'dominant-baseline="central" writing-mode="vertical-rl" style="writing-mode: vertical-rl">'
                f'{escape(text)}</text>')
    turned = f'transform="rotate(-90 {x:.1f} {y:.1f})"'
    if central:
        return _label(x, y, text, size, colour).replace("<text ", f"<text {turned} ", 1)
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="middle" {turned}>'
            f'{escape(text)}</text>')


@dataclass
class _Drawing:
    parts: list
    width: float
    height: float
    centre: dict
    box: dict
    right_of_turn: float
    lane: float  # where a sub-agent's link runs down


def _draw(lit: str | None, taken: tuple | None, *, ended: bool, turn: int, translate: Callable[[str], str],
          size: Size, compact: bool = False, words: dict | None = None, dim: bool = False,
          complete: bool = False, linked: bool = False, refused: bool = False) -> _Drawing:
    """One loop laid out on the grid: `lit` filled, `taken` drawn bold; `words` replaces a node's label.

    `refused`: the call lit was refused and the loop ended there: stage 2 and the end drawn in the refusal's red,
    stage 2 labelled "refused" (beside it, or under it where compaction's edge comes in; the complete loop's edges
    leave no room there: its colours say it).

    `linked`: a sub-agent's loop is drawn under this one, its link running down from stage 4 (`_Drawing.lane`).

    `complete` adds the complete loop's retry and recovery stages in the right column, their edges routed in
    lanes between the turn box and that column."""
    compact = compact or complete
    nodes = dict(NODES, compact=COMPACT) if compact else NODES
    if complete:
        nodes = dict(nodes, retry=RETRY, recover=RECOVER)
    edges = EDGES + COMPACT_EDGES if compact else EDGES
    words = words or {}
    line_h = size.font * 1.25
    lines = {}
    for name, n in nodes.items():
        text = translate(words.get(name) or (n.short if size.short else n.label))
        # one line a stage in presenter mode, but the compact stage keeps two: beside stage 2 it would widen the
        # picture, and so shrink every stage's text
        two = name in ("compact", "retry", "recover") or name in words  # (a sub-agent's own first and last words: as long)
        lines[name] = [text.replace("\n", " ")] if size.short and not two else text.split("\n")
    box, taller = {}, 0.0
    for name, node in nodes.items():
        w = max(text_width(line, size.font) for line in lines[name]) + 2 * size.pad_x
        h = len(lines[name]) * line_h + 2 * size.pad_y
        if node.shape == "diamond":
            w, h = w * 1.3, h * 1.45
        if complete and name == "model":  # tall enough for the four edges that meet it on the right; the turn
            taller = max(0.0, 3.1 * size.font - h) / 2  # box's top rises with its top, and the labels above it
            h += 2 * taller
        box[name] = (w, h)
    rail = size.font * 2.2  # the left rail of "next turn", with its label beside it
    col0 = max(box[n][0] for n, node in nodes.items() if node.col == 0)
    cx0 = rail + 14 + col0 / 2
    # the turn box's right side: past the widest stage of column 0 and the self-loop's label, which the complete
    # loop puts under the self-loop (right of it, its width would widen the picture and shrink all its text)
    loop_label = room(translate("next tool_use"), size.small)
    loop_label_x = max(cx0 + 8, cx0 + box["tools"][0] / 2 + 22 - loop_label)  # where it starts, under the loop
    right_of_col0 = cx0 + max(max(box[n][0] for n, node in nodes.items() if node.in_turn) / 2 + 12,
                              box["tools"][0] / 2 + (30 if complete else LOOP_OUT + 4 + loop_label + 8))
    if complete:
        right_of_col0 = max(right_of_col0, loop_label_x + loop_label + 8)
    col1 = max(box[n][0] for n, node in nodes.items() if node.col == 1)
    left_of_col1 = right_of_col0 + 22
    lanes = (right_of_col0 + 6, right_of_col0 + 15)  # the complete loop's edges run up and down these two
    x1 = right_of_col0 - 4  # the turn box's right side
    # "max turns" above its line: in the turn box right of stage 5 when it fits there, else right of the box; a
    # sub-agent's link runs down right of stage 5 where the label is not, in the turn box when there is room
    max_turns = room(translate("max turns"), size.small)
    fits = {"max turns": not complete and cx0 + box["back"][0] / 2 + 6 + max_turns + 4 <= x1}
    lane = x1 + 12
    if linked and not complete and not fits["max turns"]:
        lane_in = max(cx0 + box["tools"][0] / 2 - max(12.0, size.font), cx0 + box["back"][0] / 2 + 10)
        lane = lane_in if lane_in <= x1 - 8 else lane
    clear = size.font * 0.7 * 1.3  # a bold arrowhead's length, and a little more: a label stays clear of it
    if not complete:  # "no" and "before a call": in the turn box between their stage and its side if they fit, else
        # right of it, with room kept for them before the right column
        for name, label in (("decide", "no"), ("model", "before a call")):
            text = room(translate(label), size.small)
            fits[label] = x1 - 4 - (cx0 + box[name][0] / 2 + clear) >= text
            if not fits[label] and (label == "no" or compact):
                left_of_col1 = max(left_of_col1, x1 + 4 + text + clear)
        if not fits["max turns"]:  # right of the turn box (or of the link), left of where its line turns up
            left_of_col1 = max(left_of_col1, max(x1, lane) + 6 + max_turns + 6 - col1 / 2)
    if complete:  # right of the lanes, the labels of the edges that run across: "before a call", "failed"
        left_of_col1 = max(left_of_col1 + 16, lanes[0] + 12 + text_width(translate("before a call"), size.small),
                           lanes[1] + 12 + text_width(translate("failed"), size.small))
    col_x = {0: cx0, 1: left_of_col1 + col1 / 2}
    rows = max(n.row for n in nodes.values()) + 1
    row_h = [max((box[n][1] for n, node in nodes.items() if node.row == r), default=0) for r in range(rows)]
    top = 6.0
    row_y = []
    for r in range(rows):
        # room for the turn box's name above stage 2; the complete loop's "call again" and "too long" labels
        # share that space, one above the other
        extra = size.small * 3.2 + taller if complete and r == 1 else size.small * 1.7 if r == 1 else 0
        if complete and r in (2, 5):  # under stage 4 and the compact stage, their self-loops' labels
            extra = max(0.0, size.small * 1.6 + 3 - size.gap)
        if complete and r == 4:  # "yes", between stop_reason and stage 4
            extra = max(0.0, size.small * 1.4 + 2 - size.gap)
        row_y.append(top + extra + row_h[r] / 2)
        top += extra + row_h[r] + size.gap
    centre = {name: (col_x[n.col], row_y[n.row]) for name, n in nodes.items()}
    width = col_x[1] + col1 / 2 + 6
    if compact:  # the summary call's loop and its label, right of the compact stage
        width = max(width, col_x[1] + box["compact"][0] / 2 + 28)
    right_lane = col_x[1] + col1 / 2 + 10
    if complete:  # "no retry left" runs down a lane right of the column (and of the summary call's loop), its
        right_lane = max(right_lane, col_x[1] + box["compact"][0] / 2 + 32)  # label turned along it
        width = right_lane + size.small * 1.6 + 4
    height = top - size.gap + 10

    def edge_of(name: str, side: str) -> tuple[float, float]:
        x, y = centre[name]
        w, h = box[name]
        return {"top": (x, y - h / 2), "bottom": (x, y + h / 2), "left": (x - w / 2, y), "right": (x + w / 2, y)}[side]

    parts: list[str] = []
    # -- the turn box --
    inside = [n for n, node in nodes.items() if node.in_turn]
    x0 = rail - 2
    y0 = min(centre[n][1] - box[n][1] / 2 for n in inside) - size.small * 1.5
    y1 = max(centre[n][1] + box[n][1] / 2 for n in inside) + 8
    turn_line = DIM if dim else TURN_LINE
    parts.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" rx="10" fill="none"'
                 f' stroke="{turn_line}" stroke-width="1.5" stroke-dasharray="6 4" class="ls-turn"/>')
    parts.append(_label(x0 + 10, y0 + size.small * 0.8, translate(TURN).replace("{k}", str(max(1, turn))),
                        size.small, turn_line, anchor="start", bold=True))

    # -- edges, under the nodes --
    for e in edges:
        bold = (e.a, e.b) == taken
        parts.append(f'<g class="ls-edge{" ls-taken" if bold else ""}" data-edge="{e.a}-{e.b}">')
        colour = LIT_LINE if bold else EDGE_INK
        stroke = f'stroke="{colour}" stroke-width="{3.2 if bold else 1.3}" fill="none"'
        if e.dashed:
            stroke += ' stroke-dasharray="5 4"'
        head = size.font * (0.7 if bold else 0.55)
        label = translate(e.label) if e.label else ""
        ink = LIT_LINE if bold else "#495057"
        a, b = nodes[e.a], nodes[e.b]
        if e.route == "self":
            x, y = edge_of(e.a, "right")
            h = box[e.a][1]
            y_out, y_in = y - h / 4, y + h / 4
            bulge = LOOP_OUT / 0.75  # a cubic curve reaches 3/4 of the way to its control points
            parts.append(f'<path d="M {x:.1f} {y_out:.1f} C {x + bulge:.1f} {y_out - 6:.1f}, {x + bulge:.1f} '
                         f'{y_in + 6:.1f}, {x + 1:.1f} {y_in:.1f}" {stroke}/>')
            parts.append(_arrow(x + 1, y_in, -1, 0, colour, head))
            if label and e.a == "compact" and complete:  # under the loop: the lane of "continue" runs left of it
                parts.append(_label(x + bulge, y + h / 2 + size.small * 0.9, label, size.small, ink, anchor="end"))
            elif label and e.a == "compact":  # under it: right of it would widen the picture
                parts.append(_label(centre[e.a][0], y + h / 2 + size.small * 0.9, label, size.small, ink))
            elif label and complete:  # under it: beside it would widen the turn box
                parts.append(_label(loop_label_x, y + h / 2 + size.small * 0.9, label, size.small, ink,
                                    anchor="start"))
            elif label:
                parts.append(_label(x + LOOP_OUT + 4, y, label, size.small, ink, anchor="start"))
        elif e.route == "back":
            sx, sy = edge_of(e.a, "left")
            tx, ty = edge_of(e.b, "left")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {rail / 2:.1f} V {ty:.1f} H {tx - 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 1, 0, colour, head))
            if label:
                parts.append(_upward(rail / 2 - 5, (sy + ty) / 2, label, size.small, ink, central=False))
        elif e.route == "corner":
            sx, sy = edge_of(e.a, "right")
            tx, ty = edge_of(e.b, "bottom")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {tx:.1f} V {ty + 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 0, -1, colour, head))
            if label and complete:  # along the horizontal stretch, right of the turn box
                parts.append(_label((right_of_col0 + tx) / 2 + 6, sy - size.small * 0.75, label, size.small, ink))
            elif label and fits["max turns"]:
                parts.append(_label(sx + 6, sy - size.small * 0.75, label, size.small, ink, anchor="start"))
            elif label:  # right of the turn box and of a sub-agent's link, left of where it turns up
                parts.append(_label((max(x1, lane) + tx) / 2, sy - size.small * 0.75, label, size.small, ink))
        elif a.col == b.col:
            sx, sy = edge_of(e.a, "bottom")
            tx, ty = edge_of(e.b, "top")
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} V {ty - 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 0, 1, colour, head))
            if label:  # right of the line and of its arrowhead (wider when the edge is drawn bold)
                parts.append(_label(sx + size.font * 0.35 + 3, (sy + ty) / 2, label, size.small, ink, anchor="start"))
        else:  # one row
            right = b.col > a.col
            sx, sy = edge_of(e.a, "right" if right else "left")
            tx, ty = edge_of(e.b, "left" if right else "right")
            if complete and (e.a, e.b) in MODEL_PORTS:
                sy = ty = ty + MODEL_PORTS[e.a, e.b] * size.font
            parts.append(f'<path d="M {sx:.1f} {sy:.1f} H {tx - 1 if right else tx + 1:.1f}" {stroke}/>')
            parts.append(_arrow(tx, ty, 1 if right else -1, 0, colour, head))
            if label and complete and e.b == "done":  # under it, past the lanes of the complete loop's edges
                parts.append(_label((lanes[1] + tx) / 2, sy + size.small * 0.8, label, size.small, ink))
            elif label and complete:  # "before a call": under it, right of the lane that runs down from it
                parts.append(_label(lanes[0] + 6, sy + size.small * 0.8, label, size.small, ink, anchor="start"))
            elif label:  # above it, in the turn box or right of it, clear of its arrowhead
                start, end = min(sx, tx) + (0 if right else clear), max(sx, tx) - (clear if right else 0)
                start, end = (start, x1) if fits.get(e.label) else (max(start, x1), end)
                parts.append(_label((start + end) / 2, sy - size.small * 0.75, label, size.small, ink))
        parts.append("</g>")

    if complete:
        parts += _complete_edges(centre, box, lanes, right_lane, y0, taken, translate, size)

    # -- nodes --
    for name, node in nodes.items():
        x, y = centre[name]
        w, h = box[name]
        fill, line, pen, dash = FILL, DIM if dim else LINE, 1.2, ""
        if name == lit and refused:
            fill, line, pen = REFUSED_FILL, REFUSED_LINE, 3.2
        elif name == lit:
            fill, line, pen = LIT_FILL, LIT_LINE, 3.2
        elif node.shape == "end" and ended and refused:
            fill, line, pen = REFUSED_END, REFUSED_LINE, 2.2
        elif node.shape == "end" and ended:
            fill, line, pen = END_FILL, END_LINE, 2.2
        if node.shape == "end" and (refused or not (ended or name == lit)):
            dash = ' stroke-dasharray="5 3"'
        attrs = f'fill="{fill}" stroke="{line}" stroke-width="{pen}"{dash}'
        classes = "ls-node ls-lit" if name == lit else "ls-node ls-ended" if node.shape == "end" and ended else "ls-node"
        if refused and (name == lit or node.shape == "end"):
            classes += " ls-refused"
        parts.append(f'<g class="{classes}" data-stage="{node.stage}">')
        if node.shape == "diamond":
            parts.append(f'<polygon points="{x:.1f},{y - h / 2:.1f} {x + w / 2:.1f},{y:.1f} {x:.1f},{y + h / 2:.1f} '
                         f'{x - w / 2:.1f},{y:.1f}" {attrs}/>')
        else:
            parts.append(f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" '
                         f'rx="{min(10, h / 3):.1f}" {attrs}/>')
        first = y - (len(lines[name]) - 1) * line_h / 2
        for i, text in enumerate(lines[name]):
            parts.append(_label(x, first + i * line_h, text, size.font, "#868e96" if dim else INK, bold=name == lit))
        if refused and name == lit and not complete:
            if compact:  # under it, right of its edge down: compaction's edge comes in at its right side
                parts.append(_label(x + size.font, y + h / 2 + size.small * 0.6, translate(REFUSED), size.small,
                                    REFUSED_LINE, anchor="start", bold=True))
            else:
                parts.append(_label(x + w / 2 + 6, y, translate(REFUSED), size.small, REFUSED_LINE, anchor="start",
                                    bold=True))
        parts.append("</g>")
    return _Drawing(parts, width, height, centre, box, right_of_col0, lane)


def _complete_edges(centre: dict, box: dict, lanes: tuple, right: float, turn_top: float, taken: tuple | None,
                    translate: Callable[[str], str], size: Size) -> list[str]:
    """The complete loop's edges: stage 2 to retry and back, retry to the end, stop_reason to recover, recover
    back to stage 2, stage 2 to compaction when the prompt is too long.

    They run up and down two `lanes` right of the turn box; "no retry left" down a lane at `right`. Each label
    sits where no other edge runs and no node stands: right of the lanes, or in the open space between two rows
    of the right column (`turn_top` is the turn box's top, which the edge to the compact stage passes above)."""
    def side(name: str, where: str, shift: float = 0.0) -> tuple[float, float]:
        x, y = centre[name]
        w, h = box[name]
        return {"left": (x - w / 2, y + shift), "right": (x + w / 2, y + shift), "top": (x + shift, y - h / 2),
                "bottom": (x + shift, y + h / 2)}[where]

    def between(upper: str, lower: str) -> float:  # the middle of the open space between two stages' rows
        return (side(upper, "bottom")[1] + side(lower, "top")[1]) / 2

    port = {edge: at * size.font for edge, at in MODEL_PORTS.items()}
    l1, l2 = lanes
    over = min(turn_top, side("compact", "top")[1]) - 8  # "too long" runs above the turn box and the compact stage
    small = size.small
    retry_in = (side("retry", "left")[0] + l2) / 2  # "failed": under its edge, between the lanes and the stage
    routes = [  # (a, b, label, points, dashed, where the label goes: x, y, anchor, turned)
        ("model", "retry", N_("failed"), [side("model", "right", port["model", "retry"]), (l1, None),
                                          (None, centre["retry"][1] + 6), side("retry", "left", 6)], False,
         (retry_in + 2, centre["retry"][1] + 6 + small * 0.8, "middle", False)),
        ("retry", "model", N_("call again"), [side("retry", "left", -6), (l2, None),
                                              (None, centre["model"][1] + port["retry", "model"]),
                                              side("model", "right", port["retry", "model"])], False,
         (l2 + 5, side("retry", "bottom")[1] + small * 0.8, "start", False)),
        ("retry", "done", N_("no retry left"), [side("retry", "right"), (right, None), (None, "done"),
                                                side("done", "right")], True,
         (right + small * 0.8, (centre["retry"][1] + centre["done"][1]) / 2, "middle", True)),
        ("decide", "recover", N_("max_tokens"), [side("decide", "right", -6), (l2, None),
                                                 (None, centre["recover"][1] - 5), side("recover", "left", -5)], False,
         (l2 + 5, between("recover", "done"), "start", False)),
        ("recover", "model", N_("continue"), [side("recover", "left", 5), (l1, None),
                                              (None, centre["model"][1] + port["recover", "model"]),
                                              side("model", "right", port["recover", "model"])], False,
         (l1 + 5, between("compact", "recover"), "start", False)),
        ("model", "compact", N_("too long"), [side("model", "top", box["model"][0] / 4), (None, over),
                                              (centre["compact"][0], None), side("compact", "top")], False,
         (l2 + 5, over - small * 0.75, "start", False)),
    ]
    parts = []
    for a, b, label, points, dashed, (lx, ly, anchor, turned) in routes:
        path, (x, y) = [], points[0]
        for px, py in points[1:]:  # a fixed x or y, the other kept; a name: that node's centre line
            if isinstance(py, str):
                py = centre[py][1]
            x, y = (x if px is None else px), (y if py is None else py)
            path.append((x, y))
        path[-1] = points[-1]
        bold = (a, b) == taken
        colour = LIT_LINE if bold else EDGE_INK
        stroke = f'stroke="{colour}" stroke-width="{3.2 if bold else 1.3}" fill="none"'
        if dashed:
            stroke += ' stroke-dasharray="5 4"'
        d = f"M {points[0][0]:.1f} {points[0][1]:.1f} " + " ".join(f"L {px:.1f} {py:.1f}" for px, py in path)
        (ex, ey), (fx, fy) = ([points[0]] + path)[-2], path[-1]
        norm = max(1e-6, abs(fx - ex) + abs(fy - ey))
        parts.append(f'<g class="ls-edge{" ls-taken" if bold else ""}" data-edge="{a}-{b}"><path d="{d}" {stroke}/>'
                     + _arrow(fx, fy, (fx - ex) / norm, (fy - ey) / norm, colour, size.font * (0.7 if bold else 0.55)))
        ink = LIT_LINE if bold else "#495057"
        if turned:  # along a lane that runs down: read from bottom to top, as "next turn" on the left
            text = _upward(lx, ly, translate(label), small, ink)
        else:
            text = _label(lx, ly, translate(label), small, ink, anchor=anchor)
        parts.append(text + "</g>")
    return parts


def _lit_and_taken(stage: str | None, previous: str | None, continues: bool | None, complete: bool = False,
                   ended: bool = False, recovering: bool = False) -> tuple:
    lit = NODE_OF.get(stage or "")
    if stage in ("summarize", "compact"):
        lit = "compact"
    if stage == "refused" and not complete:  # a broken loop's call, refused: it is stage 2, reached as a call is
        lit, stage = "model", "call_model"
    taken = COMPACT_TAKEN.get((previous or "", stage or "")) or TAKEN.get((previous or "", stage or ""))
    if stage == "decide" and continues is not None:
        taken = ("decide", "tools") if continues else ("decide", "done")
    if complete:
        lit = {"retry": "retry", "recover": "recover", "refused": "model"}.get(stage or "", lit)
        taken = COMPLETE_TAKEN.get((previous or "", stage or ""), taken)
        if stage == "retry" and ended:
            taken = ("retry", "done")
        if stage == "decide" and recovering:
            taken = ("decide", "recover")
    return lit, taken


def svg(stage: str | None = None, previous: str | None = None, *, continues: bool | None = None,
        ended: bool = False, turn: int = 1, translate: Callable[[str], str] = str, size: Size = NORMAL,
        compact: bool = False, child: dict | None = None, complete: bool = False, recovering: bool = False,
        refused: bool = False) -> str:
    """The loop as an SVG element, `stage` lit and the edge from `previous` drawn bold.

    At a `decide` step the edge drawn is the one it chose: to the tools when
    `continues`, to the end otherwise. `turn` names the turn box; `translate`
    turns each English label into the page's language. `compact` adds the
    compaction stage beside the call; `child` ({"stage", "previous",
    "continues", "ended", "turn", "returned"} of a sub-agent's step, or {} when
    the cursor is not in one) adds a sub-agent's loop under the chapter's,
    joined to its tool stage. `refused`: the call of this `refused` step was refused and the loop ends there
    (a broken loop's 400), which has a look of its own, not an answer's end.
    """
    inside = bool(child and child.get("stage"))
    if inside:
        return _inside(child, turn, translate, size)
    lit, taken = _lit_and_taken(stage, previous, continues, complete, ended, recovering)
    main = _draw(lit, taken, ended=ended, turn=turn, translate=translate, size=size, compact=compact,
                 complete=complete, linked=child is not None, refused=refused and stage == "refused" and ended)
    parts, width, height = list(main.parts), main.width, main.height
    if child is not None:  # a sub-agent's loop, not entered at this step: drawn small and dim under the chapter's
        small = Size(font=round(size.font * 0.85, 1), pad_x=size.pad_x * 0.8, pad_y=size.pad_y * 0.8,
                     gap=size.gap * 0.6, short=True)
        sub = _draw(None, None, ended=False, turn=1, translate=translate, size=small, words=CHILD_WORDS, dim=True)
        title_h = small.small * 2.2
        fx, fy = 4.0, height + max(18.0, 4 + size.small * 1.4)  # the link's label above it, under the turn box
        fw, fh = max(sub.width + 12, text_width(translate(CHILD_LABEL), small.small) + 24), sub.height + title_h + 6
        parts.append('<g class="ls-child">')
        parts.append(f'<rect x="{fx:.1f}" y="{fy:.1f}" width="{fw:.1f}" height="{fh:.1f}" rx="12" fill="none" '
                     f'stroke="{DIM}" stroke-width="1.2" stroke-dasharray="7 4"/>')
        parts.append(_label(fx + 12, fy + title_h / 2, translate(CHILD_LABEL), small.small, "#495057", anchor="start"))
        parts.append(f'<g transform="translate({fx + 6:.1f},{fy + title_h:.1f})">' + "".join(sub.parts) + "</g>")
        parts.append("</g>")
        # One dashed link between the tool stage and the frame: "task" goes down into the sub-agent, "tool_result"
        # comes back up (bold at the step that takes the answer). It leaves the tool stage's bottom, left of the
        # stage's own loop and its arrowhead, runs right between stages 4 and 5, and down right of the turn box;
        # in the complete loop, whose self-loop label is under stage 4, it leaves the stage's top instead.
        tx, ty = main.centre["tools"]
        sx, end = tx + main.box["tools"][0] / 2 - max(12.0, size.font), ty + main.box["tools"][1] / 2
        y = (end + main.centre["back"][1] - main.box["back"][1] / 2) / 2
        if complete:
            end = ty - main.box["tools"][1] / 2
            y = (end + main.centre["decide"][1] + main.box["decide"][1] / 2) / 2
        lane = main.lane
        lit_it = bool(child.get("returned"))
        colour = LIT_LINE if lit_it else EDGE_INK
        stroke = f'stroke="{colour}" stroke-width="{3.2 if lit_it else 1.3}" fill="none" stroke-dasharray="5 4"'
        parts.append(f'<g class="ls-edge{" ls-taken" if lit_it else ""}" data-edge="tools-child">')
        parts.append(f'<path d="M {sx:.1f} {end + (-1 if complete else 1):.1f} V {y:.1f} H {lane:.1f} V {fy - 1:.1f}" '
                     f'{stroke}/>')
        parts.append(_arrow(lane, fy, 0, 1, colour, size.font * 0.55))
        parts.append(_arrow(sx, end, 0, 1 if complete else -1, colour, size.font * 0.55))
        parts.append(_label(lane + 6, fy - size.small * 0.9, "task ↓ ↑ tool_result", size.small,
                            LIT_LINE if lit_it else "#495057", anchor="start"))
        parts.append("</g>")
        width = max(width, fx + fw + 4, lane + 10 + text_width("task ↓ ↑ tool_result", size.small))
        height = fy + fh + 4
    kind = "ls-diagram ls-complete" if complete else "ls-diagram"  # the page gives the complete loop more room
    return (f'<svg class="{kind}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" role="img" '
            f'style="max-width:100%;height:auto;display:block;margin:0 auto">' + "".join(parts) + "</svg>")


def _inside(child: dict, turn: int, translate: Callable[[str], str], size: Size) -> str:
    """The cursor inside a sub-agent: its loop at full size, lit, under the parent's tool stage that waits for it.

    Like a call frame: the loop being stepped is the one drawn large (on a projector its lit stage stays on the
    screen); the parent shows only where it waits, stage 4 of its turn.
    """
    c_lit, c_taken = _lit_and_taken(child.get("stage"), child.get("previous"), child.get("continues"))
    tight = Size(font=size.font, pad_x=size.pad_x, pad_y=size.pad_y, gap=round(size.gap * 0.55, 1), short=size.short)
    sub = _draw(c_lit, c_taken, ended=bool(child.get("ended")), turn=child.get("turn") or 1, translate=translate,
                size=tight, words=CHILD_WORDS)  # rows closer: with the parent above, it must still fit a screen
    parts: list[str] = []
    # the parent's tool stage, waiting
    text = f'{translate(NODES["tools"].short)} · {translate(TURN).replace("{k}", str(max(1, turn)))}'
    w, h = text_width(text, size.small) + 2 * size.pad_x, size.small * 1.25 + 2 * size.pad_y
    x, y = 6.0, 4.0
    parts.append(f'<g class="ls-node ls-busy" data-stage="run_tool"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                 f'height="{h:.1f}" rx="{min(10, h / 3):.1f}" fill="{BUSY}" stroke="{LIT_LINE}" stroke-width="2.2" '
                 f'stroke-dasharray="5 3"/>' + _label(x + w / 2, y + h / 2, text, size.small, INK) + "</g>")
    # "task" goes down into the sub-agent's loop, its final text comes back up as the tool_result
    top = y + h + size.small * 1.7
    lx = x + 24
    start = child.get("stage") == "user_request" and not child.get("previous")
    colour = LIT_LINE if start else EDGE_INK
    parts.append(f'<g class="ls-edge{" ls-taken" if start else ""}" data-edge="tools-child">'
                 f'<path d="M {lx:.1f} {y + h:.1f} V {top - 1:.1f}" stroke="{colour}" '
                 f'stroke-width="{3.2 if start else 1.3}" fill="none" stroke-dasharray="5 4"/>'
                 + _arrow(lx, top, 0, 1, colour, size.font * 0.55)
                 + _label(lx + 8, (y + h + top) / 2, "task ↓ ↑ tool_result", size.small, colour, anchor="start")
                 + "</g>")
    title_h = size.small * 1.8
    fw = max(sub.width + 12, text_width(translate(CHILD_LABEL), size.small) + 24)
    fh = sub.height + title_h + 6
    parts.append(f'<g class="ls-child ls-inside"><rect x="4" y="{top:.1f}" width="{fw:.1f}" height="{fh:.1f}" '
                 f'rx="12" fill="none" stroke="{LIT_LINE}" stroke-width="2.2" stroke-dasharray="7 4"/>'
                 + _label(16, top + title_h / 2, translate(CHILD_LABEL), size.small, LIT_LINE, anchor="start",
                          bold=True)
                 + f'<g transform="translate(10,{top + title_h:.1f})">' + "".join(sub.parts) + "</g></g>")
    width = max(fw + 8, x + w + 4, lx + 16 + text_width("task ↓ ↑ tool_result", size.small))
    height = top + fh + 4
    return (f'<svg class="ls-diagram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" role="img" '
            f'style="max-width:100%;height:auto;display:block;margin:0 auto">' + "".join(parts) + "</svg>")


def svg_at(trace: Trace, cursor: int, translate: Callable[[str], str] = str, size: Size = NORMAL) -> str:
    """The diagram for step `cursor` of `trace` (nothing lit before the first step): `svg(**svg_args(...))`."""
    return svg(**svg_args(trace, cursor), translate=translate, size=size)


def svg_args(trace: Trace, cursor: int) -> dict:
    """What `svg` draws for step `cursor` of `trace`, as plain data (its arguments but the language and size).

    A run with compaction draws its compact stage. The sub-agent's loop is drawn under the chapter's in a
    live run of toolset s04, and in any trace while the cursor is in a sub-agent or at the step that goes in
    or takes its answer: elsewhere the chapter's loop stays as small as it is.
    """
    toolset = trace.meta.get("toolset")
    complete = trace.meta.get("profile") == "complete"
    compact = toolset == "s06" or trace.has_compaction
    nested = toolset == "s04" or (trace.has_threads and _near_a_sub_agent(trace, cursor))
    child = {} if nested else None
    if not 0 <= cursor < len(trace):
        return {"compact": compact, "child": child, "complete": complete}
    step = trace.steps[cursor]
    before = trace.previous_in_thread(cursor)
    previous = trace.steps[before].stage if before is not None else None
    if not trace.thread_of(cursor).is_main:  # inside a sub-agent: its loop is lit, the parent waits at its tools
        child = {"stage": step.stage, "previous": previous, "continues": _continues(step),
                 "ended": step.ended is not None, "turn": max(1, step.turn)}
        thread = trace.thread_of(cursor)
        parent = (trace.opened_at(thread.id) or 0) - 1  # the parent's step that started it, the first before it
        while parent >= 0 and trace.steps[parent].thread != thread.parent:
            parent -= 1
        turn = max(1, trace.steps[parent].turn) if parent >= 0 else 1
        return {"stage": None, "previous": None, "turn": turn, "compact": compact, "child": child}
    if nested and step.stage == "run_tool" and step.detail.thread:
        child = {"returned": True}
    return {"stage": step.stage, "previous": previous, "continues": _continues(step),
            "ended": step.ended is not None, "turn": max(1, step.turn), "compact": compact, "child": child,
            "complete": complete, "recovering": step.stage == "decide" and bool(step.detail.recover),
            "refused": step.stage == "refused" and step.ended is not None}


def _continues(step) -> bool | None:
    """A decide step's `continues` (the branch it took); None at any other stage."""
    return step.detail.continues if step.stage == "decide" else None


def _near_a_sub_agent(trace: Trace, cursor: int) -> bool:
    """In a sub-agent's thread, at the parent's step that takes a sub-agent's answer, or right before one starts."""
    if not 0 <= cursor < len(trace):
        return False
    step = trace.steps[cursor]
    if not trace.thread_of(cursor).is_main or (step.stage == "run_tool" and step.detail.thread):
        return True
    return cursor + 1 < len(trace) and trace.opened_at(trace.steps[cursor + 1].thread) == cursor + 1 \
        and trace.steps[cursor + 1].thread != step.thread


def labels() -> list[str]:
    """Every English text the diagram draws (for the translations)."""
    out = [n.label for n in NODES.values()] + [n.short for n in NODES.values()] + [COMPACT.label, CHILD_LABEL]
    out += [RETRY.label, RECOVER.label, "failed", "call again", "no retry left", "max_tokens", "continue", "too long",
            REFUSED]
    return out + [e.label for e in EDGES + COMPACT_EDGES if e.label] + [TURN] + list(CHILD_WORDS.values())
