"""The PostgreSQL store's one listening connection: cancels from other processes, as they happen.

`request_cancel` sets the turn's flag and, in the same statement (so in the
same transaction), sends `NOTIFY turnkeeper_cancel, '<turn id>'`. A worker
process opens one connection that LISTENs on that channel, the first time one
of its turns waits for a cancel, and keeps it until the store closes; each
notification wakes that turn's waiters in `Cancellations`. One connection per
process, whatever the number of running turns, and no query while nothing is
cancelled, where a poll of the flag would cost a query per running call every
fraction of a second. A notification sent while the connection is down is
lost, so after every (re)connection all waiters read their flag again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from .cancellations import Cancellations

logger = logging.getLogger("turnkeeper.store")

CHANNEL = "turnkeeper_cancel"
RECONNECT = 1.0
"""Seconds between attempts to reconnect the listening connection."""


class Listener:
    """LISTENs on `CHANNEL` from the first `start()` until `close()`, waking `cancellations`."""

    def __init__(self, url: str, cancellations: Cancellations) -> None:
        self.url = url
        self.cancellations = cancellations
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cancel listener")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except Exception as e:  # the server went away, or refused us: try again
                why = " ".join(str(e).split())
                logger.warning(
                    "listening for cancels failed; reconnecting in %g s: %s", RECONNECT, why
                )
            await asyncio.sleep(RECONNECT)

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            await db.execute(f"LISTEN {CHANNEL}")
            self.cancellations.wake_all()  # anything sent while nobody listened
            async for notify in db.notifies():
                self.cancellations.wake(notify.payload)
