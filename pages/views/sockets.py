"""Every answer to a click leaves the server at once: TCP_NODELAY on the server's connections.

Streamlit makes its listening socket itself (`socket.socket(family)`, protocol 0), and asyncio turns Nagle's
algorithm off only for a socket whose protocol says TCP: so each browser's connection kept it on. With Nagle on, a
small message written while the one before is not acknowledged yet waits for that acknowledgement, which a
browser's TCP delays by up to 40 ms: bench/cursor.py measured ~48 ms from a cursor move to its script finished
for ~10 ms of work, with the server idle in between. A connection accepted from a listening socket takes its
options, so setting the option there once covers every browser that connects after; the connections already open
get it too.
"""

from __future__ import annotations

import gc
import socket
import threading

_done = threading.Event()
_lock = threading.Lock()


def no_delay() -> int:
    """Turn Nagle's algorithm off on this process's TCP sockets that asyncio serves, listening or connected, once
    a process (the first run of the app). Returns how many sockets it set."""
    if _done.is_set():
        return 0
    with _lock:
        if _done.is_set():
            return 0
        n = sum(_set(sock) for sock in _served())
        _done.set()
        return n


def _served():
    """The sockets of asyncio's servers (the listening ones) and transports (the connections), as asyncio keeps
    them: a plain socket object is not tracked by the collector, its server and transport objects are."""
    import asyncio
    import weakref

    for obj in gc.get_objects():
        if type(obj) in weakref.ProxyTypes:  # (isinstance on a dead proxy raises ReferenceError)
            continue
        if isinstance(obj, asyncio.AbstractServer):
            yield from getattr(obj, "sockets", None) or ()
        elif isinstance(obj, asyncio.Transport):
            sock = obj.get_extra_info("socket")
            if sock is not None:
                yield sock


def _set(sock) -> bool:
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # closed meanwhile
        return False
    return True
