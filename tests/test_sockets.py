"""A click's answer leaves the server at once: the server's connections have Nagle's algorithm off.

Streamlit makes its listening socket with protocol 0, where asyncio leaves Nagle on: a message written while the
one before is unacknowledged then waits for the browser's delayed acknowledgement (40 ms a click).
"""

import asyncio
import socket
import threading

import pages.views.internals as internals

from tests.apptest import app


def _nodelay(writer: asyncio.StreamWriter) -> int:
    return writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_connections_to_a_socket_made_as_streamlit_makes_it_have_nagle_off_those_open_and_those_to_come(monkeypatch):
    async def main() -> tuple[list[int], int]:
        listening = socket.socket(family=socket.AF_INET)  # as streamlit/web/server/starlette: protocol 0
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        listening.setblocking(False)
        accepted: list[asyncio.StreamWriter] = []
        arrived = asyncio.Event()

        def on_connection(_reader, writer) -> None:
            accepted.append(writer)
            arrived.set()

        server = await asyncio.start_server(on_connection, sock=listening)
        clients = []
        try:
            clients.append(await asyncio.open_connection(*listening.getsockname()))  # open before: set too
            await arrived.wait()
            arrived.clear()
            monkeypatch.setattr(internals, "_no_delay_done", threading.Event())  # as in a server's first run
            n = internals.no_delay()
            assert internals.no_delay() == 0  # once a process
            clients.append(await asyncio.open_connection(*listening.getsockname()))  # one to come: inherits it
            await arrived.wait()
            return [_nodelay(writer) for writer in accepted], n
        finally:
            for _, writer in clients:
                writer.close()
            for writer in accepted:
                writer.close()
            server.close()
            await server.wait_closed()

    seen, n = asyncio.run(main())
    assert seen == [1, 1]
    assert n >= 2  # the listening socket and the connection already open (and the test's own, if any)


def test_the_app_turns_nagle_off_on_its_first_run(monkeypatch):
    done = threading.Event()
    monkeypatch.setattr(internals, "_no_delay_done", done)
    at = app()
    assert not at.exception
    assert done.is_set()
