"""Both SDK adapters stream by default, through the official SDKs over a real socket.

The wire server answers a streaming request with the event stream of the very body it
would have sent whole (tests/streams.py), so a streamed and a plain call against the same
answer are held to the same `Reply`. The answers are recorded real bodies
(tests/recordings) unless a test says CONSTRUCTED.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tests.streams import sse_events
from tests.waiting import eventually
from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.providers.openai import OpenAIProvider
from turnkeeper.wire import Reply

from .conftest import Adapters
from .test_chat_stream import without_index
from .wire_server import Canned, WireServer, real_rows, recording, replayed

Adapter = AnthropicProvider | OpenAIProvider
Make = Callable[..., Adapter]

ANTHROPIC_TEXT = "vercel__ai/anthropic__anthropic-text.json"
OPENAI_TEXT = "vercel__ai/openai__chat__openai-text.json"
QUESTION = [{"role": "user", "content": "q"}]


@pytest.fixture(params=["anthropic", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    """Each test runs on both wire formats."""
    kind: str = request.param
    return kind


@pytest.fixture
def make(kind: str, adapters: Adapters) -> Make:
    """Builds adapters of the wire format `kind`, pointed at the wire server."""
    if kind == "anthropic":
        return lambda **options: adapters(AnthropicProvider, **options)
    return lambda **options: adapters(OpenAIProvider, path="/v1", **options)


def text_answer(kind: str) -> str:
    """A real answer with some words to stream, in the wire format `kind`."""
    return ANTHROPIC_TEXT if kind == "anthropic" else OPENAI_TEXT


def as_reply(reply: Reply) -> dict[str, Any]:
    return {
        "stop": reply.stop,
        "raw_stop": reply.raw_stop,
        "message": reply.message,
        "text": reply.text,
        "tool_uses": reply.tool_uses,
        "steps": reply.steps,
        "usage": reply.usage,
        "raw": reply.raw,
        "keep": reply.keep,
    }


# ---- the same reply, streamed or not -------------------------------------------------


async def same_reply(server: WireServer, make: Make, name: str) -> None:
    server.add(replayed(name), replayed(name))
    plain = await make(stream=False).complete(QUESTION, [], 10)
    pieces: list[str] = []
    streamed = await make().complete(QUESTION, [], 10, on_text=pieces.append)
    assert server.streams == [1], "only the second call was answered with an event stream"
    expected = as_reply(plain)
    if "choices" in plain.raw:  # a tool call's index frames the stream (test_chat_stream.py)
        expected["raw"] = without_index(plain.raw)
        expected["message"] = expected["raw"]["choices"][0]["message"]
    assert as_reply(streamed) == expected, name
    assert json.dumps(streamed.message) == json.dumps(expected["message"]), name
    assert "".join(pieces) == streamed.text, name


@pytest.mark.parametrize("name", real_rows("anthropic", "messages", streaming=False))
async def test_an_anthropic_answer_streamed_is_the_reply_a_plain_call_gives(
    server: WireServer, adapters: Adapters, name: str
) -> None:
    await same_reply(server, lambda **o: adapters(AnthropicProvider, **o), name)


CHAT_BODIES = [
    "vercel__ai/openai__chat__openai-text.json",
    "vercel__ai/xai__xai-tool-call.json",
    "vercel__ai/deepseek__chat__deepseek-tool-call.json",
    "vercel__ai/deepseek__chat__deepseek-text.json",
    "vercel__ai/mistral__mistral-tool-call.json",
]


@pytest.mark.parametrize("name", CHAT_BODIES)
async def test_an_openai_compatible_answer_streamed_is_the_reply_a_plain_call_gives(
    server: WireServer, adapters: Adapters, name: str
) -> None:
    await same_reply(server, lambda **o: adapters(OpenAIProvider, path="/v1", **o), name)


# ---- the request -------------------------------------------------------------------------


async def test_a_streamed_request_says_so_and_a_plain_one_says_nothing(
    server: WireServer, make: Make, kind: str
) -> None:
    name = text_answer(kind)
    server.add(replayed(name), replayed(name))
    await make().complete(QUESTION, [], 10)
    await make(stream=False).complete(QUESTION, [], 10)
    streamed, plain = (r.body for r in server.requests)
    assert streamed["stream"] is True
    if kind == "anthropic":
        assert "stream_options" not in streamed
    else:
        assert streamed["stream_options"] == {"include_usage": True}
    assert "stream" not in plain
    assert "stream_options" not in plain
    assert {k: v for k, v in streamed.items() if not k.startswith("stream")} == plain
    assert make().describe()["stream"] is True
    assert make(stream=False).describe()["stream"] is False


# ---- the text as it arrives --------------------------------------------------------------


async def test_the_first_piece_of_text_arrives_while_the_rest_is_held_back(
    server: WireServer, make: Make, kind: str
) -> None:
    name = text_answer(kind)
    release = threading.Event()
    held = replace(replayed(name), hold_after=3, release=release)  # start, a first delta
    server.add(held)
    pieces: list[str] = []
    released_before: list[bool] = []

    def on_text(piece: str) -> None:
        if not pieces:
            released_before.append(release.is_set())
            release.set()  # the rest of the stream is sent only now
        pieces.append(piece)

    reply = await make().complete(QUESTION, [], 10, on_text=on_text)
    assert released_before == [False], "the first piece came before the server sent the rest"
    assert len(pieces) > 1
    assert "".join(pieces) == reply.text
    assert reply.text.startswith(pieces[0])


async def test_pieces_arrive_as_the_server_sends_them_apart(
    server: WireServer, make: Make, kind: str
) -> None:
    name = text_answer(kind)
    server.add(replace(replayed(name), gap=0.02))
    arrived: list[float] = []
    reply = await make().complete(
        QUESTION, [], 30, on_text=lambda _: arrived.append(time.monotonic())
    )
    assert len(arrived) > 5
    assert arrived[-1] - arrived[0] >= 0.02 * (len(arrived) - 1) * 0.9  # not all at the end
    assert reply.text


# ---- a stream that breaks ------------------------------------------------------------------


@pytest.mark.parametrize("cut_at", [0.25, 0.75])
async def test_a_stream_dropped_midway_is_a_provider_failure_and_not_sent_again(
    server: WireServer, make: Make, kind: str, cut_at: float
) -> None:
    name = text_answer(kind)
    whole = len("".join(sse_events(recording(name)["response"]["body"])))
    server.add(replace(replayed(name), cut_after=int(whole * cut_at)), replayed(name))
    pieces: list[str] = []
    with pytest.raises(ProviderUnavailable) as raised:
        await make(max_retries=2).complete(QUESTION, [], 10, on_text=pieces.append)
    assert len(server.requests) == 1, "a stream that has begun is not sent again"
    assert server.streams == [0]
    assert raised.value.status == 200


def overloaded_midway(kind: str) -> Canned:
    """CONSTRUCTED: an overloaded error after the stream began, in each wire format's shape
    (Anthropic: an `error` event; OpenAI-compatible: a chunk with an `error` object), and
    one more event after it."""
    if kind == "anthropic":
        body = recording(ANTHROPIC_TEXT)["response"]["body"]
        start = {"type": "message_start", "message": {**body, "content": []}}
        error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        events: list[dict[str, Any]] = [start, error, {"type": "ping"}]
        text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    else:
        body = recording(OPENAI_TEXT)["response"]["body"]
        first = {**body, "object": "chat.completion.chunk", "choices": [], "usage": None}
        error = {"error": {"message": "Overloaded", "type": "server_error"}}
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in (first, error, first))
    return Canned(200, text.encode(), {"content-type": "text/event-stream"})


async def test_an_error_in_the_middle_of_a_stream_is_the_error_it_describes(
    server: WireServer, make: Make, kind: str
) -> None:
    server.add(overloaded_midway(kind))
    with pytest.raises(ProviderUnavailable, match="Overloaded") as raised:
        await make().complete(QUESTION, [], 10)
    assert raised.value.status == 200


async def test_a_stream_that_broke_is_closed_at_once_not_read_to_its_end(
    server: WireServer, make: Make, kind: str
) -> None:
    server.add(replace(overloaded_midway(kind), hold_after=2))  # what follows the error: held
    with pytest.raises(ProviderUnavailable, match="Overloaded") as raised:
        await make().complete(QUESTION, [], 10)

    async def hung_up() -> bool:
        return server.hung_up == [0]

    # closed by the call itself, not by the collector once the error (its traceback holds
    # the response) is let go
    await eventually(hung_up, "the server seeing the broken stream's connection closed", bound=5)
    assert raised.value.status == 200


async def test_a_server_that_answers_a_stream_with_one_json_body_is_read_as_a_plain_call(
    server: WireServer, make: Make, kind: str
) -> None:
    """Some gateways ignore `stream`: the body they send whole is the answer."""
    name = text_answer(kind)
    body = recording(name)["response"]["body"]
    server.add(Canned(200, json.dumps(body).encode(), {"content-type": "application/json"}))
    server.add(Canned(200, b"<html>gateway</html>", {"content-type": "text/html"}))
    reply = await make().complete(QUESTION, [], 10)
    assert reply.raw == body
    assert server.requests[0].body["stream"] is True
    with pytest.raises(ProviderFailed, match="not JSON"):
        await make().complete(QUESTION, [], 10)


# ---- Stop --------------------------------------------------------------------------------


async def test_cancelling_a_call_mid_stream_aborts_it_and_closes_the_connection(
    server: WireServer, make: Make, kind: str
) -> None:
    """A Stop cancels the task running the call: the stream in flight ends at once, and the
    server sees the connection closed, not a client that keeps reading."""
    name = text_answer(kind)
    server.add(replace(replayed(name), hold_after=3))  # the rest never comes unasked
    first = asyncio.Event()
    call = asyncio.create_task(make().complete(QUESTION, [], 60, on_text=lambda _: first.set()))
    await asyncio.wait_for(first.wait(), 10)
    started = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 5)
    assert time.monotonic() - started < 1.0

    async def hung_up() -> bool:
        return server.hung_up == [0]

    await eventually(hung_up, "the server seeing the stream's connection closed", bound=5)
