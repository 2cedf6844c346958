"""The ledger (docs/design.md §13): usage per subject per UTC day, in the store.

One table, `usage_days(subject, day, tokens, cost_usd)`. A turn's writes charge it in
their own transaction: a publish, a checkpoint and the final write through the fast write
path, the usage recorded before tools run alike. The writes a model call may follow (a
publish, a checkpoint) read the day's totals back (`Charge.total`) for the check before
it. Nothing is charged when a write carries no `Charge` (an assistant without limits).

Each executor makes a charge its own way:
- SQLite's database thread keeps the days in memory under its write lock and writes a
  transaction's charges just before it commits (`days.py`, with `ADD`): no statement
  per charge, and the day is always read back. A turn's write hands its charge to the
  statement that changes the turn's row (`Exec`'s or `One`'s `charge`, made when it
  changed the row); the door yields a `Charge` of its own (`dialect.Statement`);
- on PostgreSQL a write's charge is a data-modifying CTE beside the `turnkeeper_write`
  call (still one statement; the usage record: `RECORD_AND_ADD`), read back
  (`RETURNING`) where a call may follow; a charge that adds nothing only reads the day,
  inside the write's own statement (`READ_DAY`), making no row and taking no lock; the
  door's charge is the upsert (`CHARGE`), which holds the day's row lock to the commit.

The door decides in the transaction that creates a turn (`admit()`, from
`create_turn`); `GET /api/usage` and `turnkeeper usage` read the day and the subject's
turns of the last minute (`ledger()`). A day the ledger never charged (an assistant
without limits) is read from the subject's turns of that day, so usage is shown whether
limits are set or not, at no cost to a turn's writes.

The statements below are templates: `Statements` (statements.py) holds those a store
sends with the store's other statements, compiled once per dialect.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..usage import MINUTE, Charge, Day, Ledger, Limits, Usage, billed, refused, subject, today
from .dialect import All, Executor, One, Steps
from .refusals import OverLimit
from .refusals import refused as fence_refused

if TYPE_CHECKING:
    from .statements import Statements

TABLE = """
    CREATE TABLE usage_days (
        subject {text} NOT NULL,
        day {text} NOT NULL,
        tokens {bigint} NOT NULL DEFAULT 0,
        cost_usd {real} NOT NULL DEFAULT 0,
        PRIMARY KEY (subject, day)
    );
    CREATE INDEX turns_by_asker ON turns (asked_by, created)
"""
"""The migration: the ledger, and the turns of one asker by time (the minute's count)."""

ADD = (
    "INSERT INTO usage_days (subject, day, tokens, cost_usd) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (subject, day) DO UPDATE SET tokens = usage_days.tokens + excluded.tokens,"
    " cost_usd = usage_days.cost_usd + excluded.cost_usd"
)
"""Add a charge to the day's row (made if it is the day's first)."""
CHARGE = ADD + " RETURNING tokens, cost_usd"
"""The same, the day's totals read back."""
READ_DAY = (
    "(SELECT tokens FROM usage_days WHERE subject = ? AND day = ?),"
    " (SELECT cost_usd FROM usage_days WHERE subject = ? AND day = ?)"
)
"""The day's totals as two columns of a statement that writes something else (NULL, NULL
if the day has no row yet): how a charge that adds nothing reads them, with no statement
of its own and no row made or locked."""

DAY = "SELECT tokens, cost_usd FROM usage_days WHERE subject = ? AND day = ?"
RECENT_OF = "SELECT {age} FROM turns WHERE asked_by = ? AND created > {ago} ORDER BY created"
RECENT = "SELECT {age} FROM turns WHERE asked_by IS NULL AND created > {ago} ORDER BY created"
"""The ages in seconds of a user's turns (or, without sign-in, of every turn) asked in the
last `?` seconds, oldest first."""
USED_OF = "SELECT usage FROM turns WHERE asked_by = ? AND created > {ago} AND created <= {ago}"
USED = "SELECT usage FROM turns WHERE asked_by IS NULL AND created > {ago} AND created <= {ago}"
"""The usage of a user's turns (or, without sign-in, of every turn) asked between two
moments, each `?` seconds ago: a day that the ledger never charged (an assistant without
limits), summed."""

RECORD_USAGE = "UPDATE turns SET usage = ? WHERE turn_id = ? AND fence = ? AND done = {false}"
"""The turn's usage so far recorded, before its tools run (`Statements.record_usage`)."""
RECORD_AND_ADD = (
    "WITH charged AS (" + ADD + "), recorded AS (" + RECORD_USAGE + " RETURNING 1)"
    " SELECT count(*) FROM recorded"
)
"""PostgreSQL: the usage recorded and the ledger charged in one statement."""
RECORD_AND_READ = RECORD_USAGE + " RETURNING " + READ_DAY
"""The usage recorded and the day read, in one statement (a charge that adds nothing)."""


def charge_params(charge: Charge) -> tuple[Any, ...]:
    return (charge.subject, charge.day, charge.tokens, charge.cost_usd)


def read_params(charge: Charge) -> tuple[Any, ...]:
    """`READ_DAY`'s parameters."""
    return (charge.subject, charge.day, charge.subject, charge.day)


def charged(charge: Charge, row: Sequence[Any]) -> None:
    """Keep the day's totals a charge read back (`tokens, cost_usd`; NULLs: no row yet)."""
    charge.total = day_of(row)


def day_of(row: Sequence[Any]) -> Day:
    """A day's totals as read (`tokens, cost_usd`; NULLs: no row yet)."""
    tokens, cost = row
    return Day(int(tokens or 0), float(cost or 0.0))


async def record_usage(
    sql: Statements,
    executor: Executor,
    params: tuple[Any, ...],
    charge: Charge,
    turn_id: str,
    fence: int,
) -> None:
    """PostgreSQL's usage record with its charge, one statement; `FenceLost` if the fence is
    not the turn's. A charge that adds is not read back: the checkpoint after the tools,
    always written before the next call, reads the day."""
    if not charge.adds:
        statement = One(sql.record_and_read, (*params, *read_params(charge)))
        row: Any = await executor.write(statement, one=True, turn=True)
        if row is None:
            raise fence_refused(turn_id, fence)
        charged(charge, row)
        return
    statement = One(sql.record_and_add, (*charge_params(charge), *params))
    row = await executor.write(statement, one=True, turn=True)
    if row[0] != 1:
        raise fence_refused(turn_id, fence)


def admit(sql: Statements, user: str | None, limits: Limits) -> Steps[None]:
    """The door, in the transaction that creates the turn: the day read by a zero charge
    (on PostgreSQL it makes the day's row and holds its lock to the commit, so one asker's
    new turns are counted one at a time; on SQLite the write lock does), the asker's turns
    of the last minute counted; `OverLimit` if the minute is full or the day used up, and
    nothing is created."""
    now = datetime.now(UTC)
    day: Day = yield Charge(subject(user), today(now), 0, 0.0)
    recent, params = (sql.recent, (MINUTE,)) if user is None else (sql.recent_of, (user, MINUTE))
    ages = yield All(recent, params)
    kept = Ledger(tuple(float(a) for (a,) in ages), day)
    refusal = refused(limits, kept, now)
    if refusal is not None:
        raise OverLimit(*refusal)


async def ledger(
    sql: Statements, executor: Executor, user: str | None, day: str, window: float
) -> Ledger:
    """The turns `user` (None: anyone, without sign-in) asked in the last `window`
    seconds, and their subject's ledger for `day`."""

    def steps() -> Steps[Ledger]:
        recent = sql.recent if user is None else sql.recent_of
        params = (window,) if user is None else (user, window)
        ages = yield All(recent, params)
        row = yield One(sql.ledger_day, (subject(user), day))
        if row is not None:
            return Ledger(tuple(float(a) for (a,) in ages), Day(int(row[0]), float(row[1])))
        begun = datetime.now(UTC) - datetime.fromisoformat(day).replace(tzinfo=UTC)
        since = (begun.total_seconds(), (begun - timedelta(days=1)).total_seconds())
        used = sql.used if user is None else sql.used_of
        usages = yield All(used, since if user is None else (user, *since))
        return Ledger(tuple(float(a) for (a,) in ages), summed(u for (u,) in usages))

    return await executor.read(steps)


def summed(usages: Iterable[Any], load: Callable[[Any], Any] = json.loads) -> Day:
    """The day of turns the ledger never charged: their usages (as stored) summed as the
    ledger would have charged them."""
    tokens, cost = 0, 0.0
    for stored in usages:
        usage = Usage.from_dict(stored if isinstance(stored, dict) else load(stored))
        tokens, cost = tokens + billed(usage), cost + (usage.cost_usd or 0.0)
    return Day(tokens, cost)
