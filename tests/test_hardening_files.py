"""Hostile files and servers: an upload built to cost memory, images that would report who looks, a key echoed
back in any shape, terminal escapes in a transcript.

Each is what a probe of the class server found: a 98 MB list of 965,518 tiny
messages held 4 GB of the server; `![t](http://host/pixel.png)` in a
transcript's text or file name made every viewer's browser fetch it; a key that
did not start with `sk-` was shown whole when a server quoted it; `import` and
`replay` printed `ESC]0;…BEL` and `ESC[31m` as they were.
"""

from __future__ import annotations

import gc
import http.server
import json
import resource
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from loop.importers import MAX_MESSAGES, ImportFailed, import_bytes
from loop.importers.isolated import import_isolated
from tests.apptest import app, choose_server, click

ROOT = Path(__file__).resolve().parent.parent
TINY = [{"role": "user", "content": "x"}] * 965_518  # the probe's file, 33 MB written compactly


def replay_page():
    return app("pages/replay.py")  # opened as a link to it opens it: Step through is not drawn first


# -- memory: the upload limit, the message cap, the import's own process --------------------------

def test_the_upload_limit_is_set_on_purpose_and_the_page_applies_it():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == 50  # MB; Streamlit's default would be 200
    at = replay_page()
    at.file_uploader(key="replay-upload").set_value(("huge.json", b" " * (50 * 2**20 + 1), "application/json")).run()
    assert not at.exception
    (error,) = at.error
    said = error.value.replace("`", "")  # its data (the name, the sizes) as inline code
    assert "huge.json: the file is 52.4 MB, over the import limit of 52.4 MB; nothing was read" in said
    assert at.session_state["replay"]["name"] == "two-tools.json"  # the replay before it is kept


def test_a_million_tiny_messages_are_refused_without_the_server_holding_them():
    data = json.dumps(TINY, separators=(",", ":")).encode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    at = replay_page()
    at.file_uploader(key="replay-upload").set_value(("tiny.json", data, "application/json")).run()
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    assert not at.exception
    (error,) = at.error
    assert f"tiny.json: it holds 965,518 messages, over the limit of {MAX_MESSAGES:,}; nothing was read" in error.value.replace("`", "")
    assert at.session_state["replay"]["name"] == "two-tools.json"
    assert grew < 400 * 2**20, f"the server grew by {grew / 2**20:.0f} MiB"  # in the server: more than 2 GB


def test_an_import_that_needs_more_memory_than_allowed_ends_its_own_process_not_the_server():
    data = json.dumps([{"role": "user", "content": "y" * 1000}] * 40_000, separators=(",", ":")).encode()  # 41 MB
    assert len(import_bytes(data, "big.json").trace.messages) == 40_000  # within the caps ...
    small = (ROOT / "samples" / "two-tools.json").read_bytes()
    assert import_isolated(small, "two-tools.json", memory_bytes=150 * 2**20).format == "loopscope"
    with pytest.raises(ImportFailed) as refused:  # ... but not within 150 MiB of address space, where a sample is
        import_isolated(data, "big.json", memory_bytes=150 * 2**20)
    assert str(refused.value) == ("big.json: reading it needs more than the 150 MiB of memory Loopscope gives one "
                                  "upload; nothing was read")


def test_an_import_that_runs_out_of_memory_anywhere_still_says_so(monkeypatch):
    """Out of memory, the import's process can make nothing more: not even the words that say so. Here the import
    fails for memory, and so would anything the child made after it; the answer is still the memory's."""
    import io

    from loop.importers import isolated

    full = []

    def import_bytes(*args, **kwargs):
        full.append(True)
        raise MemoryError

    def dumps(*args, made=json.dumps, **kwargs):
        if full:
            raise MemoryError
        return made(*args, **kwargs)

    header = {"name": "big.json", "thread": None, "max_bytes": 2**20, "memory_bytes": 150 * 2**20, "cpu_seconds": 60}
    stdin = io.BytesIO(json.dumps(header).encode() + b"\n[]")
    stdout = io.BytesIO()
    monkeypatch.setattr(isolated, "import_bytes", import_bytes)
    monkeypatch.setattr(isolated.json, "dumps", dumps)
    monkeypatch.setattr(resource, "setrlimit", lambda *args: None)  # the limits are the child's, not this process's
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(stdout))
    try:
        isolated._child()
    finally:
        gc.enable()  # the child pauses the collector in its own process; this one is the tests'
    from loop.importers.notes import Note

    said = ImportFailed(Note.from_json(json.loads(stdout.getvalue())["error"]))
    assert str(said) == "big.json: reading it needs more than the 150 MiB of memory Loopscope gives one upload; nothing was read"


def test_an_isolated_import_gives_what_the_in_process_one_gives():
    from loop.files import transcript

    for sample in sorted((ROOT / "samples").glob("*.json")) + sorted((ROOT / "tests" / "data").glob("*.jsonl"))[:2]:
        data = sample.read_bytes()
        here, there = import_bytes(data, sample.name), import_isolated(data, sample.name)
        assert (there.format, there.warnings, there.threads, there.thread) == \
               (here.format, here.warnings, here.threads, here.thread), sample.name
        assert transcript.dumps(there.trace) == transcript.dumps(here.trace), sample.name


def test_an_import_does_not_touch_the_servers_garbage_collector(monkeypatch):
    def refuse():
        raise AssertionError("gc.disable() called in the server: every session's thread would see it off")

    monkeypatch.setattr(gc, "disable", refuse)
    assert gc.isenabled()
    imported = import_bytes((ROOT / "samples" / "two-tools.json").read_bytes(), "two-tools.json")
    assert imported.format == "loopscope" and gc.isenabled()


# -- images are links, and names are text --------------------------------------------------------

class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):
        _Recorder.seen.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def pixel_server():
    _Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    server.shutdown()
    server.server_close()


def test_images_in_a_transcript_are_never_fetched_by_a_viewers_browser(tmp_path, pixel_server, app_server, new_page):
    from tests.browser import wait_idle

    url = app_server[0]  # the app served once for the browser tests; this page is a browser of its own
    base, seen = pixel_server
    text = (f"Look: ![pixel]({base}/pixel.png) and <img src=\"{base}/html.png\"> and ![ref][r] and "
            f"[![linked]({base}/inner.png)]({base}/outer)\n\n[r]: {base}/ref.png\n\n`![code]({base}/code.png)`")
    history = [{"role": "user", "content": text}, {"role": "assistant", "content": [{"type": "text", "text": text}]}]
    path = tmp_path / "![n](probe-name.png) $x$.json"  # the name, too: relative to the app itself
    path.write_text(json.dumps(history))
    requests: list[str] = []
    page = new_page(1400, 1000)
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{url}/replay")
    wait_idle(page)
    page.get_by_text("Replaying two-tools.json").wait_for(timeout=60_000)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.get_by_text(f"Replaying {path.name}").wait_for(timeout=60_000)  # the name as it is, not rendered
    wait_idle(page)
    page.get_by_role("button", name="Run to end").first.click()
    page.get_by_text("messages · 2").wait_for(timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(1000)  # time for any image to be asked for
    links = page.locator(f"a[href='{base}/pixel.png']").count()
    images = page.locator("img[src*='127.0.0.1'], img[src*='probe-name']").count()
    assert links >= 2  # each image became a link to it, in both messages
    assert images == 0
    assert seen == []  # the listener was asked for nothing
    assert not [u for u in requests if "probe-name" in u or base in u]


def test_the_file_name_model_and_task_enter_markdown_as_text():
    from loop.files import transcript

    trace = transcript.load(ROOT / "samples" / "two-tools.json")
    trace.meta["model"] = "x` ![m](http://127.0.0.1:9/model.png) `"
    trace.meta["task"] = "![t](http://127.0.0.1:9/task.png) :red[loud] $x$"
    at = replay_page()
    at.file_uploader(key="replay-upload").set_value(
        ("![n](http://127.0.0.1:9/name.png).json", transcript.dumps(trace).encode(), "application/json")).run()
    head = next(m.value for m in at.markdown if m.value.startswith("**Replaying"))
    # Read as CommonMark reads it: no image, no link, the name and the task as their own text.
    tokens = MarkdownIt("commonmark").parseInline(head)[0].children
    assert not [tok for tok in tokens if tok.type in ("image", "link_open", "html_inline")]
    text = "".join(tok.content for tok in tokens if tok.type in ("text", "code_inline"))
    assert "![n](http://127.0.0.1:9/name.png).json" in text
    assert "![t](http://127.0.0.1:9/task.png) :red[loud] $x$" in text
    assert "xˋ ![m](http://127.0.0.1:9/model.png) ˋ" in [tok.content for tok in tokens if tok.type == "code_inline"]


# -- keys in any shape ----------------------------------------------------------------------------

PROXY_KEY = "class-proxy-7f3a9c2e5188"  # a proxy's key: no `sk-` for a pattern to find


def test_a_key_of_any_shape_echoed_by_the_server_is_hidden_on_the_page(fake_api, no_key_in_environment):
    fake_api.fail(401, times=3, body={"type": "error", "error": {"type": "authentication_error",
                                                                 "message": f"invalid x-api-key: {PROXY_KEY}"}})
    at = app()
    choose_server(at, fake_api.url, key=PROXY_KEY)
    click(at, "live-step")
    click(at, "live-step")
    assert fake_api.headers[-1]["authorization"] == f"Bearer {PROXY_KEY}"  # the key was really sent
    (error,) = at.error
    assert "invalid x-api-key: \\[API key\\]" in error.value
    page = " ".join(str(e.proto) for e in at.main) + " ".join(str(e.proto) for e in at.sidebar)
    assert PROXY_KEY not in page and PROXY_KEY[:12] not in page


def test_a_key_of_any_shape_echoed_by_the_server_is_hidden_by_the_cli(fake_api):
    fake_api.fail(401, body={"type": "error", "error": {"type": "authentication_error",
                                                        "message": f"invalid x-api-key: {PROXY_KEY}"}})
    from tests.cli import clean_env, loop_main

    # `main`, as `python -m loop` calls it, in this process: what it printed is all the command prints
    (done,) = loop_main(["run", "--scenario", "list-files", "--model", "claude-x"],
                        env=clean_env(ANTHROPIC_API_KEY=PROXY_KEY, ANTHROPIC_BASE_URL=fake_api.url))
    assert done.returncode == 1
    assert "invalid x-api-key: [API key]" in done.stderr
    assert PROXY_KEY not in done.stdout + done.stderr


# -- terminal escapes -------------------------------------------------------------------------------

ESCAPES = "\x1b]0;pwned\x07\x1b[31m\x9b2J\u202e"  # retitle, recolour, a C1 CSI, a right-to-left override


def test_the_cli_prints_a_files_control_characters_as_escapes(tmp_path):
    history = [{"role": "user", "content": f"task {ESCAPES}"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{ESCAPES}", "name": "bash",
                                                  "input": {"command": f"echo {ESCAPES}"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{ESCAPES}",
                                             "content": f"out {ESCAPES}"}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"orphan_{ESCAPES}",
                                             "content": "x"}]}]
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(history))
    out = tmp_path / "t.json"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "loop", *args], cwd=ROOT, capture_output=True, timeout=120)

    shown = [cli("import", str(source), "--out", str(out)), cli("replay", str(out)), cli("check", str(out))]
    for done in shown:
        printed = done.stdout + done.stderr
        assert printed, done
        for raw in ("\x1b", "\x07", "\xc2\x9b", "\u202e".encode()):
            assert (raw if isinstance(raw, bytes) else raw.encode()) not in printed, (done.args, printed[:300])
    replayed = shown[1].stdout.decode()
    assert "toolu_\\x1b]0;pwned\\x07\\x1b[31m\\x9b2J\\u202e" in replayed  # shown, as escapes
    assert "orphan_\\x1b]0;pwned" in shown[0].stdout.decode() + shown[2].stdout.decode()
