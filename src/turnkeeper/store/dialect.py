"""What the one SQL store (`sql.py`) asks of a database: its dialect, and an executor.

A store call is a **program**: a generator function that yields the statements it sends
(`One`, `All`, `Exec`, `Many`, and a `Charge` on the ledger, which each executor makes
its own way; on SQLite a write's `One` or `Exec` may carry one), is sent each one's
result, and returns the call's value; or a single statement, whose result is the call's
value (a store's hottest calls, with no generator to step through). Programs are written
once, in the dialect's terms; the decisions between statements are plain Python, so a
program is the same on both databases. Routines are zero-argument callables so that an
executor can run one again from the start (SQLite's group commit reruns a failed batch's
calls one by one; PostgreSQL sends again what a connection the server ended never ran).

The **dialect** (`Dialect`) is what differs in the SQL text and the values: the
placeholder, the clock, booleans, how a JSON value goes in and comes out, a few
words (`{least}`, `{lock}`, …), and the fast write path (`write`: a publish, a
checkpoint or the final write; several statements on SQLite, one call of a
server-side function on PostgreSQL).

The **executor** (`Executor`) is how programs reach the database: SQLite's writer
thread with group commit (`group_commit.py`), PostgreSQL's pool with its outage
waits (`pooled.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from ..state import PublishedState
from ..usage import Charge
from .records import Checkpoint

T = TypeVar("T")


@dataclass(slots=True)
class One:
    """A statement; its first row, or None. A write's statement on SQLite may carry the
    ledger's `charge`, made when a row comes back (`Exec`)."""

    sql: str
    params: Sequence[Any] = ()
    charge: Charge | None = None


@dataclass(slots=True)
class All:
    """A statement; all its rows."""

    sql: str
    params: Sequence[Any] = ()


@dataclass(slots=True)
class Exec:
    """A statement whose rows, if any, nobody reads; how many rows it changed.

    A write's statement on SQLite may carry the ledger's `charge`: when the statement
    changed a row (the turn's, under its fence), the database thread adds the charge to its
    day as it would a `Charge` yielded, and sets its `total`, with no step of the program
    between. PostgreSQL's writes carry their charge in their own SQL (`store/ledger.py`);
    its executor refuses a charged statement."""

    sql: str
    params: Sequence[Any] = ()
    charge: Charge | None = None


@dataclass(slots=True)
class Many:
    """One statement for each of `rows`; None."""

    sql: str
    rows: Sequence[Sequence[Any]]


Statement = One | All | Exec | Many | Charge
"""A `Charge` yielded is added to its subject's day on the ledger (`store/ledger.py`), and
answered with the day's totals as it leaves them (a `Day`): SQLite's executor keeps the
days it has charged in memory, exact under its write lock, and writes a transaction's
charges just before it commits (`store/days.py`); PostgreSQL's runs the upsert
(`ledger.CHARGE`), which locks the day's row to the commit."""
Steps = Generator[Statement, Any, T]
"""A running program: it yields statements and is sent their results."""
Routine = Callable[[], Steps[T]]
"""A program of statements and decisions, from the start each time it is called."""
Program = Routine[T] | Statement
"""What an executor runs: a routine, or the simplest program, one statement (its result)."""


class Write(StrEnum):
    """Which write the fast write path makes (PostgreSQL's `turnkeeper_write` `kind`)."""

    PUBLISH = "publish"
    CHECKPOINT = "checkpoint"
    FINISH = "finish"


FastWrite = Callable[
    [Write, str, int, PublishedState, "Checkpoint | None", bool, "Charge | None"], Routine[bool]
]
"""A dialect's fast write path: `(kind, turn_id, fence, state, checkpoint, alone, charge)` →
the routine that writes it (the checkpoint is None for a publish; `alone`: the write is the
whole transaction, so what it sent may be remembered for the next one; `charge`, if any, is
added to the ledger in the same transaction, its `total` read back: `store/ledger.py`). It
raises `FenceLost` when the fence or the version is refused, and returns the turn's cancel
flag as it read it with the write."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the SQL text and the values of one database look like."""

    name: str
    placeholder: str
    """`?` or `%s`: templates are written with `?`."""
    words: dict[str, str]
    """What each `{word}` of a template stands for: `now` (seconds since the epoch, from
    the database's clock), `stamp` (a time column's value now), `ago` (a time column's
    value `?` seconds ago), `true`, `false`, `least`, `lock` (a row lock for the rest of
    the transaction, or nothing), `key_share` (a lock for the rest of the transaction
    that keeps the row from being deleted, or nothing), `message` (an event's `message`, read
from its JSON body), `created` and `inserted` (a
    conversation's creation time in seconds, and its order of insertion), `cancelled`
    (the cancel flag's update
    `{update}`, and the wake-up of other processes), `time` (a time column's type),
    `has_migrations` (a row if the migrations table exists), and, where migrators must
    take turns, `migration_lock` (a lock held to the end of the migrations' transaction)."""
    json: Callable[[Any], Any]
    """A value for a `json` column (wire data, kept as sent)."""
    jsonb: Callable[[Any], Any]
    """A value for a `jsonb` column on PostgreSQL (usage, a resume record)."""
    load: Callable[[Any], Any]
    """A JSON column's value as read."""
    write: FastWrite
    one_statement_write: bool
    """Whether `write`'s program is one statement (its own transaction, no BEGIN)."""
    unique_violation: type[Exception]
    """What the driver raises when a second open turn would break `turns_one_open`."""
    migrations: Callable[[], Sequence[tuple[str, Any]]]
    """The numbered migrations, in order: (name, SQL text or a function giving it)."""
    script: Callable[[str], list[str]] = field(default=lambda sql: [sql])
    """A migration's SQL text as the statements one `Exec` each can send."""

    def sql(self, template: str) -> str:
        """`template` in this dialect: its `{word}`s replaced, then its placeholders."""
        text = template.format(**self.words) if "{" in template else template
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)


class Companion(Protocol):
    """Something a store keeps beside its connections and closes with them (PostgreSQL's
    listening connection)."""

    async def close(self) -> None: ...


class Executor(Protocol):
    """Runs programs on one database. `turn`: a running turn's call, which on PostgreSQL
    waits out an outage instead of failing."""

    def read(self, program: Program[T], *, turn: bool = False) -> Awaitable[T]:
        """The program's statements outside any transaction; its value."""
        ...

    def write(self, program: Program[T], *, one: bool = False, turn: bool = False) -> Awaitable[T]:
        """The program in one transaction (`one`: it sends one statement, which is its own
        transaction); its value once committed."""
        ...

    async def alone(self, program: Program[T]) -> T:
        """The program in a transaction of its own, nothing batched with it (migrations)."""
        ...

    async def close(self) -> None:
        """Wait for what is under way, then close the connections."""
        ...
