"""The PostgreSQL store's one listening connection: cancels and turns' events from other
processes, as they happen.

`request_cancel` sets the turn's flag and, in the same statement (so in the
same transaction), sends `NOTIFY turnkeeper_cancel, '<turn id>'`. A worker
process opens one connection that LISTENs on that channel, the first time one
of its turns waits for a cancel, and keeps it until the store closes; each
notification wakes that turn's waiters in `Cancellations`. One connection per
process, whatever the number of running turns, and no query while nothing is
cancelled, where a poll of the flag would cost a query per running call every
fraction of a second. A notification sent while the connection is down is
lost, so after every (re)connection all waiters read their flag again. While
the database cannot be reached it tries again with backoff, and the process's
`Outage` logs that once.

The same connection LISTENs on `turnkeeper_events` (events.py): each event
write NOTIFYs `<turn id>:<seq>` in its transaction, and the notification wakes
that turn's subscribers in `EventHub` (the streams this process serves);
after a reconnection every subscriber reads again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import psycopg

from . import events
from .cancellations import Cancellations
from .pool import CONNECT_TIMEOUT, Backoff, outage

logger = logging.getLogger("turnkeeper.store")

CHANNEL = "turnkeeper_cancel"
RECONNECT = (1.0, 5.0)
"""Seconds between attempts to reconnect the listening connection: the first, and the most."""


class Listener:
    """LISTENs on `CHANNEL` and the events' channel from the first `start()` until
    `close()`, waking `cancellations` and `hub`."""

    def __init__(
        self, url: str, cancellations: Cancellations, hub: events.EventHub | None = None
    ) -> None:
        self.url = url
        self.cancellations = cancellations
        self.hub = hub or events.EventHub()
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
        backoff = Backoff(*RECONNECT)
        while True:
            try:
                db = await psycopg.AsyncConnection.connect(
                    self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
                )
            except psycopg.OperationalError as e:  # the database cannot be reached
                outage(self.url).failed(" ".join(str(e).split()))
            except Exception:  # anything else: said, and tried again (a Stop must be heard)
                logger.exception("the connection listening for cancels failed; reconnecting")
            else:
                backoff = Backoff(*RECONNECT)  # it listened: the next loss starts over
                outage(self.url).reached()
                await self._listening(db)
            await backoff.wait()

    async def _listening(self, db: psycopg.AsyncConnection[Any]) -> None:
        try:
            async with db:
                await self._listen(db)
        except Exception as e:  # the server went away: connect again
            why = " ".join(str(e).split())
            logger.info("the connection listening for cancels was lost; reconnecting: %s", why)

    async def _listen(self, db: psycopg.AsyncConnection[Any]) -> None:
        await db.execute(f"LISTEN {events.CHANNEL}")
        await db.execute(f"LISTEN {CHANNEL}")
        self.cancellations.wake_all()  # anything sent while nobody listened
        self.hub.wake_all()
        async for notify in db.notifies():
            if notify.channel == events.CHANNEL:
                self.hub.wake(notify.payload.rpartition(":")[0])
            else:
                self.cancellations.wake(notify.payload)
