"""The API's reads of one turn: who may open it, and its poll (docs/design.md §6).

A turn's conversation and that conversation's guard are read together
(`turn_guard`): they are the turn's for as long as it exists, so the API keeps them
by turn (`api/owners.py`). The poll (`poll`) is then the API's one read, and it finds a
turn that is gone: its conversation deleted, by this process or another. SQLite's
store answers idle polls from memory (`data_version.py`, `seen`).
"""

from __future__ import annotations

from typing import Any

from .data_version import SeenVersions
from .dialect import All, Dialect, Executor, One, Steps
from .records import Guard
from .refusals import NoTurn
from .statements import Statements


class Polls:
    """The reads of a turn the API's routes make (`sql.SqlStore` has them)."""

    dialect: Dialect
    executor: Executor
    seen: SeenVersions | None = None
    """SQLite's memory of the versions polls found (`data_version.py`): an idle poll reads
    nothing while the database has not moved (None: every poll reads)."""
    sql: Statements

    async def turn_guard(self, turn_id: str) -> tuple[str, Guard] | None:
        row: Any = await self.executor.read(One(self.sql.turn_guard, (turn_id,)))
        return None if row is None else (str(row[0]), Guard(row[1], row[2]))

    async def poll(self, turn_id: str, after: int) -> dict[str, Any] | None:
        seen = self.seen
        as_of = None if seen is None else seen.as_of()
        if seen is not None and seen.unchanged(turn_id, after, as_of):
            return None  # SQLite: the database has not moved since the turn was seen
        sql, load = self.sql, self.dialect.load

        def steps() -> Steps[tuple[int | None, dict[str, Any] | None]]:
            """The turn's version (None: no such turn), and its published state if that
            version is above `after`."""
            row = yield One(sql.state_after, (after, turn_id))
            if row is None:
                return None, None
            if row[1] is None:
                return row[0], None
            bubbles = yield from self._bubbles(turn_id, row[2])
            return row[0], {**load(row[1]), "messages": bubbles}

        version, state = await self.executor.read(steps)
        if version is None:
            raise NoTurn(turn_id)
        if seen is not None:
            seen.saw(turn_id, version, as_of)
        return state

    async def state_after(self, turn_id: str, after: int) -> dict[str, Any] | None:
        try:
            return await self.poll(turn_id, after)
        except NoTurn:
            return None

    def _bubbles(self, turn_id: str, count: int) -> Steps[list[dict[str, Any]]]:
        """The turn's first `count` published bubbles, read in a transaction's steps."""
        rows = yield All(self.sql.bubbles, (turn_id, count))
        load = self.dialect.load
        return [load(b) for (b,) in rows]
