"""Leases: one renewer for every turn a job holds, on both stores."""

from __future__ import annotations

import asyncio

from turnkeeper.service.leases import Leases
from turnkeeper.store import Store, held_by, new_token

LEASE = 0.3


async def claimed(store: Store) -> tuple[str, int]:
    conversation_id = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation_id, "go")).turn_id
    fence = await store.claim(turn_id, LEASE, "messages")
    assert fence is not None
    return turn_id, fence


class Counting:
    """The store, counting renewals per turn."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.renewed: dict[str, int] = {}
        self.changed = asyncio.Event()

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool:
        renewed = await self.store.renew(turn_id, fence, lease)
        self.renewed[turn_id] = self.renewed.get(turn_id, 0) + renewed
        self.changed.set()
        return renewed


async def test_one_task_renews_every_lease_held_and_none_is_left_after(store: Store) -> None:
    counting = Counting(store)
    leases = Leases(counting, LEASE)  # type: ignore[arg-type]  # only renew is called
    turns = [await claimed(store) for _ in range(3)]
    release = asyncio.Event()

    async def body(turn_id: str, fence: int) -> None:
        async with leases.held(turn_id, fence):
            await release.wait()

    bodies = [asyncio.create_task(body(t, f)) for t, f in turns]
    await asyncio.sleep(0)
    renewers = [t for t in asyncio.all_tasks() if t.get_name() == "lease renewals"]
    assert len(renewers) == 1, "one renewer for every lease held"
    async with asyncio.timeout(30 * LEASE):
        while min(counting.renewed.get(t, 0) for t, _ in turns) < 3:
            counting.changed.clear()
            await counting.changed.wait()
    assert await store.expired() == [], "every lease held stays renewed"
    release.set()
    await asyncio.gather(*bodies)
    await asyncio.gather(*renewers, return_exceptions=True)
    assert renewers[0].cancelled(), "no lease held: the renewer is stopped, not left sleeping"


async def test_a_lost_lease_cancels_only_its_own_body(store: Store) -> None:
    leases = Leases(store, LEASE)
    (kept, kept_fence), (taken, taken_fence) = [await claimed(store) for _ in range(2)]
    release = asyncio.Event()
    seen: dict[str, bool] = {}

    async def body(turn_id: str, fence: int) -> None:
        async with leases.held(turn_id, fence) as lost:
            try:
                await release.wait()
            finally:
                seen[turn_id] = lost.is_set()

    running = [asyncio.create_task(body(kept, kept_fence))]
    running.append(asyncio.create_task(body(taken, taken_fence)))
    await asyncio.sleep(0)
    assert await store.take_over(taken, held_by(taken_fence)) is not None
    done, _ = await asyncio.wait(running, timeout=10 * LEASE, return_when=asyncio.FIRST_COMPLETED)
    assert done == {running[1]}, "the taken turn's body was cancelled, the other runs on"
    assert running[1].cancelled()
    release.set()
    await running[0]
    assert seen == {taken: True, kept: False}
