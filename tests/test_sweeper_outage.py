"""The sweeper after an outage of the store: live workers get one lease to renew theirs.

During an outage nobody can renew a lease, so every lease may have expired by the
time the store answers again. The sweeper then finalises nothing for one lease:
a worker that lived through the outage renews its turn, and only the turns of
workers that are gone are finalised.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, cast

from tests.waiting import eventually
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token

HOLD = 1.0
"""The lease the sweeper gives live workers once the store answers again (seconds)."""


class Unreachable:
    """The store, or while `down` an error for every call, as a store out of reach."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.down = False
        self.refused = 0
        self.served = 0

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.store, name)

        async def called(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.refused += 1
                raise ConnectionRefusedError("the database cannot be reached")
            self.served += 1
            return await method(*args, **kwargs)

        return called


async def claimed(store: Store) -> tuple[str, int]:
    conversation_id = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation_id, "still there?")).turn_id
    fence = await store.claim(turn_id, 0.05, "anthropic")
    assert fence is not None
    return turn_id, fence


async def test_after_an_outage_the_sweeper_gives_live_workers_a_lease_to_renew(
    store: Store,
) -> None:
    live, fence = await claimed(store)
    dead, _ = await claimed(store)

    async def both_expired() -> bool:
        return set(await store.expired()) == {live, dead}

    await eventually(both_expired, "both leases expired")
    reach = Unreachable(store)
    reach.down = True
    sweeper = Sweeper(cast(Store, reach), interval=0.05, lease=HOLD)
    sweeping = asyncio.create_task(sweeper.run())
    try:

        async def tried() -> bool:
            return reach.refused > 0

        await eventually(tried, "a sweep during the outage")
        reach.down = False

        async def answered() -> bool:
            return reach.served > 0

        await eventually(answered, "the sweeper reaching the store again")
        assert await store.renew(live, fence, 30.0), "the live worker's turn was finalised"

        async def dead_finalised() -> bool:
            state = await store.state_after(dead, 0)
            return state is not None and state["done"]

        await eventually(dead_finalised, "the dead worker's turn finalised after the hold")
    finally:
        sweeping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeping
    live_state = await store.state_after(live, 0)
    assert live_state is not None
    assert live_state["done"] is False, live_state
    assert await store.renew(live, fence, 30.0)
