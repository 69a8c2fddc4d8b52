"""Back and Step shown at once, as Python Tutor shows them: the steps beside the cursor go with the page.

Every page run sends, in a hidden element beside the views, the steps just before and after the cursor,
already drawn: the heading, the line saying what happened and the line beside the buttons (in presenter
mode, the one-row LoopState instead), and the views (the diagram, the note, the history). A click on Back
or Step, or ← / →, puts that step on the screen at once, in the browser, and its number in the address. The server's answer follows a
moment later and replaces it with the same words, and with what only the server draws: the tables under
the views, the buttons' states, the URL, the saved cursor.

Only recorded steps are sent, and, with Predict, then step on, not a step whose question waits for an
answer: the browser would show it before the learner answered (predict.py). A Step that executes a stage
waits for the server, and so does a second click before the server has answered the first, unless it goes
back to where the server is. Should the server not answer a click (a lost connection), the page goes back
to the step the server last drew.
"""

from __future__ import annotations

import functools
import json

from .predict import withheld

# The browser's half. Installed once a page; each page run gives it the steps beside the new cursor.
# Streamlit owns the heading (a Markdown element: only its one text node is changed, as Streamlit itself
# changes it) and the HTML elements (replaced whole, as Streamlit replaces them); nothing else is touched.
SCRIPT = """(() => {
const data = DATA;
data.server = data.shown;
data.steps[data.shown] = {status: data.status};  // the rest of it is on the screen: kept when first left
const all = window.lsAhead || (window.lsAhead = {});
if (all[data.key]) clearTimeout(all[data.key].timer);
all[data.key] = data;
if (window.lsAheadOn) return;
window.lsAheadOn = true;
const BY = {back: -1, step: 1};
const KEYS = {ArrowLeft: "back", ArrowRight: "step"};
const rerun = (box) => box.querySelectorAll("script").forEach((old) => {
  const script = document.createElement("script");
  script.textContent = old.textContent;
  old.replaceWith(script);
});
// The address names the step shown, where it names one (the page's own link: a copied address or a reload opens
// what is on the screen). A step drawn ahead is a new entry of the tab's history, as the server's answer makes one;
// going back to the server's step, when it did not answer, takes the entry back.
const address = (d, k) => {
  if (!d.address) return;
  const url = new URL(location.href);
  if (!url.searchParams.has("step") || url.searchParams.get("step") === String(k + 1)) return;
  url.searchParams.set("step", String(k + 1));
  if (k === d.server) history.replaceState(history.state, "", url);
  else history.pushState(history.state, "", url);
};
const show = (d, k) => {
  const to = d.steps[k], from = d.steps[d.shown];
  if (!to || !from || !to.views) return false;
  const head = [...document.querySelectorAll("h3 [data-heading-text]")].find((s) => s.textContent === from.status);
  const grid = document.getElementById("ls-grid-" + d.key);
  const parts = Object.keys(to.parts).map((id) => document.getElementById(id));
  if (!head || head.childNodes.length !== 1 || head.firstChild.nodeType !== Node.TEXT_NODE || !grid
      || parts.includes(null)) return false;
  const box = grid.parentElement;
  if (!from.views) {
    from.parts = Object.fromEntries(parts.map((el) => [el.id, el.outerHTML]));
    from.views = box.innerHTML;
  }
  head.firstChild.nodeValue = to.status;
  address(d, k);
  parts.forEach((el) => { el.outerHTML = to.parts[el.id]; });
  box.innerHTML = to.views;
  rerun(box);
  if (k !== d.server) document.getElementById("ls-grid-" + d.key).dataset.ahead = "1";
  d.shown = k;
  return true;
};
// Two clicks the server answers with two runs (Back, then Step before the first is drawn): once the second starts,
// Streamlit drops what the first had not sent yet, so the first may end with its heading and its line (a step beside)
// above the views of the step before, until the second run is drawn. A run of the server's that ends so, while the
// page's data says the server is at a step the page holds whole (it left it drawing ahead, and came back), puts that
// step back at once.
const heading = (key) => {  // the heading above the buttons of `key`
  const buttons = document.querySelector(".st-key-" + key + "-buttons");
  const heads = [...document.querySelectorAll("h3 [data-heading-text]")];
  return buttons && heads.filter((h) => h.compareDocumentPosition(buttons) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
};
const mend = (d) => {
  const at = d.steps[d.server];
  if (all[d.key] !== d || d.shown !== d.server || !at || !at.views) return;
  const head = heading(d.key);
  const grid = document.getElementById("ls-grid-" + d.key);
  if (!head || !grid || head.childNodes.length !== 1 || head.firstChild.nodeType !== Node.TEXT_NODE) return;
  const text = head.firstChild.nodeValue;
  if (text === at.status || !Object.values(d.steps).some((step) => step.status === text)) return;
  head.firstChild.nodeValue = at.status;
  Object.entries(at.parts).forEach(([id, html]) => {
    const el = document.getElementById(id);
    if (el) el.outerHTML = html;
  });
  grid.parentElement.innerHTML = at.views;
  rerun(document.getElementById("ls-grid-" + d.key).parentElement);
};
new MutationObserver(() => {
  if (document.querySelector("[data-test-script-state='notRunning']")) Object.values(all).forEach(mend);
}).observe(document.body, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
// How long a click waits for the server's answer before the server's step comes back: 3 s, unless the page says
// otherwise (a browser test on a loaded machine, which must read the step drawn ahead before it goes). Read at each
// look, a quarter of a second apart: a test that has read that step can then let it go at once.
const HEAL = () => window.lsAheadHeal || 3000;
const heal = (d) => {  // the server's answer replaces `d`; without one, its last step comes back
  clearTimeout(d.timer);
  const since = Date.now();
  d.timer = setTimeout(function check() {
    if (all[d.key] !== d || d.shown === d.server) return;
    if (Date.now() - since < HEAL() || document.querySelector("[data-test-script-state='running']")) {
      d.timer = setTimeout(check, 250);
      return;
    }
    show(d, d.server);
  }, 250);
};
const press = (button, key, action) => {
  const d = all[key];
  if (!d || button.disabled) return;
  const k = d.shown + BY[action];
  setTimeout(() => { if (show(d, k)) heal(d); });  // after Streamlit has sent the click on its way
};
const find = (button) => {
  for (const key in all) for (const action in BY) {
    if (button.closest(".st-key-" + key + "-" + action)) return [key, action];
  }
  return null;
};
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button");
  const found = button && find(button);
  if (found) press(button, ...found);
}, true);
document.addEventListener("keydown", (event) => {  // as Streamlit's own shortcuts: no modifier, not while typing
  const action = KEYS[event.key];
  const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
  if (!action || typing || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  for (const key in all) {
    const button = document.querySelector(".st-key-" + key + "-" + action + " button");
    if (button && button.querySelector("[data-has-shortcut='true']")) press(button, key, action);
  }
}, true);
})();"""


def ahead_script(key: str, cursor: int, status: str, beside: dict[int, dict], address: bool = False) -> str:
    """A hidden element whose script holds the steps `beside` the cursor, each a dict of `status` (the heading's
    text), `parts` (the HTML of each element, by id, that shows it outside the views) and `views` (the HTML of
    the views element); `status` is the heading of the step under the cursor. `address`: the page's address
    follows this cursor (permalink.py `keep_url`), so a step shown ahead sets its `step` too."""
    held = withheld(key)  # asked first: the server shows it
    steps = ", ".join(f"{json.dumps(str(k))}: {_step_json(step['status'], tuple(step['parts'].items()), step['views'])}"
                      for k, step in beside.items() if k not in held)
    head = _safe(json.dumps({"key": key, "shown": cursor, "status": status, "address": address}))
    return f'<div class="ls-ahead"></div><script>{_BEFORE}{head[:-1]}, "steps": {{{steps}}}}}{_AFTER}</script>'


_BEFORE, _AFTER = SCRIPT.split("DATA")


def _safe(data: str) -> str:
    """No "<" in the script: the sanitiser drops a script that has one."""
    return data.replace("<", "\\u003c")


@functools.lru_cache(maxsize=64)
def _step_json(status: str, parts: tuple[tuple[str, str], ...], views: str) -> str:
    """A step beside the cursor as JSON: made once while its HTML is the same (the views of a step are drawn once
    and kept, current.py `drawn`, so a cursor move finds the step it left, and the one it comes back to, here)."""
    return _safe(json.dumps({"status": status, "parts": dict(parts), "views": views}))
