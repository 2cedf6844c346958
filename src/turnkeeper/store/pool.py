"""The PostgreSQL connection pool of the store and of the distributed queue: it tells an
outage from a busy pool.

While the database cannot be reached (every attempt to connect since the last one
that succeeded has failed), a request for a connection fails within
`UNREACHABLE_WAIT` seconds instead of the pool's `timeout`: the API answers `503` at
once, and a worker's loops see the outage and wait it out. Meanwhile the pool
keeps trying to connect, a few seconds apart: its backoff starts again every
`RECONNECT_WINDOW` seconds, so a long outage never stretches the next attempt to
minutes. A busy pool whose database answers still waits the whole `timeout`.

Each process keeps one `Outage` per database, shared by its pools: it logs the
outage once, when it is first seen, and once more when a connection is made again
(docs/design.md §8). psycopg_pool's own warning for every failed attempt is left
out of the log (`_EachAttempt`): the outage is said once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..credentials import redact_url

logger = logging.getLogger("turnkeeper.store")

Connection = psycopg.AsyncConnection[TupleRow]

UNREACHABLE_WAIT = 1.0
"""Seconds a request for a connection waits while the database cannot be reached."""
RECONNECT_WINDOW = 5.0
"""Seconds of failed attempts after which the pool's reconnection backoff starts again."""
CONNECT_TIMEOUT = 5
"""Seconds one attempt to connect may take (a host that drops packets answers nothing)."""


class Backoff:
    """Waits between tries while a database cannot be reached: `first` seconds, doubled
    each time up to `most` (the worker's heartbeat and listener, the cancel listener and
    a turn's writes all wait so)."""

    def __init__(self, first: float = 1.0, most: float = 5.0) -> None:
        self.delay = first
        self.most = most

    async def wait(self) -> None:
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, self.most)


class Outage:
    """Whether one database can be reached, as this process sees it."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.since: float | None = None
        """When the outage was first seen (monotonic seconds); None while reachable."""
        self.regained: float | None = None
        """When the last outage ended (monotonic seconds)."""

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, why: str) -> None:
        """The database could not be reached; logged only if it could until now."""
        if self.since is None:
            self.since = time.monotonic()
            logger.warning(
                "PostgreSQL cannot be reached at %s (%s); retrying until it answers",
                self.where,
                why,
            )

    def reached(self) -> None:
        """A connection was made; if it ends an outage, say how long it lasted."""
        if self.since is not None:
            self.regained = time.monotonic()
            logger.warning(
                "PostgreSQL reached again at %s after %.1f s",
                self.where,
                self.regained - self.since,
            )
            self.since = None


_outages: dict[str, Outage] = {}


class _EachAttempt(logging.Filter):
    """Drops psycopg_pool's warning for each failed attempt to connect."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("error connecting in", "reconnection attempt in"))


_QUIET = _EachAttempt()


def outage(url: str) -> Outage:
    """The `Outage` of the database at `url`: one per process and URL."""
    if url not in _outages:
        _outages[url] = Outage(redact_url(url))
    return _outages[url]


class Pool(AsyncConnectionPool[Connection]):
    """An `AsyncConnectionPool` that fails fast while its database cannot be reached."""

    def __init__(self, conninfo: str, **options: Any) -> None:
        options.setdefault("reconnect_timeout", RECONNECT_WINDOW)
        kwargs = {"connect_timeout": CONNECT_TIMEOUT, **options.pop("kwargs", {})}
        super().__init__(conninfo, configure=self._connected, kwargs=kwargs, **options)
        self.outage = outage(conninfo)
        self._errors_seen = 0
        logging.getLogger("psycopg.pool").addFilter(_QUIET)  # once: filters are a set

    async def _connected(self, db: Connection) -> None:
        self._errors_seen = self._errors()
        self.outage.reached()

    def _errors(self) -> int:
        return int(self.get_stats().get("connections_errors", 0))

    @property
    def unreachable(self) -> bool:
        """Whether every attempt to connect since the last that succeeded has failed."""
        return self._errors() > self._errors_seen

    async def getconn(self, timeout: float | None = None) -> Connection:
        """A connection within `timeout` seconds (the pool's by default), or `PoolTimeout`
        within `UNREACHABLE_WAIT` seconds once the database is seen unreachable."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            wait = min(UNREACHABLE_WAIT, deadline - time.monotonic())
            try:
                return await super().getconn(max(wait, 0.01))
            except PoolTimeout:
                if self.unreachable and not self._catching_up():
                    self.outage.failed("no connection can be made")
                    raise PoolTimeout("no connection: the database does not answer") from None
                if time.monotonic() >= deadline:
                    raise

    def _catching_up(self) -> bool:
        """Whether another pool reached the database just now: this one's next attempt,
        at most `RECONNECT_WINDOW` seconds away, will too; its clients wait for it."""
        regained = self.outage.regained
        return (
            not self.outage.down
            and regained is not None
            and time.monotonic() - regained < 2 * RECONNECT_WINDOW
        )
