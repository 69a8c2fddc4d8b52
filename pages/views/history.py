"""The message history as the model will see it on its next call, a bounded window of it.

Only the newest WINDOW to WINDOW + SNAP - 1 messages are drawn, so a click at
5,000 messages costs what it does at ten; "Show earlier" pages back. What a
stage holds outside `messages` (a response received but not yet appended,
tool_results not yet written back) is drawn after the history, apart from it:
that gap is the lesson.

The window is one HTML element (see blocks.py). The block that matters at
this step (the one the step added, or an is_error result the model is reading
now) is ringed, and the panel scrolls to it.
"""

from __future__ import annotations

from html import escape

import streamlit as st

from loop.trace import Trace
from loop.views import ending, errors_read_at, pending_response, window

from .blocks import content_html, markdown_html
from .i18n import t

WINDOW = 12  # messages drawn at least; up to WINDOW + SNAP - 1 (see loop.views.window)
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
    """The arrow-and-words mark beside a message: added by this step, or received and held outside messages."""
    return f'<span class="ls-mark{" ls-held" if held else ""}">→ {escape(text)}</span>'


def _offset(key: str, cursor: int) -> int:
    kept = st.session_state.get(key)
    return kept[1] if kept and kept[0] == cursor else 0  # a new step shows the newest messages


def _page(key: str, cursor: int, by: int) -> None:
    st.session_state[key] = (cursor, max(0, _offset(key, cursor) + by))


def _label(i: int, message: dict) -> str:
    role = message.get("role", "?")
    content = message.get("content")
    kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else ["text"]
    head = f'<span class="ls-role">{escape(str(role))}</span> <code>messages[{i}]</code>'
    if role == "user" and kinds and all(k == "tool_result" for k in kinds):
        head += " · " + escape(t("{n} tool_result(s), written back by the loop", n=len(kinds)))
    return head


def message_html(i: int, message: object, *, new: bool = False, ring: bool = False, focus: set[int] = frozenset(),
                 callouts: dict[int, str] | None = None) -> str:
    """messages[i] as a card: its role and index, then its blocks; `ring` marks the card, `focus` some blocks."""
    if not isinstance(message, dict):
        return f'<div class="ls-msg ls-user"><div class="ls-head">{_label(i, {})}</div>{content_html(message)}</div>'
    role = message.get("role")
    classes = ("ls-msg " + ("ls-assistant" if role == "assistant" else "ls-user") + (" ls-new" if new else "")
               + (" ls-focus" if ring else ""))
    head = _label(i, message) + (" " + mark(t("added by this step")) if new else "")
    return (f'<div class="{classes}" data-index="{i}"><div class="ls-head">{head}</div>'
            f'{content_html(message.get("content"), focus=focus, callouts=callouts)}</div>')


def draw_message(i: int, message: object, new: bool = False) -> None:
    """One message on its own (the Mistakes lab draws the messages a call sent)."""
    st.html(f'<div class="ls-history">{message_html(i, message, new=new)}</div>')


def history_html(trace: Trace, cursor: int, start: int, end: int) -> str:
    """messages[start:end] at `cursor`, newest last, then (when the window reaches the end) what waits outside.

    One thing is ringed, the one that matters at this step: an is_error result the model reads now, else
    the first message the step added, else what it holds outside messages, else (a stop_reason check)
    the newest message.
    """
    messages = trace.messages_at(cursor)
    first_new, n_new = trace.new_blocks_at(cursor) if 0 <= cursor < len(trace) else (0, 0)
    read = errors_read_at(trace, cursor)
    waiting = end == len(messages) and (pending_response(trace, cursor) is not None or
                                        (0 <= cursor < len(trace) and trace.results_at(cursor)))
    parts = []
    for i in range(start, end):
        focus = {j for m, j, _ in read if m == i}
        callouts = {j: _callout(tool_use_id) for m, j, tool_use_id in read if m == i}
        new = first_new <= i < first_new + n_new
        ring = not read and ((new and i == first_new) or (not n_new and not waiting and i == end - 1))
        parts.append(message_html(i, messages[i], new=new, ring=ring, focus=focus, callouts=callouts))
    if end == len(messages):
        parts.append(_pending_html(trace, cursor, focus=not read and not n_new))
    return "".join(parts)


def _callout(tool_use_id: str) -> str:
    """The note under an is_error result the model reads at this step."""
    return ('<div class="ls-callout">' + escape(t(
        "The model reads this error now. A failed command is an observation too: its tool_result went back into "
        "messages and is the input of this call, so the model can change its next move. This is the chapter's "
        "third point at work: a tool_result is not a terminal log, it is the next turn's input block.")) + "</div>")


def _pending_html(trace: Trace, cursor: int, focus: bool) -> str:
    """What a stage holds outside messages: a response received but not yet appended, results not yet written back."""
    out = []
    response = pending_response(trace, cursor)
    if response is not None:
        ring = " ls-focus" if focus else ""
        out.append(
            f'<div class="ls-card{ring}"><div class="ls-card-head">'
            + escape(t("The response: received by this step, not in messages yet"))
            + f' · stop_reason <code class="ls-data">{escape(str(response.get("stop_reason")))}</code> '
            + mark(t("received by this step"), held=True) + "</div>"
            + '<div class="ls-card-caption">'
            + escape(t("Stage 3 appends it to messages. Leave it out and the next turn loses its context.")) + "</div>"
            + content_html(response.get("content")) + "</div>")
    results = trace.results_at(cursor) if 0 <= cursor < len(trace) else []
    if results:
        ring = " ls-focus" if focus and response is None else ""
        out.append(
            f'<div class="ls-card"><div class="ls-card-head">'
            + escape(t("{n} tool_result(s) collected, not yet written back", n=len(results))) + "</div>"
            + '<div class="ls-card-caption">'
            + escape(t("Stage 5 writes them back as ONE user message; until then the model cannot see them.")) + "</div>"
            + content_html(results[:-1])
            + f'<div class="{ring.strip()}">' + '<div class="ls-head">' + mark(t("collected by this step"), held=True)
            + "</div>"
            + content_html(results[-1:]) + "</div></div>")
    return "".join(out)


def caption(trace: Trace, cursor: int) -> str:
    """What the panel shows: the next call's input while the loop goes on; what it left when it has ended."""
    if ending(trace, cursor):
        return t("The history as the loop left it: the loop has ended, so no model call will read it.")
    return t("The history exactly as the model will see it on its next call.")


def history_panel(trace: Trace, cursor: int, key: str, height: int = HEIGHT, fit: bool = False,
                  before: str = "") -> str:
    """The window of messages at `cursor` as HTML: its heading, then the panel, newest last, then what waits.

    The panel opens at its newest message by itself (it runs bottom-up); a script scrolls it only where
    the block that matters is higher up (an error the model reads now), and with `fit` it also makes the
    panel fill the screen down to its bottom (presenter mode). `before` is drawn above the heading.
    """
    messages = trace.messages_at(cursor)
    total = len(messages)
    start, end = window(total, WINDOW, _offset(f"{key}-history-offset", cursor), snap=SNAP)
    head = (f'{before}<div class="ls-panel-head"><h4 class="ls-h4">messages · {total}</h4>'
            f'<p class="ls-caption">{escape(caption(trace, cursor))}</p></div>')
    if total == 0:
        empty = t("messages is empty. Press **Step**: stage 1 puts the user's request into it.")
        return head + f'<div class="ls-empty" data-step="{cursor + 1}">{markdown_html(empty)}</div>'
    anchor = f"ls-history-{key}"
    script = SCROLL.replace("ANCHOR", anchor) if fit or errors_read_at(trace, cursor) else ""
    fits = ' data-fit="1"' if fit else ""
    return (f'{head}<div class="ls-panel" style="height:{height}px" data-step="{cursor + 1}"{fits}>'
            f'<div class="ls-history" id="{anchor}">{history_html(trace, cursor, start, end)}</div></div>{script}')


def draw_pager(trace: Trace, cursor: int, key: str) -> None:
    """Show earlier / Show later, under a history longer than its window."""
    total = len(trace.messages_at(cursor))
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
                     start=start, end=end - 1, total=f"{total:,}", earlier=f"{start:,}"))
