"""The address a class's students open: one they can reach, not the teacher's own.

A teacher who runs Loopscope on the projector's laptop opens http://localhost:8501; a link or QR code to
localhost sends each student to their own machine, where there is no class. So the class's link is, in order:
`LOOPSCOPE_PUBLIC_URL` when it is set (the address students use, e.g. a school's name for the server); the
teacher's address when it is not a loopback one; else this machine's network address with the same port, and a
note that students must be on the same network; and when there is none, the teacher's address with a note that
the link only works on this machine. The path and `?class=CODE` stay the teacher's.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

from loop.text.catalogs import N_, Note

PUBLIC_URL_VARIABLE = "LOOPSCOPE_PUBLIC_URL"
SAME_NETWORK = N_("Students open this link from the same network as this computer ({address}); from elsewhere it "
                  "does not work: set {variable} to the address they use.")
THIS_MACHINE_ONLY = N_("This link only works on this computer: students cannot reach this server from theirs. Serve "
                       "Loopscope on the network, or set {variable} to the address students use.")
FRESH = 30.0  # seconds the machine's addresses are kept: a laptop moved to another network finds its new one


@dataclass(frozen=True)
class ClassLink:
    url: str  # what the QR code and the page show
    note: Note | None  # why students may not reach it, or None


def is_loopback(host: str | None) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine only."""
    host = (host or "").strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def class_link(code: str, page_url: str | None, public_url: str | None = None,
               addresses: Iterable[str] = ()) -> ClassLink:
    """The class's link for a teacher at `page_url`: `public_url` (LOOPSCOPE_PUBLIC_URL) when given; the teacher's
    address when students can reach it; for a loopback one, the first of this machine's `addresses` that others
    can reach, with the page's port, and a note."""
    query = f"?class={code}"
    public = (public_url or "").strip()
    if public:
        if "://" not in public:  # "school.example:8501", as a browser's address bar takes it
            public = f"http://{public}"
        parts = urlsplit(public)
        return ClassLink(f"{urlunsplit((parts.scheme, parts.netloc, parts.path, '', '')).rstrip('/')}/{query}", None)
    base = str(page_url or "").split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if not base:
        return ClassLink(f"/{query}", None)
    parts = urlsplit(base)
    if not is_loopback(parts.hostname):
        return ClassLink(f"{base}/{query}", None)
    variable = PUBLIC_URL_VARIABLE
    reachable = next((a for a in addresses if _reachable(a)), None)
    if reachable is None:
        return ClassLink(f"{base}/{query}", Note(THIS_MACHINE_ONLY, variable=variable))
    host = f"[{reachable}]" if ":" in reachable else reachable
    netloc = f"{host}:{parts.port}" if parts.port else host
    return ClassLink(f"{urlunsplit((parts.scheme, netloc, parts.path, '', ''))}/{query}",
                     Note(SAME_NETWORK, address=reachable, variable=variable))


def _reachable(address: str) -> bool:
    """An address another machine may open: not loopback, link-local (it needs an interface named), nor multicast."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast)


_found: tuple[float, list[str]] | None = None
_found_lock = threading.Lock()


def machine_addresses() -> list[str]:
    """This machine's network addresses, the one its traffic leaves by first; nothing is sent anywhere.

    A UDP socket "connected" to a documentation address (RFC 5737, 3849) only picks the route: its own address is
    the interface's the machine's neighbours reach. Without a route, the addresses its name resolves to.
    """
    global _found
    with _found_lock:
        if _found is not None and 0 <= time.monotonic() - _found[0] < FRESH:
            return list(_found[1])
    found: list[str] = []
    for family, towards in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((towards, 9))
                found.append(s.getsockname()[0])
        except OSError:  # no route of this family
            continue
    if not any(_reachable(a) for a in found):
        try:
            found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_DGRAM)]
        except OSError:
            pass
    found = list(dict.fromkeys(a for a in found if _reachable(a)))
    with _found_lock:
        _found = (time.monotonic(), found)
    return found


def listens_beyond_loopback(server_address: str | None, environ: dict | None = None) -> bool:
    """Whether other machines reach this server: Streamlit's `server.address` is not a loopback one (unset: every
    interface), or its replicas serve a class behind the balancer (which listens on every interface)."""
    from loop.importers.sessions import CLASSROOM_VARIABLE

    environ = os.environ if environ is None else environ
    address = (server_address or "").strip().strip("[]")
    if environ.get(CLASSROOM_VARIABLE) or not address:
        return True
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(address).is_unspecified:  # 0.0.0.0, ::
            return True
    return not is_loopback(address)
