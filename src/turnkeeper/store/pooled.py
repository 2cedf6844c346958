"""PostgreSQL's executor: programs (`dialect.py`) on connections of the store's pool.

A read and a write of one statement run on an autocommit connection: each statement
is its own transaction, one round trip. A write of several statements runs in one
transaction. A program is sent once more, on a connection the pool checks, when the
server ended its connection instead of answering (`ENDED_UNRUN`): nothing it wrote
ran, or it ran in a transaction that ended with the connection.

While the database cannot be reached, a request for a connection fails within a
second (`pool.py`: the API answers 503), and a turn's calls (`turn=True`: its
writes and its cancel checks) wait for the database instead: an outage alone does
not fail a running turn.
"""

from __future__ import annotations

import asyncio
import select
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..usage import Charge
from . import ledger
from .dialect import All, Exec, Many, One, Program, Statement
from .pool import Backoff, Connection, Pool

T = TypeVar("T")

PATIENCE = (0.5, 5.0)
"""Seconds between tries of a turn's call while the database cannot be reached: the
first, and the most."""

ENDED_UNRUN = (
    psycopg.errors.AdminShutdown,
    psycopg.errors.CrashShutdown,
    psycopg.errors.IdleSessionTimeout,
)
"""The server ended the connection (`pg_terminate_backend`, a restart, a crash, an idle
timeout) and said so instead of answering: the statement did not run, or ran in a
transaction that ended with the connection, so sending it again writes nothing twice.
A connection ended just before it is handed out may not have said so yet."""


async def check_if_spoken_to(db: Connection) -> None:
    """Check a pooled connection as it is handed out, with a round trip only when the
    server has said something to it while it sat idle: a connection the server ended
    (restart, failover, `pg_terminate_backend`) has been sent its reason or the end of
    the stream, so its socket reads; a healthy idle one never does. A round trip per
    hand-out would double the statements of every store call."""
    try:
        idle = select.poll()  # not select.select: it refuses descriptors past 1023
        idle.register(db.fileno(), select.POLLIN)
        readable = bool(idle.poll(0))
    except (OSError, ValueError, psycopg.Error):
        readable = True
    if readable:
        await AsyncConnectionPool.check_connection(db)


class Pooled:
    """Runs the store's programs on `pool`'s connections (see the module's docstring)."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def read(self, program: Program[T], *, turn: bool = False) -> T:
        return await self._call(program, transaction=False, patient=turn)

    async def write(self, program: Program[T], *, one: bool = False, turn: bool = False) -> T:
        return await self._call(program, transaction=not one, patient=turn)

    async def alone(self, program: Program[T]) -> T:
        return await self._call(program, transaction=True, patient=False)

    async def close(self) -> None:
        await self.pool.close()

    async def _call(self, program: Program[T], *, transaction: bool, patient: bool) -> T:
        if not patient:
            return await self._run(program, transaction)
        backoff = Backoff(*PATIENCE)
        while True:
            try:
                return await self._run(program, transaction)
            except PoolTimeout:  # no connection: nothing was sent
                task = asyncio.current_task()
                if not self.pool.outage.down or (task is not None and task.cancelling()):
                    raise
            # The turn's job clock bounds the wait; a task being cancelled (a stopping
            # process) waits for nothing and leaves the turn to the sweeper.
            await backoff.wait()

    async def _run(self, program: Program[T], transaction: bool) -> T:
        try:
            return await self._run_once(program, transaction)
        except ENDED_UNRUN:  # nothing ran: once more, on a connection the pool checks
            return await self._run_once(program, transaction)

    async def _run_once(self, program: Program[T], transaction: bool) -> T:
        async with self.pool.connection() as db:
            if not transaction:
                return await _run_on(db, program)
            async with db.transaction():
                return await _run_on(db, program)


async def _run_on(db: Connection, program: Program[T]) -> T:
    """The program from its start, each statement it yields run on `db`; its value."""
    if not callable(program):
        return await _execute(db, program)  # type: ignore[no-any-return]
    steps = program()
    try:
        statement = next(steps)
        while True:
            statement = steps.send(await _execute(db, statement))
    except StopIteration as done:
        value: T = done.value
        return value


CHARGE = ledger.CHARGE.replace("?", "%s")


async def _execute(db: Connection, statement: Statement) -> Any:
    if isinstance(statement, Charge):  # the day's row upserted, locked to the commit
        cursor = await db.execute(CHARGE, ledger.charge_params(statement))
        row = await cursor.fetchone()
        assert row is not None, "an upsert returns its row"
        return ledger.day_of(row)
    if getattr(statement, "charge", None) is not None:
        raise TypeError("a charged statement is SQLite's: PostgreSQL charges in the write's SQL")
    if isinstance(statement, Many):
        async with db.cursor() as cursor:
            await cursor.executemany(statement.sql, statement.rows)
        return None
    # no parameters: sent as it is (a migration's `%` is no placeholder)
    cursor = await db.execute(statement.sql, statement.params or None)
    if isinstance(statement, One):
        return await cursor.fetchone()
    if isinstance(statement, All):
        return await cursor.fetchall()
    assert isinstance(statement, Exec)
    return cursor.rowcount
