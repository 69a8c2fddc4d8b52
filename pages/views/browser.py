"""This browser's identity and the runs store it reaches: the signed id in a cookie, never in the URL.

A browser is known by an id the server issues and signs (loop/files/browser_id.py), kept
in the cookie `loopscope_browser`, which a few lines of our own JavaScript set
(`_draw_cookie`; Streamlit reads cookies with st.context.cookies but cannot send a
Set-Cookie header). Saved runs (runs.py) and the server key's spending
(settings.py's `lent_key`) are both counted under it, so both pages' views import
it from here.

A browser without the cookie gets a new id, at most `new_browsers_a_minute()` a minute for one address
(loop/classroom/limits.py): each id can follow a class and answer its questions, so a script opening connection
after connection must not get one each time.
"""

from __future__ import annotations

import streamlit as st

from loop.classroom.limits import NEW_BROWSERS_LIMIT, client_address, new_browsers_a_minute
from loop.files import browser_id
from loop.files.runs import RunsStore, StoreError, default_store
from loop.text.catalogs import N_

from .i18n import t

COOKIE = "loopscope_browser"
COOKIE_DAYS = 400  # the longest a browser keeps a cookie (Chrome's limit)
LEGACY = "session"  # the query parameter older versions kept the browser's id in
BROWSER = "browser-owner"  # session_state: (owner key or None, the cookie still to set or None)
REFUSED = "browser-refused"  # session_state: why this browser was given no id yet (too many new ones), or absent
TOO_MANY_NEW = N_("Too many new browsers from your network in the last minute (at most {n} a minute): this page "
                  "gets its place in {seconds} s. Reload it then.")

# Sets the cookie the page was given, in this browser: our own few lines, no package (see docs/security.md).
_set_cookie = st.components.v2.component("loopscope_browser_cookie", js="""
export default function ({ data }) {
  if (data && data.cookie) {
    document.cookie = data.cookie + (window.location.protocol === "https:" ? "; Secure" : "");
  }
}
""")


def store() -> RunsStore:
    """The runs store. Nothing is kept between calls: other processes may write it (replicas)."""
    return default_store()


def browser_session() -> None:
    """On every page, from app.py: take `?session=` out of the URL (it grants nothing), and hand a new browser its id."""
    if LEGACY in st.query_params:
        del st.query_params[LEGACY]
    this_browser()
    cookie = st.session_state[BROWSER][1] if BROWSER in st.session_state else None
    if cookie is not None:
        _draw_cookie(cookie)


def address() -> str:
    """The address this browser's requests count under: the connection's, or the one the class's balancer says it
    forwards for (loop/classroom/limits.py `client_address`)."""
    return client_address(st.context.ip_address, st.context.headers.get_all("X-Forwarded-For"))


def refused_id() -> str | None:
    """Why this browser has no id yet (too many new browsers from its address), in the page's language, or None."""
    return st.session_state.get(REFUSED)


def this_browser() -> str | None:
    """This browser's owner key in the runs store, or None when the store cannot be opened.

    The id comes from the browser's cookie when the server signed it; otherwise a
    new one is issued, which `browser_session` hands to the browser.
    """
    s = st.session_state
    if BROWSER not in s:
        try:
            key = store().secret()
        except (StoreError, OSError) as exc:
            s[BROWSER] = (None, None)
            s["saved-runs-error"] = t("Saved runs are not available on this server: {error}", error=exc)
            return None
        token = browser_id.verify(key, st.context.cookies.get(COOKIE))
        cookie = None
        if token is None:  # a first visit, cleared site data, or an id the server did not sign
            wait = NEW_BROWSERS_LIMIT.take(address())
            if wait > 0:  # asked again at the next run: no id is kept as refused
                s[REFUSED] = t(TOO_MANY_NEW, n=new_browsers_a_minute(), seconds=max(1, round(wait)))
                return None
            cookie = browser_id.issue(key)
            token = browser_id.verify(key, cookie)
        s.pop(REFUSED, None)
        s[BROWSER] = (browser_id.owner(token), cookie)
    return s[BROWSER][0]


def _draw_cookie(value: str) -> None:
    """Hand the browser its id: drawn on every run of a session that came without one (the same element each time)."""
    st.html("<style>.st-key-browser-cookie { display: none; }</style>")  # no room taken; its script still runs
    _set_cookie(key="browser-cookie", height=0, data={
        "cookie": f"{COOKIE}={value}; Path=/; Max-Age={COOKIE_DAYS * 86400}; SameSite=Lax"})
