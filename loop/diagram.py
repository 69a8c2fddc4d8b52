"""The loop drawn as a Graphviz DOT string, the stage of step i lit up.

    user -> model -> append -> stop_reason? -> run tools -> write back -> model
                                     '-> done

No graphviz package is needed: the pages hand the string to st.graphviz_chart.
"""

from __future__ import annotations

import unicodedata
from typing import Callable

from .catalogs import N_
from .trace import Trace

NODES = {  # node: (label, the stage it stands for)
    "user": (N_("1 · user request\ninto messages"), "user_request"),
    "model": (N_("2 · call the model"), "call_model"),
    "append": (N_("3 · append the\nassistant response"), "append_assistant"),
    "decide": (N_("4 · stop_reason\n== tool_use?"), "decide"),
    "tools": (N_("4 · run each tool_use,\ncollect its tool_result"), "run_tool"),
    "back": (N_("5 · write tool_results\nback into messages"), "write_back"),
    "done": (N_("the loop ends"), "stop"),
}
EDGES = [  # (from, to, label)
    ("user", "model", ""),
    ("model", "append", ""),
    ("append", "decide", ""),
    ("decide", "tools", N_("yes")),
    ("decide", "done", N_("no")),
    ("tools", "tools", N_("next tool_use")),
    ("tools", "back", ""),
    ("back", "model", N_("next turn")),
    ("back", "done", N_("max turns")),
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
NODE_OF = {stage: node for node, (_, stage) in NODES.items()}

LIT_FILL, LIT_LINE = "#ffe3c2", "#d9480f"  # the stage just executed, the edge taken
END_FILL, END_LINE = "#d3f9d8", "#2b8a3e"


def _wide(label: str) -> int:
    """The most full-width (CJK) characters on one line of `label`.

    Graphviz sizes a box with Latin font metrics and counts such a character
    about half as wide as it is drawn, so a box is widened by that much.
    """
    return max(sum(1 for c in line if unicodedata.east_asian_width(c) in "WF") for line in label.split("\n"))


def dot(stage: str | None = None, previous: str | None = None, *, continues: bool | None = None,
        ended: bool = False, translate: Callable[[str], str] = str) -> str:
    """The loop with `stage` lit and the edge from `previous` drawn bold.

    At a `decide` step the edge drawn is the one it chose: to the tools when
    `continues`, to the end otherwise. `translate` turns each English label
    into the page's language.
    """
    lit = NODE_OF.get(stage or "")
    taken = TAKEN.get((previous or "", stage or ""))
    if stage == "decide" and continues is not None:
        taken = ("decide", "tools") if continues else ("decide", "done")
    lines = [
        "digraph loop {",
        '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.2, ranksep=0.22, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#f1f3f5", color="#adb5bd", fontname="Helvetica",'
        ' fontsize=10, fontcolor="#212529", margin="0.1,0.04"];',
        '  edge [color="#adb5bd", fontname="Helvetica", fontsize=9, fontcolor="#495057", arrowsize=0.6];',
    ]
    for node, (label, _) in NODES.items():
        text = translate(label)
        attrs = ['label="' + text.replace("\n", "\\n") + '"']
        if node == "decide":
            attrs.append("shape=diamond, margin=0.02")
        elif _wide(text):
            attrs.append(f'margin="{0.1 + 0.04 * _wide(text):.2f},0.04"')
        if node == "done":
            attrs.append("shape=box, style=\"rounded,filled,dashed\"")
        if node == lit:
            attrs.append(f'fillcolor="{LIT_FILL}", color="{LIT_LINE}", penwidth=3')
        elif node == "done" and ended:
            attrs.append(f'fillcolor="{END_FILL}", color="{END_LINE}", penwidth=2, style="rounded,filled"')
        lines.append(f"  {node} [{', '.join(attrs)}];")
    for a, b, label in EDGES:
        attrs = [f'label=" {translate(label)} "'] if label else []
        if (a, b) == taken:
            attrs.append(f'color="{LIT_LINE}", fontcolor="{LIT_LINE}", penwidth=3.5')
        if (a, b) == ("back", "done"):
            attrs.append("style=dashed")
        lines.append(f"  {a} -> {b}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("  { rank=same; decide; done; }")
    lines.append("}")
    return "\n".join(lines)


def dot_at(trace: Trace, cursor: int, translate: Callable[[str], str] = str) -> str:
    """The diagram for step `cursor` of `trace` (nothing lit before the first step)."""
    if not 0 <= cursor < len(trace):
        return dot(translate=translate)
    step = trace.steps[cursor]
    previous = trace.steps[cursor - 1].stage if cursor > 0 else None
    return dot(step.stage, previous, continues=step.detail.get("continues"), ended=step.ended is not None,
               translate=translate)
