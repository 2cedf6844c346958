"""Cancellations: the running turns of this process waiting to hear of their cancel.

The cancel flag in the store is the record; this is the signal that makes a
Stop prompt. A turn's job waits here while its model call runs; whoever learns
of a cancel wakes the turn's waiters, and each waiter reads the flag again, so
a wake-up is only ever a reason to look (a spurious one costs one read). The
store's own `request_cancel` wakes them at once (embedded: the API and the
turn share the store); the PostgreSQL store also wakes them when another
process's cancel arrives by NOTIFY, and wakes them all after its listening
connection comes back, in case a notification was missed meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class Cancellations:
    """Turn ids to the events of the waiters on their cancel, in one process."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def wake(self, turn_id: str) -> None:
        """Make the turn's waiters read its cancel flag again."""
        for event in self._waiting.get(turn_id, ()):
            event.set()

    def wake_all(self) -> None:
        for turn_id in list(self._waiting):
            self.wake(turn_id)

    async def wait(self, turn_id: str, requested: Callable[[], Awaitable[bool]]) -> None:
        """Return once `requested()` says the turn's cancel was requested: at once if it
        already was, else at the first wake-up after which it says so."""
        event = asyncio.Event()
        waiters = self._waiting.setdefault(turn_id, set())
        waiters.add(event)
        try:
            while not await requested():
                await event.wait()
                event.clear()
        finally:
            waiters.discard(event)
            if not waiters and self._waiting.get(turn_id) is waiters:
                del self._waiting[turn_id]
