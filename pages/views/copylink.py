"""Copy link to this step: the clean permalink, for whoever does not trust the address bar.

The link is made here from what a permalink holds and nothing else (the page,
`scenario` or `sample`, `step`, `profile`, `lang`, `predict`; on Your loop `code`, the learner's source
as run), so it can never carry anything else of the browser's. The page's own address is taken in the browser, where the copy
happens: a few lines of our own in a Streamlit component, drawn in the step
header, which presenter mode keeps.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from .i18n import t
from .presenter import presenting

# Everything the copied link holds, in this order. Not the address bar's `present`: presenter mode is the
# projector's, and a link copied in it is for the learners' own screens.
PERMALINK = ("code", "scenario", "sample", "step", "profile", "lang", "predict")

_copy = st.components.v2.component(
    "loopscope_copy_link",
    html='<button type="button"><svg viewBox="0 0 24 24" aria-hidden="true"><path d="M10.6 13.4a1 1 0 0 1 0-1.4l3.'
         '5-3.5a3 3 0 1 1 4.2 4.2l-2 2a1 1 0 1 1-1.4-1.4l2-2a1 1 0 0 0-1.4-1.4L12 13.4a1 1 0 0 1-1.4 0ZM13.4 10.6a1 '
         '1 0 0 1 0 1.4l-3.5 3.5a3 3 0 1 1-4.2-4.2l2-2a1 1 0 1 1 1.4 1.4l-2 2a1 1 0 0 0 1.4 1.4l3.5-3.5a1 1 0 0 1 1'
         '.4 0Z"/></svg><span></span></button>',
    css="""
button { display: flex; align-items: center; justify-content: center; gap: 0.4rem; white-space: nowrap;
         min-height: 2.5rem; padding: 0.25rem 0.75rem; border-radius: 0.5rem; font: inherit; cursor: pointer;
         color: inherit; background: transparent; border: 1px solid rgba(128, 128, 128, 0.35); }
button:hover:not(:disabled) { border-color: var(--st-primary-color); color: var(--st-primary-color); }
button:disabled { opacity: 0.45; cursor: not-allowed; }
svg { width: 1.1rem; height: 1.1rem; fill: currentColor; flex: none; }
""",
    js="""
export default function ({ data, parentElement }) {
  const button = parentElement.querySelector("button");
  const label = button.querySelector("span");
  label.textContent = data.label;
  button.title = data.title;
  button.disabled = !data.query;
  button.style.fontSize = data.size || "";  // presenter mode's large type
  button.onclick = async () => {
    const link = window.location.origin + window.location.pathname + "?" + data.query;
    button.dataset.link = link;
    try {
      await navigator.clipboard.writeText(link);
      label.textContent = data.copied;
      setTimeout(() => { label.textContent = data.label; }, 2000);
    } catch (e) {
      window.prompt(data.manual, link);  // no clipboard here (an http page, a refused permission): copy by hand
    }
  };
}
""")


def permalink_query() -> str | None:
    """The query string of this step's permalink, or None when no link can rebuild it (a free task, a real model,
    an uploaded file)."""
    url = st.query_params.to_dict()  # read once: each read of st.query_params takes the session's lock
    params = {p: url[p] for p in PERMALINK if url.get(p)}
    if "scenario" not in params and "sample" not in params:
        return None
    return urlencode(params)


def draw_copy_link(key: str) -> None:
    """The "Copy link" button for the step the page shows."""
    query = permalink_query()
    # As wide as its label: in the row of buttons it takes the room it needs, no more.
    _copy(key=f"{key}-copy-link", width="content", height="content", data={
        "query": query or "", "label": t("Copy link"), "copied": t("Link copied"),
        "manual": t("Copy this link:"), "size": "1.2rem" if presenting() else "",
        "title": t("Copy a link to this step: it opens this scenario or sample at this step, in this language, "
                   "and holds nothing of yours (no saved runs).") if query else
        t("No link can rebuild this run (a free task, a real model or an uploaded file): only built-in scenarios "
          "and samples have links to a step.")})
