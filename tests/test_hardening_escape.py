"""Every string a transcript, a model or a student controls is shown as the text it is, wherever it is drawn.

A probe put markup into a sub-agent's label (the `task` input's description): the button that goes into the
sub-agent drew it as Markdown, so an image in it was fetched by every viewer's browser. The fixture here
(tests/synthetic.py `hostile_transcript`) puts an HTML image with an id, a Markdown image, a script link,
emphasis, LaTeX and a colour directive into every such string; each view must show them as text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from streamlit.testing.v1 import AppTest

from tests.apptest import APP, app, run
from tests.tables import html_text
from tests.synthetic import HOSTILE_FIELDS, hostile, hostile_transcript
from tests.test_browser import page, url  # noqa: F401 (the browser and the app, as fixtures)
from tests.test_hardening_files import pixel_server  # noqa: F401 (a listener on 127.0.0.1)

BASE = "http://127.0.0.1:9"  # nothing listens there; the browser test below runs a listener of its own
MARKERS = ("![i](", "[l](", "**bold**", "$x$")  # each escaped (`\[`, `\*`, `\$`) when shown as text
_CODE = re.compile(r"^```.*?^```|(`+)(?!`).+?(?<!`)\1(?!`)", re.S | re.M)


def markdown_faults(source: str) -> list[str]:
    """The markup of `hostile()` that a Markdown body would act on: what is neither escaped nor in code."""
    outside = _CODE.sub("", source)
    found = [m for m in MARKERS if m in outside]
    found += ["<img"] if re.search(r"(?<!\\)<img", outside) else []
    found += [":red"] if re.search(r"(?<!\\):red\\?\[x", outside) else []  # `:red` alone is a directive too
    return found


VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "area", "base", "source", "track"}


class _Live(HTMLParser):
    """Elements of an HTML fragment that `hostile()` made: an image, the `pwn` id, a script link, emphasis.

    A message's own text (class `ls-text`) is Markdown by design: its emphasis, and its links, which a reader
    follows or not, are what its writer meant; an image there is a link, never fetched.
    """

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.open: list[tuple[str, bool]] = []  # each open element, and whether it is in a message's text

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        text = (self.open and self.open[-1][1]) or "ls-text" in (values.get("class") or "").split()
        if tag == "img" or values.get("id") == "pwn":
            self.found.append(f"<{tag} {values}>")
        for name in ("href", "src", "xlink:href"):
            link = values.get(name) or ""
            if link.startswith("javascript:") or (link.startswith(BASE) and not (text and tag == "a")):
                self.found.append(f"<{tag} {name}={link}>")
        if tag not in VOID:
            self.open.append((tag, text))

    def handle_data(self, data):
        if self.open and self.open[-1][0] in ("strong", "b", "em") and data == "bold" and not self.open[-1][1]:
            self.found.append(f"<{self.open[-1][0]}>bold")

    def handle_endtag(self, tag):
        if tag not in VOID and self.open:
            self.open.pop()


def html_faults(body: str) -> list[str]:
    reader = _Live()
    reader.feed(body)
    found = reader.found
    for script in re.findall(r"<script>(.*?)</script>", body, re.S):  # HTML a script puts in place
        for literal in re.findall(r'"(?:[^"\\]|\\.)*"', script):
            text = json.loads(literal)
            if "<" in text:
                found += html_faults(text)
    return found


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def faults(at: AppTest) -> dict[str, list[str]]:
    """Every element of the page (main and sidebar) that would make markup of `hostile()` live, with what it made.

    Streamlit draws Markdown in markdown, captions, alerts, toasts, and in the labels and `help` tooltips of
    buttons, expanders, tabs and widgets, and in a radio's options (a selectbox's are text); st.html is HTML.
    """
    out: dict[str, list[str]] = {}
    for root in (at.main, at.sidebar):
        for el in _walk(root):
            kind = el.type
            if kind == "html":
                bad = html_faults(el.proto.body)
                if bad:
                    out[f"html {el.proto.body[:80]!r}"] = bad
                continue
            texts = []
            if kind in ("markdown", "caption", "error", "info", "success", "warning", "toast", "exception"):
                texts.append(getattr(el, "value", "") or "")
                if kind == "markdown" and (el.value or "").lstrip().startswith("<"):  # HTML in it: read that too
                    bad = html_faults(el.value)
                    if bad:
                        out[f"markdown html {el.value[:80]!r}"] = bad
            for attr in ("label", "help"):
                value = getattr(el, attr, None) if kind != "markdown" else None
                if not isinstance(value, str):
                    value = getattr(getattr(el, "proto", None), attr, None)
                if isinstance(value, str):
                    texts.append(value)
            if kind == "radio":
                texts += [str(o) for o in el.options]
            for text in texts:
                bad = markdown_faults(text)
                if bad and not (kind == "markdown" and text.lstrip().startswith(("<style", "<div", "<script"))):
                    out[f"{kind} {text[:100]!r}"] = bad
    return out


def shown(at: AppTest) -> str:
    """What the page says, as a reader reads it: Markdown's escapes gone, HTML's text (and the diagram's)."""
    out = []
    for root in (at.main, at.sidebar):
        for el in _walk(root):
            if el.type == "html":
                out.append(html_text(el.proto.body))
                out += [html_text(json.loads(m)) for m in re.findall(r'innerHTML = ("(?:[^"\\]|\\.)*");', el.proto.body)]
                continue
            for attr in ("value", "label", "help"):
                value = getattr(el, attr, None)
                if isinstance(value, str):
                    out.append(re.sub(r"\\(.)", r"\1", value))
            if el.type in ("radio", "selectbox"):
                out += [str(o) for o in el.options]
    return "\n".join(out)


def every_step(at: AppTest, key: str = "replay") -> tuple[dict[str, list[str]], set[str]]:
    """`faults` at each step of the trace on the page, by step; and the fields of `hostile()` shown whole as text."""
    trace = at.session_state[key]["trace"]
    found, whole = {}, set()
    for i in range(len(trace)):
        trace.goto(i)
        run(at)
        found.update({f"step {i + 1}: {where}": bad for where, bad in faults(at).items()})
        text = shown(at)
        whole |= {f for f in HOSTILE_FIELDS if hostile(BASE, f) in text}
    return found, whole


def hostile_replay() -> AppTest:
    at = app("pages/replay.py")
    at.file_uploader(key="replay-upload").set_value(
        (hostile(BASE, "file") + ".json", hostile_transcript(BASE).encode(), "application/json"))
    return run(at)


def test_every_string_a_transcript_controls_is_text_at_every_step_of_replay():
    at = hostile_replay()
    assert at.session_state["replay"]["name"].startswith("file<img")
    found, whole = every_step(at)
    assert found == {}
    assert whole >= {"task", "label", "tool", "id", "path", "model", "stop", "error", "thread", "file"}
    # The thread picker's options are plain text (a selectbox's, unlike a radio's, are not Markdown): as they are.
    options = at.selectbox(key="replay-thread").options
    assert any(hostile(BASE, "label") in o for o in options) and any(hostile(BASE, "thread") in o for o in options)


def test_presenter_mode_shows_every_string_as_text_at_every_step():
    at = hostile_replay()
    at.session_state["present"] = True  # as Step through's switch leaves it for Replay
    run(at)
    assert "ls-present" in "".join(el.proto.body for el in at.get("html"))
    found, whole = every_step(at)
    assert found == {}
    assert whole >= {"task", "tool", "id", "path", "stop"}


def test_the_markdown_export_of_every_step_shows_the_strings_as_text_and_fetches_nothing():
    from markdown_it import MarkdownIt

    from loop.files import transcript
    from loop.files.export import to_markdown

    viewer = MarkdownIt("commonmark", {"html": True}).enable("table")  # a viewer that renders HTML and images
    trace = transcript.loads(hostile_transcript(BASE))
    inside = next(i for i, s in enumerate(trace.steps) if s.thread != "main") + 8  # after the sub-agent's read_file
    for i in range(len(trace)):
        html = viewer.render(to_markdown(trace, i))
        assert html_faults(html) == [] or set(html_faults(html)) == {"<strong>bold"}, (i, html_faults(html))
        assert not re.search(r"<(img|script|a href=\"javascript)", html), i
        head = html_text(html.split("<h2>messages</h2>")[0])
        for field in ("task", "model", *(("stop",) if str(trace.steps[i].stop_reason).startswith("stop") else ())):
            assert hostile(BASE, field) in head, (i, field)
    html = viewer.render(to_markdown(trace, inside))
    pairs = html_text(html.split("tool_use / tool_result pairs")[-1])
    assert hostile(BASE, "tool") in pairs and hostile(BASE, "id") + "3" in pairs
    assert hostile(BASE, "id") in html_text(html.split("<h2>")[0])  # the sub-agent's thread, named by its id
    # the model's own Markdown keeps its look; its image is a text, never fetched
    assert "<strong>bold</strong>" in viewer.render(to_markdown(trace))
    assert f"![i]({BASE}/task-md.png)" in html_text(viewer.render(to_markdown(trace)))


def _sent() -> list:
    """The messages a call sent: the task, a message (drawn as the history draws one, its Markdown kept)."""
    return [{"role": "user", "content": hostile(BASE, "task")}]


def _response(field: str, tool: bool) -> dict:
    """A model's response whose every string is `hostile()` markup: its words, a tool's name, id and input, its
    stop_reason."""
    content = [{"type": "text", "text": hostile(BASE, field)}]
    if tool:
        content.append({"type": "tool_use", "id": hostile(BASE, "id"), "name": hostile(BASE, "tool"),
                        "input": {"path": hostile(BASE, "path")}})
    return {"role": "assistant", "content": content, "stop_reason": hostile(BASE, "stop")}


def test_the_compare_page_shows_what_a_model_and_a_server_said_as_text():
    from loop.views.compare import SCENARIOS, Call, ProfileRun

    error = {"status": 529, "type": hostile(BASE, "error") + " type", "message": hostile(BASE, "error")}
    minimal = ProfileRun("minimal", [Call(1, "call_model", _sent(), response=_response("said", True),
                                          then="tool_use", tool_outputs=[hostile(BASE, "output")]),
                                     Call(2, "error", _sent(), error=error, then="error",
                                          values={"error": hostile(BASE, "error")})],
                         ended="error", steps=5, wall_ms=1.0, waited_s=0.0)
    complete = ProfileRun("complete", [Call(1, "call_model", _sent(), response=_response("said", False),
                                            then="end", values={"why": hostile(BASE, "stop")})],
                          ended=hostile(BASE, "stop"), steps=4, wall_ms=1.0, waited_s=0.0)
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/compare.py")
    at.session_state["compare-runs"] = {(SCENARIOS[0], "en"): (minimal, complete)}
    run(at)
    assert faults(at) == {}
    text = shown(at)
    assert {f for f in ("said", "tool", "path", "stop", "error") if hostile(BASE, f) in text} \
        == {"said", "tool", "path", "stop", "error"}


def test_the_mistakes_lab_shows_what_a_model_and_the_api_said_as_text():
    from loop.engine.mistakes import MISTAKES
    from loop.views.mistakes import Call, LabRun

    name = next(iter(MISTAKES))
    refused = f"messages.1: {hostile(BASE, 'error')}\nline 2 {hostile(BASE, 'error')}"
    wrong = LabRun(name, [Call(1, _sent(), response=_response("said", True)),
                          Call(2, _sent(), error=refused)], ended="400")
    right = LabRun(None, [Call(1, _sent(), response=_response("said", False))], ended=hostile(BASE, "stop"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/mistakes.py")
    at.session_state["mistakes-runs"] = {(name, "en"): (wrong, right)}
    at.session_state["mistake-pick"] = at.session_state["mistake-seen"] = name
    run(at)
    assert faults(at) == {}
    text = shown(at)
    assert {f for f in ("said", "tool", "path", "stop", "error") if hostile(BASE, f) in text} \
        == {"said", "tool", "path", "stop", "error"}


# -- a real browser: nothing made, nothing fetched ---------------------------------------------------

LIVE = """(base) => [...document.querySelectorAll('#pwn, img, a[href^="javascript:"]')]
    .filter((el) => el.id === 'pwn' || el.tagName !== 'IMG' || (el.src || '').startsWith(base)
                    || (el.src || '').includes('probe'))
    .map((el) => el.outerHTML.slice(0, 120))"""


def test_a_browser_stepping_through_the_hostile_transcript_makes_no_element_and_fetches_nothing(page, url, tmp_path,
                                                                                                 pixel_server):
    from tests.browser import wait_for_status, wait_idle

    base, seen = pixel_server
    requests, dialogs = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    name = "file<img src=probe.png id=pwn>![i](probe-md.png)**bold**$x$:red[x].json"  # no "/" in a file's name
    path = tmp_path / name
    path.write_text(hostile_transcript(base))
    page.goto(f"{url}/replay")
    wait_idle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_text(f"Replaying {name}").wait_for(timeout=60_000)  # the name as it is, not rendered
    n = 29
    wait_for_status(page, f"Step 1 of {n}")
    made = {}
    for k in range(2, n + 1):  # every step, the sub-agent's thread among them
        page.locator(".st-key-replay-step button").click()
        wait_for_status(page, f"Step {k} of {n}")
        wait_idle(page)
        into = page.locator(".st-key-replay-into button")
        if into.count():  # its tooltip is the sub-agent's label, drawn as Markdown when shown
            into.first.hover()
            page.get_by_text(hostile(base, "label")).first.wait_for()
        if page.evaluate(LIVE, base):
            made[k] = page.evaluate(LIVE, base)
    assert page.get_by_text(hostile(base, "stop")).count()  # the end's reason, as text
    page.locator(".st-key-replay-thread").click()  # the thread picker, open: its options are text
    page.get_by_text(hostile(base, "thread") + " label").first.wait_for()
    made["picker"] = page.evaluate(LIVE, base)
    wait_idle(page)
    assert {k: v for k, v in made.items() if v} == {}
    assert dialogs == []
    assert seen == []  # the listener was asked for nothing
    assert not [u for u in requests if u.startswith(base) or "probe" in u]
