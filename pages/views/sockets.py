"""Every answer to a click leaves the server at once: TCP_NODELAY on the server's connections.

Streamlit makes its listening socket itself (`socket.socket(family)`, protocol 0), and asyncio turns Nagle's
algorithm off only for a socket whose protocol says TCP: so each browser's connection kept it on. With Nagle on, a
small message written while the one before is not acknowledged yet waits for that acknowledgement, which a
browser's TCP delays by up to 40 ms: bench/cursor.py measured ~48 ms from a cursor move to its script finished
for ~10 ms of work, with the server idle in between. A connection accepted from a listening socket takes its
options, so setting the option there once covers every browser that connects after; the connections already open
get it too.

Finding the server's sockets takes Streamlit's private parts: internals.py `no_delay`, once a process (app.py).
"""

from __future__ import annotations

import socket


def no_delay(sock) -> bool:
    """Turn Nagle's algorithm off on `sock`, if it is a TCP socket. Whether it was set."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # closed meanwhile
        return False
    return True
