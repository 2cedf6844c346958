"""Queuing a taken-over turn again (a crashed turn that resumes): one transaction under
the fence, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

from typing import Any

import pytest
from tests.store.test_contract import claimed_turn, running

from turnkeeper.store import FenceLost, Store, held_by
from turnkeeper.store.records import Recovery, ResumeRecord

QUESTION = {"id": "m1", "role": "user", "text": "hi"}


async def taken_over(store: Store) -> tuple[str, Recovery]:
    """A running turn with a published state, taken over from its holder."""
    _, turn_id, fence = await claimed_turn(store)
    await store.publish(turn_id, fence, running(2, QUESTION))
    taken = await store.take_over(turn_id, held_by(fence))
    assert taken is not None
    return turn_id, taken


async def status_and_version(store: Store, turn_id: str) -> tuple[Any, Any]:
    state = await store.state_after(turn_id, 0)
    assert state is not None
    return state["status"], state["version"]


async def test_a_requeue_under_the_fence_queues_the_turn_with_its_record(store: Store) -> None:
    turn_id, taken = await taken_over(store)
    record = ResumeRecord(asked=True, resumes=1, crashed=True)
    await store.requeue(turn_id, taken.fence, record, taken.state.requeued())
    assert await status_and_version(store, turn_id) == ("queued", taken.version + 1)
    assert await store.resume_record(turn_id) == record
    assert turn_id in await store.queued()


async def test_a_stale_fence_changes_neither_the_status_nor_the_resume_record(
    store: Store,
) -> None:
    turn_id, taken = await taken_over(store)
    again = await store.take_over(turn_id, held_by(taken.fence))  # the fence moves on
    assert again is not None
    before = await status_and_version(store, turn_id)
    with pytest.raises(FenceLost):
        await store.requeue(turn_id, taken.fence, ResumeRecord(resumes=1), taken.state.requeued())
    assert await status_and_version(store, turn_id) == before == ("running", 2)
    assert await store.resume_record(turn_id) is None
    assert turn_id not in await store.queued()


class Unstorable(ResumeRecord):
    """A resume record that fails as it is written."""

    def to_json(self) -> dict[str, Any]:
        raise ValueError("this record cannot be stored")


async def test_a_requeue_that_fails_part_way_writes_nothing(store: Store) -> None:
    turn_id, taken = await taken_over(store)
    with pytest.raises(ValueError, match="cannot be stored"):
        await store.requeue(turn_id, taken.fence, Unstorable(), taken.state.requeued())
    assert await status_and_version(store, turn_id) == ("running", 2)
    assert await store.resume_record(turn_id) is None
    assert turn_id not in await store.queued()
