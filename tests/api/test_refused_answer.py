"""Nothing of a refused answer is kept (issue 52, item 5): a turn whose answer passes
`max_response` fails `errors.ai_too_large`, and the write that ends it retracts the text
streamed so far and deletes its text deltas, so no table holds any part of it; a reader
that was streaming receives the retraction, and readers resuming by cursor read across
the numbers the deleted deltas leave out. Over real HTTP (uvicorn), on both stores."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from tests.api.test_routes import start_turn
from tests.databases import tables_holding
from tests.sse import live, read_stream
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.errors import ResponseTooLarge
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store
from turnkeeper.wire import Message, Reply, ToolSpec

SECRET = "the-refused-answer"
PIECES = 6


class Refusing(ScriptedProvider):
    """Streams an answer a piece at a time, then, once `refuse` is set, finds it too large."""

    def __init__(self) -> None:
        super().__init__([])
        self.refuse = asyncio.Event()

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        for n in range(PIECES):
            if on_text is not None:
                on_text(f"{SECRET} {n} ")
            await asyncio.sleep(0.06)  # past the 50 ms between writes: a write per piece
        await self.refuse.wait()
        raise ResponseTooLarge("the response passed 4,096 bytes of content: refused")


def deltas(store_events: Sequence[Any]) -> int:
    return sum(1 for e in store_events if e.type == "text.delta")


async def test_a_refused_answer_is_retracted_to_its_reader_and_kept_nowhere(
    store: Store, store_url: str
) -> None:
    model = Refusing()
    queue = LocalQueue(TurnJob(store, model))
    app = create_app(store, queue)
    async with live(app) as base:
        async with httpx.AsyncClient(base_url=base) as client:
            turn_id, auth = await start_turn(client, "say a lot")

        async def streamed() -> bool:
            return deltas(await store.events_after(turn_id, 0)) >= 3

        await eventually(streamed, "the answer's first deltas written")
        reading = asyncio.ensure_future(read_stream(base, turn_id, auth))

        async def admitted() -> bool:
            return bool(app.state.admission.open == 1)

        await eventually(admitted, "the reader's stream open")
        model.refuse.set()
        await asyncio.wait_for(queue.join(), 15)
        live_reader = await reading
        from_start = await read_stream(base, turn_id, auth)
        kept = await store.events_after(turn_id, 0)
        resumed = {
            after: await read_stream(base, turn_id, auth, params={"after": str(after)})
            for after in range(1, kept[-1].seq)
        }
    await queue.close()

    assert "text.delta" in live_reader.types, "the reader saw the answer stream"
    assert live_reader.types[-2:] == ["text.retracted", "turn.ended"]
    assert live_reader.events[-2]["data"]["key"] == "errors.ai_too_large"
    assert live_reader.events[-1]["data"]["outcome"] == "failed"

    assert [e.type.value for e in kept] == ["turn.started", "text.retracted", "turn.ended"]
    assert kept[1].seq > 2, "the deleted deltas' numbers are skipped, never reused"
    assert from_start.types == ["turn.started", "text.retracted", "turn.ended"]
    assert tables_holding(store_url, SECRET) == [], "no part of the refused answer is kept"

    for after, sse in resumed.items():  # a cursor in the gap reads on from the next event
        assert sse.ended
        assert sse.ids == [e.seq for e in kept if e.seq > after], after
