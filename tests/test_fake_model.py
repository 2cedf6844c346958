"""The fake model tells a client that hung up from one still waiting for its answer."""

from __future__ import annotations

import select
import socket
import struct
from collections.abc import Iterator

import pytest

from tests.fake_model import hung_up


@pytest.fixture
def connected() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A TCP connection on 127.0.0.1: (the server's end, the client's end)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
        with server, client:
            yield server, client


def test_a_client_waiting_for_its_answer_has_not_hung_up(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    server, _client = connected
    assert not hung_up(server)


def test_bytes_still_to_read_are_not_a_hang_up(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    server, client = connected
    client.sendall(b"more")
    assert not hung_up(server)
    assert server.recv(4) == b"more", "the check leaves what it saw to be read"


def test_a_client_that_closed_its_side_has_hung_up(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    server, client = connected
    client.close()
    select.select([server], [], [], 5)  # the close has arrived (bounded)
    assert hung_up(server)


def test_a_client_that_reset_the_connection_has_hung_up(
    connected: tuple[socket.socket, socket.socket],
) -> None:
    server, client = connected
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()  # a linger of 0 sends RST, as an aborted request may
    select.select([server], [], [], 5)  # the reset has arrived (bounded)
    assert hung_up(server)
