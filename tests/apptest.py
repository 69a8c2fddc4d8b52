"""Open the app in AppTest and click as a learner would; each step fails at once if the page shows an exception.

AppTest cannot send cookies, so `app(cookies=...)` hands the page the cookies a
browser would send (what `st.context.cookies` reads), and `issued(at)` reads the
browser id the page handed out: together they make a reload in the same browser.
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
COOKIE = "loopscope_browser"
_cookies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # the cookies each AppTest's browser sends


@contextlib.contextmanager
def _sending(cookies: dict | None):
    if not cookies:
        yield
        return
    client = SimpleNamespace(cookies=dict(cookies), headers=[("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))],
                             remote_ip="127.0.0.1")
    with mock.patch("streamlit.runtime.context._get_client_context", return_value=client):
        yield


def run(at: AppTest) -> AppTest:
    with _sending(_cookies.get(at)):
        at.run()
    assert not at.exception, at.exception
    return at


def app(page: str | None = None, *, cookies: dict | None = None, **query: str | None) -> AppTest:
    """The app opened at a URL with `query` (None leaves a parameter out), sending `cookies`, after its first run.

    `page` ("pages/replay.py") opens that page, as a link to it does; the default is Step through.
    """
    at = AppTest.from_file(APP, default_timeout=60)
    if page is not None:
        at.switch_page(page)
    at.query_params.update({k: v for k, v in query.items() if v is not None})
    _cookies[at] = dict(cookies or {})
    return run(at)


def reload(at: AppTest, **query: str | None) -> AppTest:
    """The same browser opened again (a reload, a new tab, a restarted server): a new session with its cookie."""
    cookie = issued(at) or _cookies.get(at, {}).get(COOKIE)
    return app(cookies={COOKIE: cookie} if cookie else None, **query)


def issued(at: AppTest) -> str | None:
    """The browser id this page handed to the browser in a cookie, if it handed one."""
    for element in at.get("bidi_component"):
        if element.proto.component_name == "loopscope_browser_cookie":
            cookie = json.loads(element.proto.json)["cookie"]
            name, _, rest = cookie.partition("=")
            assert name == COOKIE
            return rest.split(";")[0]
    return None


def copied_link(at: AppTest) -> str | None:
    """The query string "Copy link" would copy (None when no link can rebuild the step)."""
    for element in at.get("bidi_component"):
        if element.proto.component_name == "loopscope_copy_link":
            return json.loads(element.proto.json)["query"] or None
    raise AssertionError("no Copy link control on the page")


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click()
    return run(at)


def slider(at: AppTest, key: str):
    """The step slider of the `key` views (live or replay); it is a new widget at each cursor. Its popover, Go to
    step, is opened first if it is closed, as a click on it opens it (the slider is drawn only while it is open)."""
    if not (f"{key}-goto" in at.session_state and at.session_state[f"{key}-goto"]):
        at.session_state[f"{key}-goto"] = True
        run(at)
    return next(s for s in at.slider if (s.key or "").startswith(f"{key}-slider-"))


def choose_server(at: AppTest, url: str, key: str = "sk-test-123", *, gate: bool | None = False) -> AppTest:
    """The sidebar set to a real model (`claude-test`) on the Anthropic-compatible server at `url`, then New run.

    `gate` sets the approval gate's toggle; None leaves it as a real model has it by default (on).
    """
    at.radio(key="set-model").set_value("anthropic").run()
    if gate is not None:
        at.toggle(key="set-approve").set_value(gate)
    at.text_input(key="set-model-id").set_value("claude-test")
    at.text_input(key="set-api-key").set_value(key)
    at.text_input(key="set-base-url").set_value(url)
    return click(at, "new-run")


# -- what a download button gives the browser --
# AppTest gives each run a media file manager of its own and drops it after the run. Keeping the last
# one (per thread) lets a test click a download button as the browser does: Streamlit runs the
# button's callable and stores the file, and the test reads the stored bytes.
_managers = threading.local()
_init = MediaFileManager.__init__


def _keep_manager(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    _managers.last = self


MediaFileManager.__init__ = _keep_manager


def download(at: AppTest, key: str) -> tuple[str, bytes]:
    """(file name, bytes) that a click on the download button `key` sends to the browser, as the last run drew it."""
    buttons = [b for b in at.get("download_button") if b.proto.id.endswith(f"-{key}")]
    assert len(buttons) == 1, f"no download button {key!r} on the page"
    proto = buttons[0].proto
    assert not proto.disabled, f"the download button {key!r} is disabled"
    manager = _managers.last
    if proto.HasField("deferred_file_id"):  # data made on click: what the browser's request to the server gets
        url = manager.execute_deferred(proto.deferred_file_id)
    else:
        url = proto.url
    stored = manager.read_file(url.rsplit("/", 1)[-1])
    assert stored is not None, f"{key!r}: the server holds no file at {url}"
    return stored.filename or "", stored.content
