"""The fake model tells a client that hung up from one still waiting for its answer, and a
hung-up request takes nothing from the script; a streaming request gets the event stream of
the same scripted body."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import struct
from collections.abc import Iterator

import httpx
import pytest

from tests import scripts
from tests.fake_model import FakeModelServer, hung_up
from tests.waiting import eventually
from turnkeeper.providers import sse
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.messages_stream import MessageFold


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


async def test_a_request_whose_client_hung_up_takes_nothing_from_the_script() -> None:
    """As a call a Stop aborted, read late: sent whole, then closed, before the server read it."""
    answer = scripts.answer("for the call still waiting")
    model = FakeModelServer([answer])
    gone = {"messages": [{"role": "user", "content": "stopped"}]}
    body = json.dumps(gone).encode()
    head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    address = httpx.URL(model.url)
    with socket.create_connection((address.host, address.port)) as hung:
        hung.sendall(head.encode() + body)  # queued until the server starts accepting
    with model:

        async def read() -> bool:
            return bool(model.abandoned or model.requests)

        await eventually(read, "the fake model reading the hung-up request")
        async with httpx.AsyncClient() as waiting:
            live = {"messages": [{"role": "user", "content": "waiting"}]}
            answered = await waiting.post(f"{model.url}/v1/messages", json=live)
    assert answered.json() == answer
    assert model.abandoned == [gone]
    assert model.requests == [live]


async def test_a_streaming_request_gets_the_event_stream_of_the_same_scripted_body() -> None:
    answer = scripts.answer("streamed in words", usage=scripts.usage(7, 3))
    with FakeModelServer([answer, answer]) as model:
        async with httpx.AsyncClient() as client:
            plain = await client.post(f"{model.url}/v1/messages", json={"messages": []})
            streamed = await client.post(
                f"{model.url}/v1/messages", json={"messages": [], "stream": True}
            )
    assert plain.json() == answer
    assert streamed.headers["content-type"] == "text/event-stream"
    fold = MessageFold()
    async for data in sse.data(streamed.aiter_lines()):
        fold.feed(data)
    assert json.dumps(fold.body()) == json.dumps(answer)
    assert model.streamed == 1


async def test_the_sdk_adapter_streams_from_it_piece_by_piece_with_a_gap() -> None:
    """The Anthropic adapter streams by default: its first piece of text arrives while the
    fake is still sending the rest, `gap` seconds between events."""
    answer = scripts.answer("one two three four five six")
    gap = 0.05
    with FakeModelServer([answer], gap=gap) as model:
        adapter = AnthropicProvider(api_key="k", base_url=model.url, max_retries=0)
        loop = asyncio.get_running_loop()
        arrived: list[float] = []
        try:
            reply = await adapter.complete(
                [{"role": "user", "content": "q"}],
                [],
                10,
                on_text=lambda _: arrived.append(loop.time()),
            )
        finally:
            await adapter.aclose()
        done = loop.time()
    assert reply.text == "one two three four five six"
    assert len(arrived) == 6
    assert done - arrived[0] >= gap * 6 * 0.8, "the rest came after the first piece"
    assert model.streamed == 1
    assert model.requests[0]["stream"] is True
