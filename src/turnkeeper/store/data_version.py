"""Idle polls on SQLite answered without a trip to the database thread.

Most polls find nothing new: the widget asks `?after=` the version it has,
and the turn has not moved. Answering that from the database costs a
hand-off to the database thread and back (two thread wake-ups), more than
the rest of the request. So the store remembers the version each polled turn
had, and trusts it only while nobody has committed anything to the database
since: SQLite's `PRAGMA data_version`, read on a connection of the event
loop's own, changes whenever any other connection commits (this process's
writer, or another process sharing the file). Reading it touches no table
and takes no lock (~3 µs). Any commit forgets everything remembered, so the
answer is never older than the database: under load the memory is short, and
an idle database answers its polls from it.

One reading serves every poll of the same pass of the event loop (until a
callback it schedules runs, at the next pass). That is still never older than
what a poller could know: a request handled in this pass arrived before the
pass began, so before the reading; and a coroutine that saw a write finish
resumes through the loop's ready queue, in order, so a write that finished
after the reading wakes its writer only after that callback has dropped it.
"""

from __future__ import annotations

import asyncio
import sqlite3

LIMIT = 10_000
"""Turns remembered at most; past it, memory starts again empty."""


class SeenVersions:
    """The version each polled turn had as of one `data_version` of the database."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._as_of: int | None = None
        self._versions: dict[str, int] = {}
        self._fresh: asyncio.AbstractEventLoop | None = None
        """The event loop in whose current pass `_as_of` was read."""
        self.enabled = path not in ("", ":memory:")
        """A database in memory is another database on every connection: never remembered."""

    def as_of(self) -> int | None:
        """The database's `data_version` now (None when it cannot be read); when it moved,
        everything remembered is forgotten."""
        if not self.enabled:
            return None
        loop = asyncio.get_running_loop()
        if self._fresh is loop:
            return self._as_of
        try:
            if self._db is None:
                self._db = sqlite3.connect(
                    self.path, timeout=0, isolation_level=None, check_same_thread=False
                )
            (now,) = self._db.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None
        self._fresh = loop
        loop.call_soon(self._stale)
        if now != self._as_of:
            self._versions.clear()
            self._as_of = now
        return int(now)

    def _stale(self) -> None:
        self._fresh = None

    def unchanged(self, turn_id: str, after: int, as_of: int | None) -> bool:
        """Whether the turn is known to be at version `after` or below as of `as_of`."""
        if as_of is None:
            return False
        version = self._versions.get(turn_id)
        return version is not None and version <= after

    def saw(self, turn_id: str, version: int, as_of: int | None) -> None:
        """A read that started at `as_of` found the turn at `version`."""
        if as_of is None or as_of != self._as_of:
            return  # the database moved meanwhile: the next poll reads again
        if len(self._versions) >= LIMIT:
            self._versions.clear()
        self._versions[turn_id] = version

    async def close(self) -> None:
        """Close the event loop's connection (the store's `close`)."""
        if self._db is not None:
            self._db.close()
            self._db = None
