"""The leases a job holds, renewed together by one task instead of one task and timer per turn.

Every `lease / 3` seconds the renewer renews every lease held (the store
batches the renewals into one transaction). A turn registered between two
ticks is renewed at the next one, so no lease waits longer than `lease / 3`.
A renewal that is refused means the turn was taken over: its body is
cancelled and its `lost` event set, exactly as when each turn renewed its
own. The renewer stops when no lease is held and starts again with the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ..store import Store

logger = logging.getLogger("turnkeeper.job")


@dataclass(slots=True)
class _Held:
    fence: int
    body: asyncio.Task[object]
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    failing: int = 0
    """Renewals that failed in a row (a store out of reach): the first is logged."""


class Leases:
    """The turns' leases of one job; `async with leases.held(turn_id, fence) as lost:`."""

    def __init__(self, store: Store, lease: float) -> None:
        self.store = store
        self.lease = lease
        self._held: dict[str, _Held] = {}
        self._renewer: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def held(self, turn_id: str, fence: int) -> AsyncIterator[asyncio.Event]:
        """Renew the lease while the body runs; cancel the body if the lease is lost."""
        body = asyncio.current_task()
        assert body is not None
        held = self._held[turn_id] = _Held(fence, body)
        self._start()
        try:
            yield held.lost
        finally:
            if self._held.get(turn_id) is held:
                del self._held[turn_id]
            if not self._held:
                self._stop()
            if held.lost.is_set():
                body.uncancel()

    def _start(self) -> None:
        running = self._renewer
        loop = asyncio.get_running_loop()
        if running is None or running.done() or running.get_loop() is not loop:
            self._renewer = loop.create_task(self._renew_all(), name="lease renewals")

    def _stop(self) -> None:
        """No lease is held: no task is left sleeping (and nothing pending when the loop closes)."""
        if self._renewer is not None:
            self._renewer.cancel()
            self._renewer = None

    async def _renew_all(self) -> None:
        while self._held:
            await asyncio.sleep(self.lease / 3)
            held = list(self._held.items())
            await asyncio.gather(*(self._renew(turn_id, h) for turn_id, h in held))

    async def _renew(self, turn_id: str, held: _Held) -> None:
        try:
            renewed = await self.store.renew(turn_id, held.fence, self.lease)
        except Exception as e:  # a passing store error: try again next tick
            held.failing += 1
            if held.failing == 1:
                logger.warning("turn %s: lease renewal failed, will retry: %s", turn_id, e)
            return
        if held.failing and renewed:
            logger.info("turn %s: lease renewed after %d failed tries", turn_id, held.failing)
            held.failing = 0
        if renewed or self._held.get(turn_id) is not held:
            return
        logger.warning(
            "turn %s: lease renewal with fence %d refused: the turn was taken over",
            turn_id,
            held.fence,
        )
        del self._held[turn_id]  # renewed no more, and cancelled once
        held.lost.set()
        held.body.cancel()
