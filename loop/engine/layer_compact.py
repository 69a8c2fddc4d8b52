"""Compaction (the course's s06): before a call, the history is rewritten so it fits, as steps of their own.

Micro-compact (old tool_results by placeholders) is a `compact` step; auto and
manual compaction are a `summarize` step (a model call writes the summary) and
then a `compact` step (the history is replaced by it). compact.py says *what*
to rewrite; this layer says *when*, and records both. Resume (layer_resume.py)
compacts the same way, for its own reasons: `Compacting` is what they share.
"""

from __future__ import annotations

from . import compact, layers
from .details import CompactDetail, Detail, SummarizeDetail
from .layers import Layer


def compacted(run, frame) -> list:
    """The thread's compaction steps since its last call (the newest last)."""
    steps, made = run.trace.steps, []
    for i in reversed(run.trace.steps_of(frame.thread.id)):
        if steps[i].stage not in ("compact", "summarize"):
            break
        made.append(steps[i])
    return made[::-1]


class Compacting(Layer):
    """A layer that compacts before a call: a summary is followed by the compaction that uses it."""

    stages = ("summarize", "compact")
    back_to_call = ("compact",)

    def due(self, run, frame) -> str | None:
        """The compaction this layer makes before the top loop's next call, if any."""
        return None

    def continues(self, run, frame, nxt):
        return "compact" if nxt is not None and frame.state.stage == "summarize" else None

    def execute(self, run, doing) -> Detail:
        return summarize(run, doing) if doing.stage == "summarize" else rewrite(run, doing)


def due(run, frame) -> str | None:
    """The compaction due before the top loop's next call: the first compacting layer's that has one."""
    for layer in run.layers:
        if isinstance(layer, Compacting):
            kind = layer.due(run, frame)
            if kind:
                return kind
    return None


def summary_kind(run, frame) -> str | None:
    """Which compaction the summary call is for: the one due, or, when it is retried, the one that failed."""
    last = layers.last(run, frame)
    if last.stage == "retry" and last.detail.stage == "summarize":
        return last.detail.kind
    return due(run, frame)


def summary_room(run, frame) -> int | None:
    """Estimated tokens a resume's summary call may send: 90% of the window the API stated when it refused a
    prompt (the call has no system prompt and no tools), else the budget."""
    for i in reversed(run.trace.steps_of(frame.thread.id)):
        step = run.trace.steps[i]
        if step.stage == "refused" and isinstance(step.detail.maximum, int):
            return int(step.detail.maximum * 0.9)
    return frame.state.budget


def summarize(run, doing) -> Detail:
    """Auto, manual or resume compaction, part 1: a model call summarises the history (not changed yet)."""
    frame = doing.frame
    s = frame.state
    kind = doing.kind = summary_kind(run, frame)
    tokens = run.sizer.estimate(s.messages)
    last = layers.last(run, frame)
    refused = last if last.stage == "refused" else None
    within = summary_room(run, frame) if kind == "resume" else None  # the call must fit the window too
    sent = compact.summary_messages(s.messages, within)
    reply = (doing.model or frame.model).create(sent, None, doing.observer, system=None,
                                                max_tokens=compact.SUMMARY_MAX_TOKENS)
    s.count_usage(reply.response)
    if kind == "resume":
        why = (compact.REFUSED_WHY.format(tokens=refused.detail.tokens, maximum=refused.detail.maximum)
               if refused is not None else compact.BUDGET_WHY.format(tokens=tokens, budget=s.budget))
    elif kind == "auto":
        why = compact.AUTO_WHY.format(tokens=tokens, threshold=run.compaction.threshold)
    else:
        why = compact.MANUAL_WHY
    return SummarizeDetail(kind=kind, why=why, request=dict(reply.request, messages=sent), response=reply.response,
                           duration_ms=reply.duration_ms, retries=reply.retries,
                           summary=compact.summary_text(reply.response))


def rewrite(run, doing) -> Detail:
    """Part 2, the `compact` step: old tool_results by placeholders (micro), or everything by the summary just
    made."""
    frame = doing.frame
    s = frame.state
    made = compacted(run, frame)
    summary = made[-1].detail if made and made[-1].stage == "summarize" else None
    tokens_before, n_before = run.sizer.estimate(s.messages), len(s.messages)
    if summary is None:
        changes = next(layer for layer in run.layers if isinstance(layer, Compaction)).plan(run, frame)[1]
        blocks = sum(a is not b for i, m in changes for a, b in zip(s.messages[i]["content"], m["content"]))
        kind = "micro"
        rewrote = {"replaced": [{"index": i, "message": s.messages[i]} for i, _ in changes],
                   "why": compact.MICRO_WHY.format(n=blocks, keep=compact.KEEP_RECENT)}
        for i, message in changes:
            s.messages[i] = message
        doing.rewritten = [i for i, _ in changes]
    else:
        kind = summary.kind
        rewrote = {"history_before": list(s.messages), "summary": summary.summary, "why": compact.SUMMARY_WHY}
        s.messages[:] = compact.summarized(summary.summary, run.lang)
        doing.rewritten = list(range(len(s.messages)))
    if kind == "resume":
        s.transition_reason = "compact_resume"
    return CompactDetail(kind=kind, **rewrote, messages_before=n_before, messages_after=len(s.messages),
                         tokens_before=tokens_before, tokens_after=run.sizer.estimate(s.messages))


class Compaction(Compacting):
    """s06's micro and auto compaction, and its `compact` tool (manual)."""

    def __init__(self):
        self._plan: tuple | None = None

    def before(self, run, frame, nxt):
        if nxt != "call_model":
            return None
        kind = self.due(run, frame)  # resume's, when due, came first (layer_resume.py)
        return "summarize" if kind in ("auto", "manual", "resume") else "compact" if kind == "micro" else None

    def due(self, run, frame) -> str | None:
        return self.plan(run, frame)[0]

    def plan(self, run, frame) -> tuple[str | None, list]:
        """(the compaction due, micro-compact's changes), worked out once a step: next_stage() is asked often."""
        key = (len(run.trace.steps), frame.thread.id)
        if self._plan is None or self._plan[0] != key:
            done = [s.detail.kind for s in compacted(run, frame) if s.stage == "compact"]
            kind = "auto" if {"auto", "manual", "resume"} & set(done) else "micro" if done else None
            self._plan = (key, run.compaction.due(frame.state.messages, kind))
        return self._plan[1]
