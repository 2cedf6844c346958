"""SQLite's executor: group commit, the writes that queue up while one commits sharing the next.

One SQLite commit costs ~130 µs here (WAL, `synchronous=NORMAL`), and every
trip to the database thread costs a wake-up of that thread and one of the
event loop; a running turn writes twice per iteration. So calls are not
sent to the database one by one: they queue, and one flush at a time takes
everything queued, runs it on the database thread in one `BEGIN IMMEDIATE`
transaction, commits once, and only then answers every caller. A write is
committed before its `await` returns; calls run in the order they were made.

A call that raises (a refused fence, a busy conversation) must not take the
others down: when a call raises inside a batch, the batch is rolled back and
its calls run again, one transaction each, so each gets exactly its own
result. A batch of reads only takes no write lock.

A call is a program (`dialect.py`): on the database thread it is run to its end, each
statement it yields executed on the connection and its result sent back; a charge on
the ledger (a `Charge` yielded, or one a write's statement carries) is answered from
the days this connection keeps (`days.py`), whose charges every transaction writes just
before it commits.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..usage import Charge, Day
from .days import Days
from .dialect import All, Exec, Many, One, Program, Statement

T = TypeVar("T")

CallResult = tuple[bool, Any]
"""(True, the call's value) or (False, the exception it raised)."""


@dataclass(slots=True)
class _Call:
    work: Program[Any]
    write: bool
    future: asyncio.Future[Any]


class GroupCommit:
    """One SQLite connection on a thread of its own; calls to it batched as described above."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._db: sqlite3.Connection | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnkeeper-sqlite")
        self._queued: list[_Call] = []
        self._flusher: asyncio.Task[None] | None = None
        self.days = Days()
        """The ledger's days this connection charged (the database thread's only)."""
        self.commits = 0
        """Write transactions committed so far (batches and single calls)."""
        self.writes = 0
        """Write calls committed so far."""
        self.reads = 0
        """Read calls made so far (each one trip to the database thread, batched or not)."""

    def read(self, program: Program[T], *, turn: bool = False) -> asyncio.Future[T]:
        """The program on the database thread, outside any transaction; await its value.
        (Plain functions returning the call's future: no coroutine frames of their own on
        the hottest path. `turn` is PostgreSQL's: the disk has no outage to wait out.)"""
        self.reads += 1
        return self._submit(program, write=False)

    def write(
        self, program: Program[T], *, one: bool = False, turn: bool = False
    ) -> asyncio.Future[T]:
        """The program inside a write transaction, batched; await its value. (`one` and
        `turn` are PostgreSQL's: every write here is in the batch's transaction.)"""
        return self._submit(program, write=True)

    async def alone(self, program: Program[T]) -> T:
        """The program on the database thread in a transaction of its own, outside any batch."""
        await self._drain()

        def run() -> T:
            db = self._database()
            with transaction(db, self.days):
                value: T = run_program(db, program, self.days)
            return value

        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    async def close(self) -> None:
        await self._drain()
        if self._db is not None:
            db, self._db = self._db, None
            await asyncio.get_running_loop().run_in_executor(self._executor, db.close)
        self._executor.shutdown(wait=True)

    # ---- the event loop's side ---------------------------------------------

    def _submit(self, work: Program[Any], *, write: bool) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        call = _Call(work, write, loop.create_future())
        self._queued.append(call)
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush(), name="turnkeeper-sqlite-commits")
        return call.future

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queued:
            batch = [c for c in self._queued if not c.future.cancelled()]
            self._queued = []
            if not batch:
                continue
            try:
                outcomes = await loop.run_in_executor(self._executor, self._run, batch)
            except Exception as e:  # the executor itself failed (shut down): answer everyone
                outcomes = [(False, e)] * len(batch)
            for call, (ok, value) in zip(batch, outcomes, strict=True):
                if call.future.done():
                    continue
                if ok:
                    call.future.set_result(value)
                else:
                    call.future.set_exception(value)

    async def _drain(self) -> None:
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    # ---- the database thread's side ----------------------------------------

    def _database(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._connect()
        return self._db

    def _run(self, batch: list[_Call]) -> list[CallResult]:
        db = self._database()
        if len(batch) == 1 or not any(c.write for c in batch):
            return [self._one(db, c) for c in batch]
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:  # busy past the timeout: nobody's write can run now
            return [(False, e)] * len(batch)
        days = self.days
        try:
            results = [(True, run_program(db, c.work, days)) for c in batch]
        except Exception:
            _roll_back(db, days)
            return [self._one(db, c) for c in batch]
        try:
            days.write(db)
            db.execute("COMMIT")
        except sqlite3.Error as e:
            _roll_back(db, days)
            return [(False, e)] * len(batch)
        days.committed()
        self.commits += 1
        self.writes += sum(c.write for c in batch)
        return results

    def _one(self, db: sqlite3.Connection, call: _Call) -> CallResult:
        try:
            if not call.write:
                return True, run_program(db, call.work)
            with transaction(db, self.days):
                result = run_program(db, call.work, self.days)
            self.commits += 1
            self.writes += 1
            return True, result
        except Exception as e:
            return False, e


def run_program(db: sqlite3.Connection, program: Program[T], days: Days | None = None) -> T:
    """The program from its start, each statement it yields run on `db` (a charge on
    `days`: only inside a write transaction); its value."""
    if not callable(program):
        return _execute(db, program, days)  # type: ignore[no-any-return]
    steps = program()
    try:
        statement = next(steps)
        while True:
            statement = steps.send(_execute(db, statement, days))
    except StopIteration as done:
        value: T = done.value
        return value


def _execute(db: sqlite3.Connection, statement: Statement, days: Days | None) -> Any:
    if type(statement) is One:
        row = db.execute(statement.sql, statement.params).fetchone()
        if statement.charge is not None and row is not None:
            statement.charge.total = _charged(db, statement.charge, days)
        return row
    if type(statement) is All:
        return db.execute(statement.sql, statement.params).fetchall()
    if type(statement) is Exec:
        changed = db.execute(statement.sql, statement.params).rowcount
        if statement.charge is not None and changed:
            statement.charge.total = _charged(db, statement.charge, days)
        return changed
    if type(statement) is Charge:
        return _charged(db, statement, days)
    assert type(statement) is Many
    db.executemany(statement.sql, statement.rows)
    return None


def _charged(db: sqlite3.Connection, charge: Charge, days: Days | None) -> Day:
    """The charge added to its day (a yielded `Charge`, or one a write's statement
    carries); the day's totals."""
    assert days is not None, "a charge is made inside a write transaction"
    return days.charge(db, charge)


def _roll_back(db: sqlite3.Connection, days: Days) -> None:
    days.rolled_back()
    if db.in_transaction:
        db.execute("ROLLBACK")


@contextmanager
def transaction(db: sqlite3.Connection, days: Days) -> Iterator[None]:
    """`BEGIN IMMEDIATE` … `COMMIT` (the charges of `days` written just before), rolled
    back if the block or the commit raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        days.write(db)
        db.execute("COMMIT")
    except BaseException:
        _roll_back(db, days)
        raise
    days.committed()
