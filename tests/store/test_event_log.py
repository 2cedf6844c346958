"""The event log in both stores (issue 28): numbered per turn with no gaps across its own
writes and the turn's checkpoints, fenced, woken on write, and kept after the turn ends
only for its retention (the sweeper deletes it then)."""

from __future__ import annotations

import asyncio

import pytest
from tests.waiting import eventually

from turnkeeper.outcomes import Outcome, ending
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import FenceLost, Store
from turnkeeper.store.records import Checkpoint, EventType
from turnkeeper.turn.events import ended
from turnkeeper.usage import Usage

DELTA = EventType.TEXT_DELTA


async def claimed(store: Store) -> tuple[str, int]:
    conversation_id = await store.create_conversation("hash")
    turn = await store.create_turn(conversation_id, "hi")
    fence = await store.claim(turn.turn_id, 30.0, "anthropic")
    assert fence is not None
    return turn.turn_id, fence


async def finish(store: Store, turn_id: str, fence: int) -> None:
    start = await store.start(turn_id)
    assert start is not None
    running = start.state.running()
    await store.publish(turn_id, fence, running)
    state = running.ended(ending(Outcome.FINISHED), text="hello", usage=Usage())
    await store.finish(
        turn_id, fence, Checkpoint(turn_id, 1, [], state, Usage(), events=[ended(state)])
    )


async def test_events_are_numbered_on_across_their_own_writes_and_the_turns(store: Store) -> None:
    turn_id, fence = await claimed(store)
    assert await store.append_events(turn_id, fence, [(EventType.TURN_STARTED, {})]) == 1
    batch = [(DELTA, {"delta": "he", "message": "m2"}), (DELTA, {"delta": "llo", "message": "m2"})]
    assert await store.append_events(turn_id, fence, batch) == 3
    await finish(store, turn_id, fence)
    log = await store.events_after(turn_id, 0)
    assert [e.seq for e in log] == [1, 2, 3, 4]
    assert [e.type for e in log] == ["turn.started", "text.delta", "text.delta", "turn.ended"]
    assert log[1].body == {"delta": "he", "message": "m2"}
    assert log[3].body["outcome"] == "finished"
    assert [e.seq for e in await store.events_after(turn_id, 2, limit=1)] == [3]
    assert await store.events_after(turn_id, 4) == []


async def test_a_page_of_events_is_bounded_in_bytes_as_well_as_in_count(store: Store) -> None:
    turn_id, fence = await claimed(store)
    big = [(DELTA, {"delta": "x" * 50_000, "message": "m2"})] * 10
    await store.append_events(turn_id, fence, big)
    page = await store.events_after(turn_id, 0)
    assert [e.seq for e in page] == [1, 2, 3, 4], "192 KiB: the events begun before it"
    assert [e.seq for e in await store.events_after(turn_id, 4, size=1)] == [5], "one at least"
    assert [e.seq for e in await store.events_after(turn_id, 8, size=10**9)] == [9, 10]
    assert len(await store.events_after(turn_id, 0, limit=2, size=10**9)) == 2


async def test_a_write_without_the_turns_fence_is_refused(store: Store) -> None:
    turn_id, fence = await claimed(store)
    with pytest.raises(FenceLost):
        await store.append_events(turn_id, fence + 1, [(EventType.TURN_STARTED, {})])
    assert await store.events_after(turn_id, 0) == []


async def test_a_subscriber_is_woken_by_a_write(store: Store) -> None:
    turn_id, fence = await claimed(store)
    with store.subscribe(turn_id) as woken:
        woken.clear()
        await store.append_events(turn_id, fence, [(EventType.TURN_STARTED, {})])
        async with asyncio.timeout(10):
            await woken.wait()


async def test_events_are_kept_for_their_retention_then_swept(store: Store) -> None:
    over, fence = await claimed(store)
    await store.append_events(over, fence, [(EventType.TURN_STARTED, {})])
    await finish(store, over, fence)
    running, other = await claimed(store)
    await store.append_events(running, other, [(EventType.TURN_STARTED, {})])
    kept = Sweeper(store, event_retention=3600.0)
    await kept.sweep()
    assert len(await store.events_after(over, 0)) == 2, "within its retention"
    gone = Sweeper(store, event_retention=0.0)

    async def swept() -> bool:
        gone.forgot = float("-inf")
        await gone.sweep()
        return await store.events_after(over, 0) == []

    await eventually(swept, "the ended turn's events deleted", bound=10)
    assert len(await store.events_after(running, 0)) == 1, "a turn not ended keeps its events"


async def test_a_turn_finalised_by_fail_retracts_unshown_text_and_ends(store: Store) -> None:
    from turnkeeper.store import held_by
    from turnkeeper.turn.lifecycle import fail

    turn_id, fence = await claimed(store)
    start = await store.start(turn_id)
    assert start is not None
    await store.publish(turn_id, fence, start.state.running())
    delta = [(EventType.TURN_STARTED, {}), (DELTA, {"delta": "half an ans", "message": "m2"})]
    await store.append_events(turn_id, fence, delta)
    end = await fail(store, turn_id, held_by(fence), reporter=lambda report: None)
    assert end is not None
    log = await store.events_after(turn_id, 0)
    assert [e.type for e in log] == ["turn.started", "text.delta", "text.retracted", "turn.ended"]
    assert log[2].body == {"message": "m2", "key": end.key}
    assert log[3].body["outcome"] == "failed"


async def test_a_crashed_turn_queued_again_retracts_what_its_run_streamed(store: Store) -> None:
    from turnkeeper.turn.lifecycle import resume_crashed

    conversation_id = await store.create_conversation("hash")
    turn = await store.create_turn(conversation_id, "hi")
    fence = await store.claim(turn.turn_id, 0.01, "anthropic")
    assert fence is not None
    start = await store.start(turn.turn_id)
    assert start is not None
    await store.publish(turn.turn_id, fence, start.state.running())
    await store.append_events(turn.turn_id, fence, [(DELTA, {"delta": "half", "message": "m2"})])
    queued_again: list[str] = []

    class Queue:
        async def enqueue(self, turn_id: str) -> None:
            queued_again.append(turn_id)

    async def expired() -> bool:
        return turn.turn_id in await store.expired()

    await eventually(expired, "the lease expiring")
    taken = await resume_crashed(store, turn.turn_id, Queue(), 2, reporter=lambda r: None)
    assert taken is None
    assert queued_again == [turn.turn_id]
    log = await store.events_after(turn.turn_id, 0)
    assert [e.type for e in log] == ["text.delta", "text.retracted"]
    assert log[1].body["message"] == "m2"
