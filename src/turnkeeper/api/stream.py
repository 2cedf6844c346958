"""`GET /api/turns/{turn_id}/events`: a turn's event log as server-sent events.

Each event of the store's log (store/events.py) is sent as `id: <seq>`,
`event: <type>`, `data: <json body>`. The `Last-Event-ID` header (or
`?after=N`) resumes after event N: no gap, no duplicate. The stream reads the
log a page at a time and then waits for the store's wake-up (in this process
on SQLite, by LISTEN/NOTIFY on PostgreSQL): no polling loop per reader. It
ends after `turn.ended`, and after `turn.waiting` (the reader connects again
once the turn goes on); a cursor past the end waits for the next event, or
ends if the turn is over.

A comment line keeps the connection alive at least every `keep_alive` seconds.
A reader that stops reading cannot make the server hold more than a page of
events (`buffer` events, `page_bytes` of their bodies: ~192 KiB) and the
transport's buffer (64 KiB, past which a send waits): ~256 KiB per stream. Once
a send has waited `send_timeout` seconds the stream ends, and the reader resumes
by cursor. How many streams are open is capped (admission.py). On shutdown
`close()` ends every open stream cleanly.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.types import Receive, Scope, Send

from ..store import Store
from ..store.events import PAGE, PAGE_BYTES
from ..store.records import LAST_EVENTS
from .errors import ApiError

logger = logging.getLogger("turnkeeper.api")

KEEP_ALIVE = 15.0
"""Seconds between keep-alive comments, at most."""
BUFFER = PAGE
"""Events a stream reads from the store at once, at most: what it holds per reader."""
SEND_TIMEOUT = 30.0
"""Seconds one send may wait for a reader that stopped reading; then the stream ends."""
MALFORMED = "The event cursor (Last-Event-ID, or ?after=) must be a whole number of zero or more."


class Streams:
    """The event streams one app serves: their settings, how many are open, and the
    signal that ends them all on shutdown."""

    def __init__(
        self,
        store: Store,
        *,
        keep_alive: float = KEEP_ALIVE,
        buffer: int = BUFFER,
        page_bytes: int = PAGE_BYTES,
        send_timeout: float = SEND_TIMEOUT,
    ) -> None:
        self.store = store
        self.keep_alive = keep_alive
        self.buffer = buffer
        self.page_bytes = page_bytes
        self.send_timeout = send_timeout
        self.open = 0
        """Streams open now."""
        self._closing: anyio.Event | None = None
        self._closed = False

    @property
    def closing(self) -> anyio.Event:
        """Set once the app shuts down (made on first use, inside the event loop)."""
        if self._closing is None:
            self._closing = anyio.Event()
            if self._closed:
                self._closing.set()
        return self._closing

    def close(self) -> None:
        """End every open stream, and every one opened from now on, cleanly."""
        self._closed = True
        if self._closing is not None:
            self._closing.set()

    def response(self, turn_id: str, after: int) -> EventSourceResponse:
        """The stream of the turn's events after `after`."""
        return _Response(
            self._events(turn_id, after),
            ping=self.keep_alive,
            send_timeout=self.send_timeout,
            shutdown_event=self.closing,
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _events(self, turn_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
        self.open += 1
        try:
            with self.store.subscribe(turn_id) as woken:
                while not self._closed:
                    woken.clear()
                    page = await self._page(turn_id, after)
                    if page is None:
                        return
                    for event in page:
                        yield ServerSentEvent(
                            data=json.dumps(event.body, ensure_ascii=False),
                            event=event.type.value,
                            id=str(event.seq),
                        )
                        after = event.seq
                        if event.type in LAST_EVENTS:
                            return
                    if not page:
                        await self._wait(woken)
        finally:
            self.open -= 1

    async def _page(self, turn_id: str, after: int) -> list[Any] | None:
        """The next events; None when there are none and the turn is over (read before
        the events, so its last events are not missed), or gone (its conversation was
        deleted, by this process or another: nothing more will come)."""
        page = await self.read(turn_id, after)
        if page:
            return page
        turn = await self.store.turn(turn_id)
        if turn is None:
            return None
        if not turn.done:
            return page
        page = await self.read(turn_id, after)
        return page or None

    async def read(self, turn_id: str, after: int) -> list[Any]:
        """One page of the turn's events after `after`: at most `buffer` events and about
        `page_bytes` of their bodies."""
        return await self.store.events_after(turn_id, after, self.buffer, self.page_bytes)

    async def _wait(self, woken: asyncio.Event) -> None:
        """Until the turn writes events, the app shuts down, or `keep_alive` passes (then the
        log is read again: a wake-up missed never holds a reader for longer)."""
        with anyio.move_on_after(self.keep_alive):
            async with anyio.create_task_group() as group:

                async def closing() -> None:
                    await self.closing.wait()
                    group.cancel_scope.cancel()

                group.start_soon(closing)
                await woken.wait()
                group.cancel_scope.cancel()


class _Response(EventSourceResponse):
    """A stream whose reader stopped reading ends quietly (it resumes by cursor); once it
    ended, however it ended, `released` is called (its admission's slot given back)."""

    released: Callable[[], None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except* SendTimeoutError:
            logger.info("an event stream's reader stopped reading; the stream ended")
        finally:
            released, self.released = self.released, None
            if released is not None:
                released()


def cursor(last_event_id: str | None, after: str | None) -> int:
    """Where a stream resumes: after the `Last-Event-ID` header's event, else `?after=`'s;
    `400` if either is malformed."""
    given = [_number(v) for v in (last_event_id, after) if v is not None]
    return given[0] if given else 0


def _number(value: str) -> int:
    """A cursor's value (each one sent is checked, the one that wins or not)."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ApiError(400, MALFORMED)
    return int(value)
