"""SQLite's ledger on the database thread: the days its charges touch, kept in memory.

On SQLite every write takes the database's one write lock (`BEGIN IMMEDIATE`), so while
a transaction holds it, the ledger's rows cannot change under it. The writer keeps the
totals of each (subject, day) it has charged or read; a charge (a `Charge` a program
yields, or one a write's statement carries) adds to them and answers the day's totals at
once, with no statement. A transaction's charges are written just before it commits, one
upsert per day touched, in one `executemany` (`ledger.ADD`): in the transaction of the
writes that carried them, so a crash loses nothing billed, and a commit leaves the table
holding exactly what the memory says. A transaction rolled back puts the totals back.

Another process may share the file (a worker beside the server; `turnkeeper usage`
reads it). Its commits move the file's `PRAGMA data_version` as this connection sees
it (this connection's own commits do not): the first charge of each transaction reads
it, and when it moved, everything kept is forgotten and read again from the table.
"""

from __future__ import annotations

import sqlite3

from ..usage import Charge, Day
from . import ledger

LIMIT = 100_000
"""Days kept at most; past it, memory starts again empty (each day is read again once)."""

Key = tuple[str, str]


class Days:
    """The days charged on one connection: their totals (this transaction's charges
    included), and what they were before this transaction first charged them."""

    __slots__ = ("_before", "_checked", "_totals", "_version")

    def __init__(self) -> None:
        self._totals: dict[Key, Day] = {}
        self._before: dict[Key, Day] = {}
        self._version: int | None = None
        self._checked = False
        """Whether this transaction read `data_version` yet."""

    def charge(self, db: sqlite3.Connection, charge: Charge) -> Day:
        """Add `charge` (nothing, for a charge that only reads) to its day; the day's totals.
        Only inside a write transaction."""
        if not self._checked:
            self._check(db)
        key = (charge.subject, charge.day)
        total = self._totals.get(key)
        if total is None:
            row = db.execute(ledger.DAY, key).fetchone()
            total = self._totals[key] = Day() if row is None else Day(int(row[0]), row[1])
        tokens, cost = charge.tokens, charge.cost_usd
        if tokens or cost:
            if key not in self._before:
                self._before[key] = total
            total = self._totals[key] = Day(total.tokens + tokens, total.cost_usd + cost)
        return total

    def _check(self, db: sqlite3.Connection) -> None:
        (version,) = db.execute("PRAGMA data_version").fetchone()
        if version != self._version or len(self._totals) >= LIMIT:
            self._totals.clear()
            self._version = version
        self._checked = True

    def write(self, db: sqlite3.Connection) -> None:
        """Before the commit: the transaction's charges, one upsert per day touched."""
        if self._before:
            totals = self._totals
            rows = []
            for key, was in self._before.items():
                now = totals[key]
                rows.append((*key, now.tokens - was.tokens, now.cost_usd - was.cost_usd))
            db.executemany(ledger.ADD, rows)

    def committed(self) -> None:
        """The transaction committed: its totals stand."""
        self._before.clear()
        self._checked = False

    def rolled_back(self) -> None:
        """The transaction rolled back: its charges never happened."""
        self._totals.update(self._before)
        self._before.clear()
        self._checked = False
