"""`GET /api/turns/{turn_id}/events` over real HTTP (uvicorn) on both stores (issue 28):
the SSE framing, the events of each kind of turn with the answer equal to the joined
deltas, resuming by Last-Event-ID or ?after with no gap and no duplicate, a malformed
cursor, ownership, replay of a turn that is over, the keep-alive, a reader that stops
reading, and shutdown."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from tests import scripts
from tests.api.test_routes import HeldQueue, start_turn
from tests.sse import Sse, live, read_stream
from tests.streaming import StreamingScript
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.cards import Card
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store
from turnkeeper.store.records import EventType
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.resume import Resuming
from turnkeeper.wire import ToolSpec

SCRIPT = [
    scripts.asks(scripts.tool_use("lookup", {"order": 7}, id="toolu_look"), say="Looking it up."),
    scripts.asks(scripts.tool_use("delete_file", {"path": "a"}, id="toolu_del")),
    scripts.answer("Order 7 shipped, and the file is gone."),
]


def tools() -> FunctionToolset:
    return FunctionToolset(
        [
            Tool(ToolSpec("lookup", "Look up."), lambda a: Card("Order 7", [("status", "ok")])),
            Tool(ToolSpec("delete_file", "Delete."), lambda a: "deleted", needs_approval=True),
        ]
    )


class Served:
    def __init__(self, base: str, app: Any, queue: LocalQueue) -> None:
        self.base, self.app, self.queue = base, app, queue

    async def state(self, turn_id: str, auth: dict[str, str]) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.base) as client:
            body: dict[str, Any] = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()
        return body

    async def ask(self, text: str = "where is order 7?") -> tuple[str, dict[str, str]]:
        async with httpx.AsyncClient(base_url=self.base) as client:
            return await start_turn(client, text)

    async def decide(self, turn_id: str, auth: dict[str, str], use: str) -> None:
        async with httpx.AsyncClient(base_url=self.base) as client:
            r = await client.post(
                f"/api/turns/{turn_id}/approvals",
                json={"tool_use_id": use, "approved": True},
                headers=auth,
            )
        assert r.status_code == 202


@pytest.fixture
async def served(store: Store) -> AsyncIterator[Served]:
    provider = StreamingScript(SCRIPT, pieces=4, gap=0.02)
    job = TurnJob(
        store,
        provider,
        tools(),
        activities={"lookup": "activity.lookup"},
        resuming=Resuming(needs_approval=frozenset({"delete_file"})),
    )
    queue = LocalQueue(job)
    app = create_app(store, queue)
    async with live(app) as base:
        yield Served(base, app, queue)
    await queue.close()


def joined(sse: Sse, message: str) -> str:
    return "".join(
        e["data"]["delta"]
        for e in sse.events
        if e["event"] == "text.delta" and e["data"]["message"] == message
    )


async def test_a_turn_streams_every_event_framed_and_resumes_after_its_wait(
    served: Served,
) -> None:
    turn_id, auth = await served.ask()
    first = await read_stream(served.base, turn_id, auth)
    assert (first.status, first.content_type.split(";")[0]) == (200, "text/event-stream")
    assert first.ended, "a run that waits ends its stream after turn.waiting"
    assert first.ids == list(range(1, len(first.events) + 1))
    assert first.types[0] == "turn.started"
    assert first.types[-2:] == ["approval.requested", "turn.waiting"]
    for kind in ("text.delta", "activity", "tool.started", "tool.ended", "card"):
        assert kind in first.types, kind
    waiting = await served.state(turn_id, auth)
    said = next(m for m in waiting["messages"] if m["text"] == "Looking it up.")
    assert joined(first, said["id"]) == "Looking it up."
    await served.decide(turn_id, auth, "toolu_del")
    last = str(first.ids[-1])
    rest = await read_stream(served.base, turn_id, auth, headers={"last-event-id": last})
    assert rest.ended
    assert rest.ids == list(range(first.ids[-1] + 1, first.ids[-1] + 1 + len(rest.events)))
    assert rest.types[0] == "turn.started", "a resumed run starts again, numbered on"
    assert rest.types[-1] == "turn.ended"
    assert rest.events[-1]["data"]["outcome"] == "finished"
    final = await served.state(turn_id, auth)
    answer = final["messages"][-1]
    assert answer["text"] == "Order 7 shipped, and the file is gone."
    assert joined(rest, answer["id"]) == answer["text"], "the answer is the joined deltas"


async def finished(served: Served) -> tuple[str, dict[str, str], Sse]:
    """A turn run to its end (approved at its wait), and its whole log as replayed."""
    turn_id, auth = await served.ask()
    await read_stream(served.base, turn_id, auth)
    await served.decide(turn_id, auth, "toolu_del")

    async def done() -> bool:
        return bool((await served.state(turn_id, auth))["done"])

    await eventually(done, "the turn finishing")
    first = await read_stream(served.base, turn_id, auth)
    rest = await read_stream(
        served.base, turn_id, auth, headers={"last-event-id": str(first.ids[-1])}
    )
    whole = Sse(200, "", first.events + rest.events, [], True)
    return turn_id, auth, whole


async def test_resuming_by_cursor_has_no_gap_and_no_duplicate(served: Served) -> None:
    turn_id, auth, whole = await finished(served)
    ids = whole.ids
    assert ids == list(range(1, len(ids) + 1))
    cut = ids[len(ids) // 2]
    by_header = await read_stream(served.base, turn_id, auth, headers={"last-event-id": str(cut)})
    by_query = await read_stream(served.base, turn_id, auth, params={"after": str(cut)})
    past = [e for e in whole.events if int(e["id"]) > cut]
    past_waiting = [e for e in past[: len(by_header.events)]]
    assert by_header.events == past_waiting
    assert by_query.events == by_header.events
    # A reader that stopped after 3 events and came back with its cursor.
    three = await read_stream(served.base, turn_id, auth, events=3)
    again = await read_stream(served.base, turn_id, auth, headers={"last-event-id": "3"})
    assert [*three.ids, *again.ids] == list(range(1, again.ids[-1] + 1))


async def test_a_turn_that_is_over_replays_and_ends_after_turn_ended(served: Served) -> None:
    turn_id, auth, whole = await finished(served)
    last_run = str(whole.ids[whole.types.index("turn.waiting")])
    replay = await read_stream(served.base, turn_id, auth, headers={"last-event-id": last_run})
    assert replay.ended
    assert replay.types[-1] == "turn.ended"
    past_the_end = await read_stream(served.base, turn_id, auth, params={"after": "999"})
    assert past_the_end.ended
    assert past_the_end.events == []


@pytest.mark.parametrize(
    ("headers", "params"),
    [({"last-event-id": "abc"}, None), ({"last-event-id": "-1"}, None), (None, {"after": "x"})],
)
async def test_a_malformed_cursor_is_400(
    served: Served, headers: dict[str, str] | None, params: dict[str, str] | None
) -> None:
    turn_id, auth = await served.ask()
    sse = await read_stream(served.base, turn_id, auth, headers=headers, params=params)
    assert sse.status == 400
    assert "cursor" in sse.events[0]["error"]


async def test_another_conversations_token_or_an_unknown_turn_is_404(served: Served) -> None:
    turn_id, _ = await served.ask()
    _, other = await served.ask("mine")
    assert (await read_stream(served.base, turn_id, other)).status == 404
    assert (await read_stream(served.base, "t_unknown", other)).status == 404
    assert (await read_stream(served.base, turn_id, {})).status == 404


async def test_without_a_signed_in_user_the_stream_is_401(store: Store) -> None:
    def nobody(request: Request) -> str | None:
        return None

    app = create_app(store, HeldQueue(), authenticate=nobody)
    async with live(app) as base:
        sse = await read_stream(base, "t_any", {})
    assert sse.status == 401


@asynccontextmanager
async def held_stream(store: Store) -> AsyncIterator[tuple[str, Any, str, dict[str, str]]]:
    queue = HeldQueue()
    app = create_app(store, queue)
    app.state.streams.keep_alive = 0.2
    async with live(app) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            turn_id, auth = await start_turn(client)
        yield base, app, turn_id, auth


async def test_an_idle_stream_sends_a_keep_alive_comment(store: Store) -> None:
    async with held_stream(store) as (base, _, turn_id, auth):
        sse = await read_stream(base, turn_id, auth, comments=2, bound=10)
        assert sse.events == [], "a queued turn has written nothing yet"
        assert len(sse.comments) == 2


async def test_shutdown_ends_each_open_stream_cleanly(store: Store) -> None:
    async with held_stream(store) as (base, app, turn_id, auth):
        reading = asyncio.create_task(read_stream(base, turn_id, auth, bound=10))

        async def open_() -> bool:
            return bool(app.state.streams.open == 1)

        await eventually(open_, "the stream open")
        app.state.streams.close()
        sse = await reading
        assert sse.ended, "the stream ended, the response complete"
        assert app.state.streams.open == 0


async def test_a_reader_that_stops_reading_is_cut_off_and_resumes_by_cursor(store: Store) -> None:
    queue = HeldQueue()
    app = create_app(store, queue)
    app.state.streams.send_timeout = 0.5
    app.state.streams.buffer = 100
    big = "x" * 8000
    async with live(app) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            turn_id, auth = await start_turn(client)
        fence = await store.claim(turn_id, 30.0, "anthropic")
        assert fence is not None
        for _ in range(20):
            batch = [(EventType.TEXT_DELTA, {"delta": big, "message": "m2"})] * 100
            await store.append_events(turn_id, fence, batch)
        head = (
            f"GET /api/turns/{turn_id}/events HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: {auth['authorization']}\r\n\r\n"
        ).encode()
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", int(base.rsplit(":", 1)[1])))
            s.sendall(head)

            async def cut_off() -> bool:
                return bool(app.state.streams.open == 0)

            async def opened() -> bool:
                return bool(app.state.streams.open == 1)

            await eventually(opened, "the stream open")
            await eventually(cut_off, "the stream of a reader that stopped reading ending")
            s.settimeout(10)
            received = b""
            while chunk := await asyncio.to_thread(s.recv, 1 << 20):
                received += chunk
        ids = [int(line[4:]) for line in received.split(b"\r\n") if line.startswith(b"id: ")]
        assert ids == list(range(1, len(ids) + 1))
        assert 0 < len(ids) < 2000, "the stream ended before the reader had it all"
        rest = await read_stream(
            base, turn_id, auth, headers={"last-event-id": str(ids[-1])}, events=5
        )
        assert rest.ids == list(range(ids[-1] + 1, ids[-1] + 6))


async def test_a_stop_while_waiting_ends_the_log_with_turn_ended(served: Served) -> None:
    turn_id, auth = await served.ask()
    first = await read_stream(served.base, turn_id, auth)
    assert first.types[-1] == "turn.waiting"
    async with httpx.AsyncClient(base_url=served.base) as client:
        stopped = await client.post(f"/api/turns/{turn_id}/cancel", headers=auth)
    assert stopped.status_code == 202
    rest = await read_stream(
        served.base, turn_id, auth, headers={"last-event-id": str(first.ids[-1])}
    )
    assert rest.types == ["turn.ended"]
    assert rest.events[0]["data"]["outcome"] == "stopped"
    assert rest.ids == [first.ids[-1] + 1]


async def test_a_real_streaming_provider_fills_the_log_delta_by_delta(store: Store) -> None:
    """The Anthropic adapter, streaming from the fake Messages server with gaps, hands each
    piece to the loop's emitter (`on_text`): an SSE reader gets several `text.delta`s before
    `turn.ended`, and the answer shown is their join."""
    from tests.fake_model import FakeModelServer
    from turnkeeper.providers.anthropic import AnthropicProvider

    answer = "Order 7 shipped on Monday, and it should arrive by Thursday at the latest."
    with FakeModelServer([scripts.answer(answer)], gap=0.08) as model:
        provider = AnthropicProvider(api_key="k", base_url=model.url, max_retries=0)
        queue = LocalQueue(TurnJob(store, provider))
        app = create_app(store, queue)
        try:
            async with live(app) as base, httpx.AsyncClient(base_url=base) as client:
                turn_id, auth = await start_turn(client, "where is order 7?")
                sse = await read_stream(base, turn_id, auth)
                state = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()
        finally:
            await queue.close()
        assert model.streamed == 1, "the adapter asked for a stream"
    assert sse.ended
    assert (sse.types[0], sse.types[-1]) == ("turn.started", "turn.ended")
    deltas = [e for e in sse.events if e["event"] == "text.delta"]
    assert len(deltas) >= 3, sse.types
    assert sse.types.index("turn.ended") > max(sse.events.index(e) for e in deltas)
    shown = next(m for m in state["messages"] if m["role"] == "bot" and m["text"])
    assert (state["done"], state["status"]) == (True, "finished")
    assert {e["data"]["message"] for e in deltas} == {shown["id"]}
    assert "".join(e["data"]["delta"] for e in deltas) == shown["text"] == answer
