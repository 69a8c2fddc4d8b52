"""One line of plain text a step: what the stage did. The CLI prints these, live and in replay; the page shows
the same line under the step's header, in the learner's language."""

from __future__ import annotations

import re

from . import narrate_complete as complete
from ..engine import rules
from ..text.catalogs import say
from ..text.lines import clip, short  # noqa: F401 (short: what views import from here)
from ..engine.compact import AUTO_WHY, BUDGET_WHY, MICRO_WHY, REFUSED_WHY, RESENT_WHY, STILL_TOO_LONG
from ..engine.recovery import WHY_EXHAUSTED, WHY_RECOVER
from ..engine.endings import GO_ON, MAX_TURNS, why_ended
from ..engine.trace import HARNESS, MAIN, STAGE_TITLES, Trace, stage_title


def result_words(output: object) -> object:
    """A tool_result's content as a line says it: the text of its text blocks, other blocks by their type
    ("[image]"), not the JSON of the list that holds them. Anything else as it is."""
    if not (isinstance(output, list) and output and all(isinstance(b, dict) and "type" in b for b in output)):
        return output
    return " ".join(str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]" for b in output)


def head(trace: Trace, index: int, lang: str = "en") -> str:
    """`[k] turn t · stage`, the start of step `index`'s line: the turn the step is part of (`Step.turn`), a
    sub-agent's thread before it."""
    step = trace.steps[index]
    title = stage_title(step) if step.stage in STAGE_TITLES else None
    stage = say(lang, title) if title else step.stage
    if step.thread != MAIN:
        if step.turn < 1:
            return say(lang, "[{k}] {thread} · before turn 1 · {stage}", k=index + 1, thread=step.thread, stage=stage)
        return say(lang, "[{k}] {thread} · turn {turn} · {stage}", k=index + 1, thread=step.thread,
                   turn=step.turn, stage=stage)
    if step.turn < 1:
        return say(lang, "[{k}] before turn 1 · {stage}", k=index + 1, stage=stage)
    return say(lang, "[{k}] turn {turn} · {stage}", k=index + 1, turn=step.turn, stage=stage)


def why_in(step, lang: str) -> str:
    """Why `step` did what it did, in `lang`: its `why`, which the trace keeps in English (the runner's or an
    importer's words), said again in `lang` when it is a known message; any other words as they were recorded."""
    why = getattr(step.detail, "why", None)  # any stage's that has a `why` field (most have)
    why = "" if why is None else str(why)
    if lang == "en" or not why:
        return why
    if step.stage == "decide":
        if step.detail.continues and why == GO_ON:
            return say(lang, GO_ON)
        if why == why_ended(step.stop_reason):
            return why_ended(step.stop_reason, lang)
    for template in (MAX_TURNS, MICRO_WHY, AUTO_WHY, WHY_RECOVER, WHY_EXHAUSTED, REFUSED_WHY, BUDGET_WHY,
                     STILL_TOO_LONG, RESENT_WHY):  # the words with numbers (or a name) in them: matched, said again
        names = re.findall(r"\{(\w+)\}", template)
        pattern = re.escape(template)
        for name in names:
            pattern = pattern.replace(re.escape("{" + name + "}"), r"(.+)" if name == "name" else r"(\d+)", 1)
        found = re.fullmatch(pattern, why)
        if found:
            return say(lang, template, **dict(zip(names, found.groups())))
    return say(lang, why)


def planned_wait(trace: Trace, index: int) -> object:
    """The wait the `retry` step just before step `index` (in its thread) planned, as it recorded it; None when
    the step before is no retry that waits."""
    before = trace.previous_in_thread(index)
    step = trace.steps[before] if before is not None else None
    if step is None or step.stage != "retry" or step.detail.gave_up:
        return None
    return step.detail.wait_s


def what(trace: Trace, index: int, lang: str = "en") -> str:
    """What step `index` did, in one line of `lang` (commands, outputs and ids as they are)."""
    step = trace.steps[index]
    d = step.detail
    if step.stage == "user_request":
        return say(lang, "messages ← user: {task}", task=short(d.task or "", 100))
    if step.stage == "call_model":
        response = d.response or {}
        content = response.get("content") if isinstance(response.get("content"), list) else []
        # the blocks' types as words ("text, tool_use"), not a Python list's repr
        kinds = ", ".join(str(b.get("type")) if isinstance(b, dict) else type(b).__name__ for b in content) or "—"
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        tokens = [usage.get(k) if type(usage.get(k)) is int else None for k in ("input_tokens", "output_tokens")]
        if tokens == [None, None]:  # an imported history that recorded no usage: said, not printed as None
            line = say(lang, "stop_reason={stop} · content {kinds} · tokens not recorded",
                       stop=response.get("stop_reason"), kinds=kinds)
        else:
            line = say(lang, "stop_reason={stop} · content {kinds} · tokens in {input} out {output}",
                       stop=response.get("stop_reason"), kinds=kinds,
                       **dict(zip(("input", "output"), ("—" if n is None else n for n in tokens))))
        if d.stop_reason_inferred:  # an import's: the log recorded none; the chapter's rule filled it in
            line += " · " + say(lang, "stop_reason inferred from the content: the log recorded none")
        return line + complete.call_extras(d, lang, planned_wait(trace, index))
    if step.stage in complete.LINES:  # the complete loop's own stages (retry, refused, recover)
        return complete.LINES[step.stage](step, lang) + complete.reason(step)
    if step.stage == "append_assistant":
        if d.appended is False:  # a learner's loop that did not keep the response: the history did not grow
            return say(lang, "the response was NOT appended: messages unchanged ({n} messages)", n=step.n_messages)
        message = (trace.window_at(index, step.n_messages - 1, step.n_messages) or [{}])[0]
        texts = [str(b.get("text", "")) for b in rules.blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
        line = say(lang, "messages ← assistant ({n} messages)", n=step.n_messages)
        return line + (f": {short(' '.join(texts), 100)}" if texts else "")
    if step.stage == "decide":
        if d.continues:
            return say(lang, "go on: {why}", why=why_in(step, lang))
        return say(lang, "the loop ends: {why}", why=why_in(step, lang))
    if step.stage == "run_tool":
        output = d.output if d.given("output") else ""  # a null output (a tool_result without content) says null
        if d.thread:
            started = trace.threads.get(d.thread)
            if started is not None and (started.facts.get("started_by") or {}).get("tool") == "spawn_teammate":
                # a teammate's loop runs beside its lead's: the result is the spawning's, not the teammate's answer
                return say(lang, "{tool} → started the teammate {thread}, whose loop runs beside this one: {output}",
                           tool=d.name, thread=d.thread, output=short(result_words(output), 80))
            return say(lang, "{tool} → the subagent's answer ({thread}): {output}", tool=d.name, thread=d.thread,
                       output=short(result_words(output), 80))
        flag = " [is_error]" if d.is_error else ""
        reported = d.reported  # a learner's program ran it itself: its word, marked as its own
        where = f"{d.file}:{reported.get('line')}" if isinstance(d.file, str) and \
            isinstance(reported, dict) else reported.get("line") if isinstance(reported, dict) else None
        theirs = say(lang, " · your program reported running it, line {line}", line=where) \
            if isinstance(reported, dict) and reported.get("line") else ""  # in a module of theirs: file:line
        return (f"{d.name} {short(d.input, 60)} → {short(result_words(output), 80)}{flag} "
                f"({d.tool_use_id})" + theirs + complete.tool_extras(d, lang))
    if step.stage == "write_back":
        return say(lang, "messages ← user: {n} tool_result block(s); turn {turn} ends, turn_count {before} → {after}, "
                   "transition_reason={reason}", n=d.results, turn=step.turn, before=step.turn,
                   after=step.turn_count, reason=step.transition_reason) + complete.batch_extras(d, lang)
    if step.stage == HARNESS and d.in_messages is False:  # an import's: words for the person, in no request
        line = say(lang, "shown to the person by the harness, not in messages (no request sent it): {said}",
                   said=short(str(d.said) if d.given("said") else "", 100))
        return line + (f" · {why_in(step, lang)}" if d.why else "")
    if step.stage == HARNESS:  # an import's: the harness's message, which no model call produced
        message = (trace.window_at(index, step.n_messages - 1, step.n_messages) or [{}])[0]
        content = message.get("content") if isinstance(message, dict) else None
        texts = [content] if isinstance(content, str) else [
            str(b.get("text", "")) for b in rules.blocks(message) if isinstance(b, dict) and b.get("type") == "text"]
        line = say(lang, "messages ← {role}, added by the harness ({n} messages)", role=d.role, n=step.n_messages)
        line += f": {short(' '.join(texts), 100)}" if texts else ""
        return line + (f" · {why_in(step, lang)}" if d.why else "")
    if step.stage == "compact":
        return say(lang, "{kind}: {why} · messages {before} → {after} · about {tokens_before} → {tokens_after} tokens",
                   kind=d.kind, why=why_in(step, lang), before=d.messages_before,
                   after=d.messages_after, tokens_before=d.tokens_before,
                   tokens_after=d.tokens_after) + complete.reason(step)
    return why_in(step, lang)


def describe(trace: Trace, index: int, lang: str = "en") -> str:
    """`[k] turn t · stage: what happened` for step `index`, in `lang`."""
    return f"{head(trace, index, lang)}: {what(trace, index, lang)}"
