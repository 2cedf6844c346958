"""The embedded queue: turns as asyncio tasks, at most `concurrency` at once."""

from __future__ import annotations

import asyncio

from tests import scripts
from tests.models import GatedModel
from tests.waiting import eventually
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store, new_token


async def test_concurrency_is_bounded_and_every_turn_runs(store: Store) -> None:
    model = GatedModel([scripts.answer("one"), scripts.answer("two")])
    queue = LocalQueue(TurnJob(store, model), concurrency=1)
    turn_ids = []
    for text in ("first", "second"):
        conversation_id = await store.create_conversation(new_token()[1])
        turn_ids.append((await store.create_turn(conversation_id, text)).turn_id)
        await queue.enqueue(turn_ids[-1])
    await asyncio.wait_for(model.started.wait(), 10)
    assert await store.queued() == [turn_ids[1]], "the second turn waits for a slot"
    model.gate.set()

    async def second_call() -> bool:
        return model.calls == 2

    await eventually(second_call, "the second turn's call, once the first turn is done")
    model.gate.set()
    await asyncio.wait_for(queue.join(), 10)
    for turn_id in turn_ids:
        state = await store.state_after(turn_id, 0)
        assert state is not None
        assert state["status"] == "finished"
