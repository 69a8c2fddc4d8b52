"""The message history at a step (what a call sent, the history so far, the next call's input), a bounded window.

Only the newest WINDOW to WINDOW + SNAP - 1 messages are drawn, so a click at
5,000 messages costs what it does at ten; "Show earlier" pages back. What a
stage holds outside `messages` (a response received but not yet appended,
tool_results not yet written back) is drawn after the history, apart from it:
that gap is the lesson.

The window is one HTML element (see blocks.py). The block that matters at
this step (the one the step added, or an is_error result the model is reading
now) is ringed, and the panel scrolls to it.

A run with sub-agents shows the history of the thread the cursor is in, under
a breadcrumb (main › task toolu_…) whose parts go up to the parent; a step
that leads into a sub-agent offers to step in. At a compact step the history
before and after the rewrite are drawn side by side.
"""

from __future__ import annotations

from html import escape

import streamlit as st

from loop.text.catalogs import N_
from loop.views.step import StepView, ThreadView
from loop.engine.trace import Trace
from loop.views.parts import window

from .blocks import content_html, in_code, markdown_html, plain
from .i18n import t

WINDOW = 12  # messages drawn at least; up to WINDOW + SNAP - 1 (see loop.views.parts.window)
SNAP = 4
HEIGHT = 640  # pixels; the panel scrolls

# Scroll the panel so the ringed block (else the newest message) is in view; the page itself is not moved.
SCROLL = """<script>
(() => {
  const root = document.getElementById("ANCHOR");
  const panel = root && root.parentElement;
  if (!panel) return;
  // Presenter mode: the panel fills the screen under whatever is above it, and again whenever that changes:
  // the window's size (a projector's full screen, F11) or what is above it (a control drawn a moment later
  // wraps the row of buttons). One listener and one observer for the page, however many steps are drawn.
  const fit = () => {
    const box = document.querySelector(".ls-panel[data-fit]");
    if (!box) return;
    const height = Math.max(140, Math.floor(window.innerHeight - box.getBoundingClientRect().top - 10)) + "px";
    if (box.style.height !== height) box.style.height = height;
  };
  if (!window.lsFit) {
    window.lsFit = new ResizeObserver(() => requestAnimationFrame(fit));
    window.addEventListener("resize", () => requestAnimationFrame(fit));
  }
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  if (main && window.lsFitWatched !== main) {
    window.lsFitWatched = main;
    window.lsFit.observe(main);
  }
  const scroll = () => {
    fit();
    const target = root.querySelector(".ls-focus");
    if (target) {
      panel.scrollTop += target.getBoundingClientRect().top - panel.getBoundingClientRect().top - 12;
    } else {
      panel.scrollTop = 0;  // the newest (the panel runs bottom-up: see .ls-panel)
    }
  };
  // In the next frame, when the browser lays the page out anyway: asking for positions now would make it
  // lay the page out twice a click.
  requestAnimationFrame(scroll);
})();
</script>"""


def mark(text: str, held: bool = False) -> str:
    """The arrow-and-words mark beside a message: added or rewritten by this step, or received and held outside
    messages."""
    return f'<span class="ls-mark{" ls-held" if held else ""}">→ {escape(text)}</span>'


def _offset(key: str, cursor: int) -> int:
    kept = st.session_state.get(key)
    return kept[1] if kept and kept[0] == cursor else 0  # a new step shows the newest messages


def history_offset(v: StepView, key: str) -> int:
    """How far the history of the step `v` shows is paged back (Show earlier): what else its panel depends on."""
    return _offset(f"{key}-history-offset", v.index)


def _page(key: str, cursor: int, by: int) -> None:
    st.session_state[key] = (cursor, max(0, _offset(key, cursor) + by))


def _label(i: int, message: dict) -> str:
    role = message.get("role", "?")
    content = message.get("content")
    kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else ["text"]
    head = f'<span class="ls-role">{escape(str(role))}</span> <code>messages[{i}]</code>'
    if role == "user" and kinds and all(k == "tool_result" for k in kinds):
        head += " · " + escape(t("{n} tool_result(s), written back by the loop", n=len(kinds)))
    if role == "system":
        head += " · " + escape(t("a harness message inside messages: not the person's words; the pairing rules "
                                 "pass it over"))
    return head


def message_html(i: int, message: object, *, new: bool = False, ring: bool = False, focus: set[int] = frozenset(),
                 callouts: dict[int, str] | None = None, rewritten: bool = False, since: bool = False) -> str:
    """messages[i] as a card: its role and index, then its blocks; `ring` marks the card, `focus` some blocks.

    `new` marks a message this step added, `rewritten` one a compaction wrote in place of another: the
    history then is not append-only, and the card must not say it was added. `since` marks, in a request a
    call sent, a message the thread's previous call did not send.
    """
    if not isinstance(message, dict):
        return f'<div class="ls-msg ls-user"><div class="ls-head">{_label(i, {})}</div>{content_html(message)}</div>'
    role = message.get("role")
    classes = ("ls-msg " + ("ls-assistant" if role == "assistant" else "ls-system" if role == "system" else "ls-user")
               + (" ls-new" if new or rewritten else "") + (" ls-since" if since else "") + (" ls-focus" if ring else ""))
    head = _label(i, message) + (" " + mark(t("rewritten by this step")) if rewritten
                                 else " " + mark(t("added by this step")) if new
                                 else " " + mark(t(SINCE)) if since else "")
    return (f'<div class="{classes}" data-index="{i}"><div class="ls-head">{head}</div>'
            f'{content_html(message.get("content"), focus=focus, callouts=callouts)}</div>')


def draw_message(i: int, message: object, new: bool = False) -> None:
    """One message on its own (the Mistakes lab draws the messages a call sent)."""
    st.html(f'<div class="ls-history">{message_html(i, message, new=new)}</div>')


def _go(trace: Trace, index: int) -> None:
    trace.goto(index)


def draw_threads(trace: Trace, v: StepView, key: str) -> None:
    """Where the cursor is among the threads: main › task toolu_… (each part goes up), and the way in."""
    path = v.breadcrumb
    into = v.sub_agent
    if len(path) == 1 and into is None and len(v.threads) <= 2:
        return
    ups = path[:-1]
    here = path[-1].thread
    with st.container(horizontal=True, vertical_alignment="center", key=f"{key}-threads"):
        for n, (thread, to) in enumerate((crumb.thread, crumb.to) for crumb in ups):
            # A button's label is Markdown, and a thread's name is the file's (a tool_use id): shown as text.
            st.button(f"{plain(thread.name)} ›", key=f"{key}-up" if n == len(ups) - 1 else f"{key}-up-{n}",
                      icon=":material/arrow_upward:", disabled=to is None, on_click=_go, args=(trace, to),
                      help=t("Go up to the parent loop, at the step that took the sub-agent's answer (or waits "
                             "for it)."))
        if into is not None:
            first, count = into.first, into.steps
            st.button(t("Into the sub-agent's loop ({n} steps)", n=count), key=f"{key}-into",
                      icon=":material/subdirectory_arrow_right:", disabled=first is None, on_click=_go,
                      args=(trace, first), help=plain(into.label) if into.label else None)  # a tooltip is Markdown
        elif not here.is_main:
            st.markdown(f"**`{in_code(here.name)}`**" + (f" · {plain(here.label)}" if here.label else ""))
        if len(v.threads) > 2:  # many sub-agents (an imported session): go to any one's first step
            threads = {thread.id: thread for thread in v.threads}
            st.session_state[f"{key}-thread"] = v.thread.id  # follows the cursor, as the slider does
            st.selectbox(t("Go to a thread"), list(threads), key=f"{key}-thread", on_change=_to_thread,
                         args=(trace, key, threads), format_func=lambda tid: _thread_option(threads[tid]),
                         label_visibility="collapsed", width="stretch")  # the row's room: a name is long


def _thread_option(thread: ThreadView) -> str:
    label = f": {thread.label}" if thread.label else ""
    return f"{thread.name}{label} ({thread.steps})"


def _to_thread(trace: Trace, key: str, threads: dict[str, ThreadView]) -> None:
    first = threads[st.session_state[f"{key}-thread"]].first
    if first is not None:
        trace.goto(first)


def compaction_html(v: StepView) -> str | None:
    """At a compact step: the history before and after, side by side, as HTML. None on any other step."""
    shown = v.compaction
    if shown is None:
        return None
    before, after = shown["before"], shown["after"]
    head = ('<h4 class="ls-h4">' + escape(t("compact ({kind}) · messages {a} → {b}", kind=shown["kind"],
                                              a=before["messages"], b=after["messages"])) + "</h4>")
    why = shown["said_why"]  # recorded in English; a known reason said in the page's language
    if why:
        head += f'<p class="ls-caption">{escape(why)}</p>'
    sides = [markdown_html(t("**Before** · {n} messages · about {tokens} tokens", n=before["messages"],
                             tokens=f"{before['tokens'] or 0:,}")),
             markdown_html(t("**After** · {n} messages · about {tokens} tokens", n=after["messages"],
                             tokens=f"{after['tokens'] or 0:,}"))]
    rows = []
    if "pairs" in shown:  # messages replaced in place: each one as it was and as it is
        note = t("{n} message(s) replaced in place; every other message is unchanged.", n=len(shown["pairs"]))
        for slot, old, new in shown["pairs"][-WINDOW:]:
            rows.append((message_html(slot, old), message_html(slot, new, rewritten=True)))
    else:
        old, new = shown["history_before"], shown["history_after"]
        note = t("The whole history now: what the next call sends.")
        left = []
        if len(old) > WINDOW:
            newest = t("The newest {n} of {total}; the rest stay in the trace.", n=WINDOW, total=f"{len(old):,}")
            left.append(f'<p class="ls-caption">{escape(newest)}</p>')
        left += [message_html(i, old[i]) for i in range(max(0, len(old) - WINDOW), len(old))]
        right = [message_html(i, message, rewritten=True) for i, message in enumerate(new[:WINDOW])]
        rows.append(("".join(left), "".join(right)))
    cells = "".join(f'<div class="ls-history">{a}</div><div class="ls-history">{b}</div>' for a, b in rows)
    return (f'{head}<p class="ls-caption">{escape(note)}</p><div class="ls-compact" data-step="{v.index + 1}">'
            + "".join(f"<div>{side}</div>" for side in sides) + cells + "</div>")


def history_html(v: StepView, start: int, end: int) -> str:
    """messages[start:end] at `cursor`, newest last, then (when the window reaches the end) what waits outside.

    One thing is ringed, the one that matters at this step: an is_error result the model reads now, else (a
    call) the newest message it sends the model for the first time, else the first message the step added,
    else what it holds outside messages, else (a stop_reason check) the newest message.
    """
    messages = v.messages
    first_new, n_new = v.new_blocks
    read = v.errors_read
    waiting = end == len(messages) and (v.pending_response is not None or bool(v.results))
    since = _since(v)
    # In a request a call sent, what matters is what it sends the model for the first time: the newest such
    # message, the tool_results going back (or the user's request at a first call).
    sent_ring = max(since) if since and not read else None
    parts = []
    for i in range(start, end):
        focus = {j for m, j, _ in read if m == i}
        callouts = {j: _callout(tool_use_id) for m, j, tool_use_id in read if m == i}
        new = first_new <= i < first_new + n_new
        ring = (i == sent_ring if sent_ring is not None else
                not read and ((new and i == first_new) or (not n_new and not waiting and i == end - 1)))
        parts.append(message_html(i, messages[i], new=new, ring=ring, focus=focus, callouts=callouts,
                                  since=i in since))
    if end == len(messages):
        parts.append(_pending_html(v, focus=not read and not n_new and sent_ring is None))
    return "".join(parts)


# The mark on a message of a request that the thread's previous call did not send.
SINCE = N_("new since the last call")


def _since(v: StepView) -> set[int]:
    """The messages of the request a call sent that its thread's previous call did not send (none at other steps)."""
    if v.sent is None:
        return set()
    return {i for first, count in v.sent["new_since_last_call"] for i in range(first, first + count)}


SYSTEM_SHOWN = 140  # characters of the system prompt in the request's head; the rest opens below it


def request_head_html(v: StepView, one_line: bool = False) -> str:
    """At a step that sent a request: what the API received besides the messages, the system prompt (its start,
    the whole when opened), the tools' names and max_tokens. `one_line`: presenter mode, a single line."""
    sent = v.sent
    if sent is None:
        return ""
    system = sent["system"]
    start = " ".join(system.split())
    start = start if len(start) <= SYSTEM_SHOWN else start[:SYSTEM_SHOWN].rstrip() + "…"
    tools = "".join(f'<code class="ls-data">{escape(name)}</code>' for name in sent["tools"])
    rest = (f'<span class="ls-req-part"><b>tools</b> {tools}</span>' if sent["tools"] else "")
    if sent["max_tokens"] is not None:
        rest += f'<span class="ls-req-part"><b>max_tokens</b> <code class="ls-data">{sent["max_tokens"]}</code></span>'
    if one_line or not system:
        head = (f'<span class="ls-req-part ls-req-system"><b>system</b> <span class="ls-data" title="{escape(system)}">'
                f'{escape(start)}</span></span>') if system else ""
        return f'<div class="ls-request{" ls-one-line" if one_line else ""}">{rest}{head}</div>'
    return (f'<div class="ls-request">{rest}<details class="ls-req-system"><summary><b>system</b> '
            f'<span class="ls-data">{escape(start)}</span></summary><pre class="ls-data">{escape(system)}</pre>'
            f'</details></div>')


def _callout(tool_use_id: str) -> str:
    """The note under an is_error result the model reads at this step."""
    return ('<div class="ls-callout">' + escape(t(
        "The model reads this error now. A failed command is an observation too: its tool_result went back into "
        "messages and is the input of this call, so the model can change its next move. This is the chapter's "
        "third point at work: a tool_result is not a terminal log, it is the next turn's input block.")) + "</div>")


def _pending_html(v: StepView, focus: bool) -> str:
    """What a stage holds outside messages: a response received but not yet appended, results not yet written back."""
    out = []
    response = v.pending_response
    if response is not None and v.stage == "summarize":
        out.append(
            f'<div class="ls-card{" ls-focus" if focus else ""}"><div class="ls-card-head">'
            + escape(t("The summary the model wrote, not yet in messages")) + " "
            + mark(t("received by this step"), held=True) + "</div>"
            + '<div class="ls-card-caption">'
            + escape(t("The next step, compact, replaces the whole history above by this summary.")) + "</div>"
            + content_html(response.get("content")) + "</div>")
    elif response is not None:
        ring = " ls-focus" if focus else ""
        out.append(
            f'<div class="ls-card{ring}"><div class="ls-card-head">'
            + escape(t("The response: received by this step, not in messages yet"))
            + f' · stop_reason <code class="ls-data">{escape(str(response.get("stop_reason")))}</code> '
            + mark(t("received by this step"), held=True) + "</div>"
            + '<div class="ls-card-caption">'
            + escape(t("Stage 3 appends it to messages. Leave it out and the next turn loses its context.")) + "</div>"
            + content_html(response.get("content")) + "</div>")
    results = list(v.results)
    if results:
        ring = " ls-focus" if focus and response is None else ""
        out.append(
            '<div class="ls-card"><div class="ls-card-head">'
            + escape(t("{n} tool_result(s) collected, not yet written back", n=len(results))) + "</div>"
            + '<div class="ls-card-caption">'
            + escape(t("Stage 5 writes them back as ONE user message; until then the model cannot see them.")) + "</div>"
            + content_html(results[:-1])
            + f'<div class="{ring.strip()}">' + '<div class="ls-head">' + mark(t("collected by this step"), held=True)
            + "</div>"
            + content_html(results[-1:]) + "</div></div>")
    return "".join(out)


# What the shown history is, by the stage that just ran: the request a call sent, the history a turn is still
# adding to, or the next call's whole input.
SENT = N_("The request exactly as this call sent it (system, tools, messages): the model's whole input.")
SO_FAR = N_("The history so far; the next call will send it with this turn's tool_results.")
NEXT = N_("The history exactly as the model will see it on its next call.")
CAPTIONS = {
    "call_model": SENT,
    "retry": N_("The request exactly as the failed call sent it."),
    "refused": N_("The request exactly as the failed call sent it."),
    "summarize": N_("The history the summary call read; the next step, compact, replaces it by the summary."),
    "append_assistant": SO_FAR, "decide": SO_FAR, "run_tool": SO_FAR,
    "compact": N_("The history after the rewrite: what the next call sends."),
}
# After a response that asked for no tool: no tool_results follow, and the loop may end at the check.
UNLESS = N_("The history so far, the response appended; its stop_reason decides whether a call reads it again.")


def _said(v: StepView) -> str:
    said = CAPTIONS.get(v.stage or "", NEXT)
    if said == SO_FAR and v.stage != "run_tool" and (v.call_response or {}).get("stop_reason") != "tool_use":
        return UNLESS
    return said


def caption(v: StepView, short: bool = False) -> str:
    """What the panel shows at this stage: the request a call sent, the history so far, the next call's input, or
    (the loop has ended) what it left."""
    if v.ending:
        return t("The history as the loop left it: the loop has ended, so no model call will read it.")
    if v.index >= 0 and not v.thread.is_main:
        own = t("The sub-agent's own history; the parent's is not in it.")
        if short:  # presenter mode: one line, the history needs the room
            return own
        return f"{t(_said(v))} {own}"
    return t(_said(v))


def history_panel(v: StepView, key: str, height: int = HEIGHT, fit: bool = False, before: str = "") -> str:
    """The window of messages at the step as HTML: its heading, then the panel, newest last, then what waits.

    The panel opens at its newest message by itself (it runs bottom-up); a script scrolls it only where
    the block that matters is higher up (an error the model reads now), and with `fit` it also makes the
    panel fill the screen down to its bottom (presenter mode). `before` is drawn above the heading.
    """
    fits = ' data-fit="1"' if fit else ""
    cursor = v.index
    compacted = compaction_html(v)
    if compacted is not None:  # the history before and after the rewrite, in place of the window
        anchor = f"ls-compact-{key}"
        return (f'{before}<div class="ls-panel ls-panel-compact" style="height:{height}px" data-step="{cursor + 1}"'
                f'{fits}><div id="{anchor}">{compacted}</div></div>'
                + (SCROLL.replace("ANCHOR", anchor) if fit else ""))
    total = len(v.messages)
    start, end = window(total, WINDOW, _offset(f"{key}-history-offset", cursor), snap=SNAP)
    # the thread beside the count; a presenter's heading above already names it, and the line is needed
    where = "" if v.thread.is_main or fit else " · " + escape(v.thread.name)
    said = f'<p class="ls-caption">{escape(caption(v, short=fit))}</p>'
    if fit and v.sent is not None and v.thread.is_main:
        # Presenter mode: the request's head (system, tools) says what the panel shows, on the heading's line,
        # so the messages keep the room.
        said = request_head_html(v, one_line=True)
    head = f'{before}<div class="ls-panel-head"><h4 class="ls-h4">messages · {total}{where}</h4>{said}</div>'
    if total == 0:
        empty = t("messages is empty. Press **Step**: stage 1 puts the user's request into it.")
        return head + f'<div class="ls-empty" data-step="{cursor + 1}">{markdown_html(empty)}</div>'
    anchor = f"ls-history-{key}"
    # Bottom-up, a call's panel opens at the response under the results it sent: in view without a script.
    script = SCROLL.replace("ANCHOR", anchor) if fit or v.errors_read else ""
    if not said.startswith('<div class="ls-request'):
        head += request_head_html(v, one_line=fit)
    return (f'{head}<div class="ls-panel" style="height:{height}px" data-step="{cursor + 1}"{fits}>'
            f'<div class="ls-history" id="{anchor}">{history_html(v, start, end)}</div></div>{script}')


def draw_pager(v: StepView, key: str) -> None:
    """Show earlier / Show later, under a history longer than its window."""
    cursor, total = v.index, len(v.messages)
    if total <= WINDOW:
        return
    offset_key = f"{key}-history-offset"
    start, end = window(total, WINDOW, _offset(offset_key, cursor), snap=SNAP)
    with st.container(horizontal=True, vertical_alignment="center", key=f"{key}-history-pager"):
        st.button(t("Show earlier"), key=f"{key}-earlier", disabled=start == 0, on_click=_page,
                  args=(offset_key, cursor, 1))
        st.button(t("Show later"), key=f"{key}-later", disabled=end == total, on_click=_page,
                  args=(offset_key, cursor, -1))
        st.caption(t("Showing messages[{start}] to messages[{end}] of {total}; {earlier} earlier not drawn.",
                     start=int(start), end=end - 1, total=f"{total:,}", earlier=f"{start:,}"))
