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


# Beyond the chapter, drawn only for a run that has them: compaction before the call (s06), and a
# sub-agent's loop beside the tool stage (s04), lit while the cursor is inside it.
COMPACT = ("compact", N_("compact messages\n(micro · summary)"))
CHILD_NODES = {  # node: (label, the stage it stands for), a sub-agent's loop
    "c_user": (N_("1 · the task's prompt\ninto its own messages"), "user_request"),
    "c_model": (N_("2 · call the model"), "call_model"),
    "c_append": (N_("3 · append"), "append_assistant"),
    "c_decide": (N_("4 · tool_use?"), "decide"),
    "c_tools": (N_("4 · run its tools"), "run_tool"),
    "c_back": (N_("5 · write back"), "write_back"),
    "c_done": (N_("its final text\ngoes back"), "stop"),
}
CHILD_EDGES = [(f"c_{a}", f"c_{b}", label) for a, b, label in EDGES]
CHILD_TAKEN = {k: (f"c_{a}", f"c_{b}") for k, (a, b) in TAKEN.items()}
CHILD_OF = {stage: node for node, (_, stage) in CHILD_NODES.items()}
CHILD_LABEL = N_("a sub-agent's loop (its own messages)")
# The complete loop (profiles.py): a retry loop on the call, a recovery edge from the decision, compaction before
# the call when the prompt is too long. Drawn only for a run of that profile, each lit when taken.
COMPLETE_NODES = {
    "retry": N_("retry: wait 1 s × 2^k\n(timeout · 429 · 5xx · 529)"),
    "recover": N_("recover: ask the model\nto continue"),
}
COMPLETE_EDGES = [  # (from, to, label, dashed)
    ("model", "retry", N_("failed"), False),
    ("retry", "model", N_("call again"), False),
    ("retry", "done", N_("no retry left"), True),
    ("decide", "recover", N_("max_tokens"), False),
    ("recover", "model", N_("continue"), False),
    ("model", "compact", N_("too long"), False),
]
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
BUSY = "#fff4e6"  # the tool stage waiting for its sub-agent


def _node(name: str, label: str, translate, extra: list[str]) -> str:
    text = translate(label)
    attrs = ['label="' + text.replace("\n", "\\n") + '"', *extra]
    if _wide(text) and not any(a.startswith("shape=diamond") for a in extra):
        attrs.append(f'margin="{0.1 + 0.04 * _wide(text):.2f},0.04"')
    return f"  {name} [{', '.join(attrs)}];"


def _edge(a: str, b: str, label: str, translate, taken: tuple | None, dashed: bool = False,
          constraint: bool = True) -> str:
    """One DOT edge, drawn bold when it is the one `taken` (`constraint=False`: it does not rank its ends)."""
    attrs = [f'label=" {translate(label)} "'] if label else []
    if (a, b) == taken:
        attrs.append(f'color="{LIT_LINE}", fontcolor="{LIT_LINE}", penwidth=3.5')
    if dashed:
        attrs.append("style=dashed")
    if not constraint:
        attrs.append("constraint=false")
    return f"  {a} -> {b}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";"


def _loop(nodes: dict, edges: list, lit: str | None, taken: tuple | None, ended: bool, translate) -> list[str]:
    """The DOT lines of one loop: its nodes, `lit` filled, `taken` drawn bold."""
    lines = []
    for node, (label, _) in nodes.items():
        extra = []
        if node.endswith("decide"):
            extra.append("shape=diamond, margin=0.02")
        if node.endswith("done"):
            extra.append('shape=box, style="rounded,filled,dashed"')
        if node == lit:
            extra.append(f'fillcolor="{LIT_FILL}", color="{LIT_LINE}", penwidth=3')
        elif node.endswith("done") and ended:
            extra.append(f'fillcolor="{END_FILL}", color="{END_LINE}", penwidth=2, style="rounded,filled"')
        lines.append(_node(node, label, translate, extra))
    lines += [_edge(a, b, label, translate, taken, dashed=a.endswith("back") and b.endswith("done"))
              for a, b, label in edges]
    return lines


def dot(stage: str | None = None, previous: str | None = None, *, continues: bool | None = None,
        ended: bool = False, translate: Callable[[str], str] = str, compact: bool = False,
        child: dict | None = None, complete: bool = False, recovering: bool = False) -> str:
    """The loop with `stage` lit and the edge from `previous` drawn bold.

    At a `decide` step the edge drawn is the one it chose: to the tools when
    `continues`, to the end otherwise. `translate` turns each English label
    into the page's language. `compact` adds the compaction stage before the
    call; `child` ({"stage", "previous", "continues", "ended", "returned"} of
    a sub-agent's step, or {} when the cursor is not in one) adds a
    sub-agent's loop beside the tool stage. `complete` draws the complete
    loop's edges (a decide step `recovering` took the recovery edge).
    """
    inside = bool(child and child.get("stage"))
    compact = compact or complete
    lit = None if inside else NODE_OF.get(stage or "")
    if stage in ("summarize", "compact") and not inside:
        lit = COMPACT[0]
    taken = None if inside else TAKEN.get((previous or "", stage or ""))
    if stage == "decide" and continues is not None and not inside:
        taken = ("decide", "tools") if continues else ("decide", "done")
    if complete and not inside:
        lit = {"retry": "retry", "recover": "recover", "refused": "model"}.get(stage or "", lit)
        taken = COMPLETE_TAKEN.get((previous or "", stage or ""), taken)
        if stage == "retry" and ended:
            taken = ("retry", "done")
        if stage == "decide" and recovering:
            taken = ("decide", "recover")
    if not inside:
        taken = {("write_back", "summarize"): ("back", "compact"), ("write_back", "compact"): ("back", "compact"),
                 ("compact", "call_model"): ("compact", "model"), ("summarize", "compact"): ("compact", "compact"),
                 ("compact", "summarize"): ("compact", "compact")}.get((previous or "", stage or ""), taken)
    lines = [
        "digraph loop {",
        '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.2, ranksep=0.22, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#f1f3f5", color="#adb5bd", fontname="Helvetica",'
        ' fontsize=10, fontcolor="#212529", margin="0.1,0.04"];',
        '  edge [color="#adb5bd", fontname="Helvetica", fontsize=9, fontcolor="#495057", arrowsize=0.6];',
    ]
    lines += _loop(NODES, EDGES, lit, taken, ended and not inside, translate)
    if inside:  # the tool stage waits for the sub-agent's answer
        lines.append(f'  tools [fillcolor="{BUSY}", color="{LIT_LINE}", penwidth=2, style="rounded,filled,dashed"];')
    if compact:
        extra = [f'fillcolor="{LIT_FILL}", color="{LIT_LINE}", penwidth=3'] if lit == COMPACT[0] else []
        lines.append(_node(COMPACT[0], COMPACT[1], translate, extra))
        lines += [_edge("back", "compact", N_("before a call"), translate, taken, dashed=True),
                  _edge("compact", "model", "", translate, taken),
                  _edge("compact", "compact", N_("summary call"), translate, taken)]
        lines.append("  { rank=same; model; compact; }")
    if complete:
        for node, label in COMPLETE_NODES.items():
            extra = [f'fillcolor="{LIT_FILL}", color="{LIT_LINE}", penwidth=3'] if lit == node else []
            lines.append(_node(node, label, translate, extra))
        lines += [_edge(a, b, label, translate, taken, dashed=dashed,
                        constraint=(a, b) not in (("retry", "model"), ("recover", "model"), ("retry", "done")))
                  for a, b, label, dashed in COMPLETE_EDGES]
        lines.append("  { rank=same; append; retry; }")
    if child is not None:
        c_stage = child.get("stage")
        c_lit = CHILD_OF.get(c_stage or "") if inside else None
        c_taken = CHILD_TAKEN.get((child.get("previous") or "", c_stage or "")) if inside else None
        if inside and c_stage == "decide" and child.get("continues") is not None:
            c_taken = ("c_decide", "c_tools") if child["continues"] else ("c_decide", "c_done")
        border = f'color="{LIT_LINE}"; penwidth=2.5' if inside else 'color="#ced4da"; style="dashed"'
        title = translate(CHILD_LABEL)
        lines.append(f'  subgraph cluster_child {{ label="{title}"; fontsize=10; fontcolor="#495057"; {border};')
        lines += ["  " + line for line in _loop(CHILD_NODES, CHILD_EDGES, c_lit, c_taken,
                                                inside and bool(child.get("ended")), translate)]
        # Two rows, not seven: the call side and the tool side of the sub-agent's loop.
        lines.append("    { rank=same; c_user; c_model; c_append; c_decide; }")
        lines.append("    { rank=same; c_back; c_tools; c_done; }")
        lines.append("  }")
        start = inside and c_stage == "user_request" and not child.get("previous")
        back = bool(child.get("returned"))
        lines.append(f'  tools -> c_user [label=" task ", style=dashed'
                     + (f', color="{LIT_LINE}", fontcolor="{LIT_LINE}", penwidth=3.5' if start else "") + "];")
        lines.append('  c_done -> tools [label=" tool_result ", style=dashed, constraint=false'
                     + (f', color="{LIT_LINE}", fontcolor="{LIT_LINE}", penwidth=3.5' if back else "") + "];")
    lines.append("  { rank=same; decide; done; }")
    lines.append("}")
    return "\n".join(lines)


def dot_at(trace: Trace, cursor: int, translate: Callable[[str], str] = str) -> str:
    """The diagram for step `cursor` of `trace` (nothing lit before the first step).

    A run with compaction draws its compact stage. The sub-agent's loop is drawn beside the tool stage in a
    live run of toolset s04, and in any trace while the cursor is in a sub-agent or at the step that goes in
    or takes its answer: elsewhere the chapter's loop stays as small as it is (a bigger drawing costs the
    browser on every click of a long replay).
    """
    toolset = trace.meta.get("toolset")
    complete = trace.meta.get("profile") == "complete"
    compact = toolset == "s06" or trace.has_compaction
    nested = toolset == "s04" or (trace.has_threads and _near_a_sub_agent(trace, cursor))
    if not 0 <= cursor < len(trace):
        return dot(translate=translate, compact=compact, child={} if nested else None, complete=complete)
    step = trace.steps[cursor]
    before = trace.previous_in_thread(cursor)
    previous = trace.steps[before].stage if before is not None else None
    child = {} if nested else None
    if not trace.thread_of(cursor).is_main:  # inside a sub-agent: its loop is lit, the parent waits at its tools
        child = {"stage": step.stage, "previous": previous, "continues": step.detail.get("continues"),
                 "ended": step.ended is not None}
        return dot(None, None, translate=translate, compact=compact, child=child, complete=complete)
    if nested and step.stage == "run_tool" and step.detail.get("thread"):
        child = {"returned": True}
    return dot(step.stage, previous, continues=step.detail.get("continues"), ended=step.ended is not None,
               translate=translate, compact=compact, child=child, complete=complete,
               recovering=bool(step.detail.get("recover")))


def _near_a_sub_agent(trace: Trace, cursor: int) -> bool:
    """In a sub-agent's thread, at the parent's step that takes a sub-agent's answer, or right before one starts."""
    if not 0 <= cursor < len(trace):
        return False
    step = trace.steps[cursor]
    if not trace.thread_of(cursor).is_main or (step.stage == "run_tool" and step.detail.get("thread")):
        return True
    return cursor + 1 < len(trace) and trace.opened_at(trace.steps[cursor + 1].thread) == cursor + 1 \
        and trace.steps[cursor + 1].thread != step.thread
