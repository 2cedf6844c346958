"""The shared store: PostgreSQL through psycopg 3 (async), for the API and any number of workers.

The same database holds procrastinate's job queue: its schema is one of the
numbered migrations here, so `migrate()` prepares everything a deployment
needs. Lease times come from the database's clock, the one clock every
machine shares. Fenced writes lock the turn's row (`FOR UPDATE`), so a write
and a take-over never interleave.

A publish, a checkpoint and the final write are each one statement, a call of
the `turnkeeper_write` function (migration 6): one round trip on an autocommit
connection, its own transaction. A worker's CPU goes to psycopg's cost per
statement (~0.2–0.35 ms under load), not to what the statement does.

While the database cannot be reached, a request for a connection fails within a
second (`pool.py`: the API answers 503), and a turn's writes wait for the
database instead (`_patient`): an outage alone does not fail a running turn.
"""

from __future__ import annotations

import asyncio
import json
import select
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..credentials import redact_url
from ..errors import ConfigError, MissingExtra
from ..state import PublishedState
from ..usage import Usage
from ..wire import Message
from . import base
from . import events as log
from .base import ALL, PAGED, Busy, Holder, new_id, recovered_state, refused, transcript_page
from .cancellations import Cancellations
from .records import (
    Checkpoint,
    ConversationSummary,
    Guard,
    NewEvent,
    Recovery,
    ResumeRecord,
    TranscriptPage,
    Turn,
    TurnEvent,
    TurnStart,
    decided,
)

try:
    import psycopg
    from psycopg.rows import TupleRow
    from psycopg.types.json import Json, Jsonb
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("PostgreSQL", "postgres") from e

from .. import state as published
from .listener import CHANNEL, Listener
from .pool import Backoff, Pool

PAGED_POSTGRES = PAGED.format(p="%s", least="LEAST")

NOW = "extract(epoch from clock_timestamp())"
MIGRATION_LOCK = 7_301_880_451  # pg_advisory_xact_lock key: one migrator at a time

Connection = psycopg.AsyncConnection[TupleRow]


def _procrastinate_schema() -> str:
    from procrastinate.schema import SchemaManager

    return str(SchemaManager.get_schema())


WRITE_FUNCTION = """
    CREATE OR REPLACE FUNCTION turnkeeper_write(
        kind text, turn text, held integer, new_version integer, new_status text,
        new_state json, new_usage jsonb, appended json, shown json, shown_from integer, calls json
    ) RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
        conversation text;
        stored integer;
        new_count integer := shown_from + json_array_length(shown);
        cancelled boolean;
    BEGIN
        SELECT conversation_id, n_messages INTO conversation, stored FROM turns
            WHERE turn_id = turn AND fence = held AND NOT done AND version < new_version
            FOR UPDATE;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF stored < shown_from THEN
            RAISE EXCEPTION 'turn %: % bubbles stored, the write starts at %',
                turn, stored, shown_from;
        END IF;
        INSERT INTO messages (conversation_id, turn_id, body)
            SELECT conversation, turn, m FROM json_array_elements(appended) WITH ORDINALITY a (m, i)
            ORDER BY i;
        IF new_count < stored THEN
            DELETE FROM bubbles WHERE turn_id = turn AND n >= new_count;
        END IF;
        INSERT INTO bubbles (turn_id, n, body)
            SELECT turn, shown_from + i - 1, b
            FROM json_array_elements(shown) WITH ORDINALITY s (b, i)
            WHERE shown_from + i - 1 >= stored;
        INSERT INTO iterations (turn_id, n, record)
            SELECT turn, (c ->> 0)::integer, (c -> 1)::jsonb FROM json_array_elements(calls) c;
        IF kind = 'finish' THEN
            UPDATE turns SET state = new_state, version = new_version, status = new_status,
                n_messages = new_count, usage = new_usage, done = true, lease_expires = NULL,
                cancel = false, checkpointed = false
                WHERE turn_id = turn RETURNING cancel INTO cancelled;
        ELSIF kind = 'checkpoint' THEN
            UPDATE turns SET state = new_state, version = new_version, status = new_status,
                n_messages = new_count, usage = new_usage, checkpointed = true
                WHERE turn_id = turn RETURNING cancel INTO cancelled;
        ELSE
            UPDATE turns SET state = new_state, version = new_version, status = new_status,
                n_messages = new_count
                WHERE turn_id = turn RETURNING cancel INTO cancelled;
        END IF;
        RETURN cancelled;
    END
    $$
"""
"""A publish (`kind` 'publish'), a checkpoint or the final write ('finish') in one
statement, its own transaction: the fence and version checked with the turn's row locked
(NULL if refused: nothing written), the appended history in its order, the bubbles past
those stored (`shown` holds the state's bubbles from `shown_from` on, which is at most the
stored count; a state with fewer bubbles than stored drops the rest), the model calls as
`[n, record]` pairs, then the turn's row. Returns the cancel flag as the row held it."""

MIGRATIONS: tuple[tuple[str, Any], ...] = (
    (
        "conversations, turns, history, published messages, checkpoints",
        """
        CREATE TABLE conversations (
            conversation_id text PRIMARY KEY,
            token_hash text NOT NULL,
            created timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE turns (
            seq bigserial PRIMARY KEY,
            turn_id text NOT NULL UNIQUE,
            conversation_id text NOT NULL REFERENCES conversations (conversation_id),
            question text NOT NULL,
            status text NOT NULL,
            done boolean NOT NULL DEFAULT false,
            version integer NOT NULL,
            state jsonb NOT NULL,
            n_messages integer NOT NULL,
            message_offset integer NOT NULL,
            fence integer NOT NULL DEFAULT 0,
            lease_expires double precision,
            wire text,
            cancel boolean NOT NULL DEFAULT false,
            usage jsonb NOT NULL DEFAULT '{}',
            created timestamptz NOT NULL DEFAULT now()
        );
        CREATE UNIQUE INDEX turns_one_open ON turns (conversation_id) WHERE NOT done;
        CREATE INDEX turns_leases ON turns (lease_expires) WHERE status = 'running';
        CREATE TABLE messages (
            seq bigserial PRIMARY KEY,
            conversation_id text NOT NULL,
            turn_id text NOT NULL,
            body jsonb NOT NULL
        );
        CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
        CREATE INDEX messages_by_turn ON messages (turn_id, seq);
        CREATE TABLE bubbles (
            turn_id text NOT NULL,
            n integer NOT NULL,
            body jsonb NOT NULL,
            PRIMARY KEY (turn_id, n)
        );
        CREATE TABLE checkpoints (
            turn_id text PRIMARY KEY,
            iteration integer NOT NULL,
            state jsonb NOT NULL,
            n_messages integer NOT NULL
        );
        """,
    ),
    ("procrastinate's job queue", _procrastinate_schema),
    (
        "wire data as json, not jsonb: kept as sent, and \\u0000 allowed",
        """
        ALTER TABLE messages ALTER COLUMN body TYPE json USING body::json;
        ALTER TABLE bubbles ALTER COLUMN body TYPE json USING body::json;
        ALTER TABLE turns ALTER COLUMN state TYPE json USING state::json;
        ALTER TABLE checkpoints ALTER COLUMN state TYPE json USING state::json;
        """,
    ),
    (
        "one record per model call, for `trace show`",
        base.ITERATIONS_TABLE.format(text="text", json="jsonb"),
    ),
    (
        "checkpoints kept in the turn's row: a `checkpointed` column, no `checkpoints` table",
        base.CHECKPOINTS_INTO_TURNS.format(boolean="boolean", true="true", false="false"),
    ),
    ("every write one statement: the `turnkeeper_write` function", WRITE_FUNCTION),
    (
        "owners and askers: a conversation's `owner`, a turn's `asked_by` and `locale`",
        # `seq`: the order of insertion, between conversations created at the same time
        "ALTER TABLE conversations ADD COLUMN seq bigserial;"
        + base.OWNERS.format(text="text", inserted=", seq"),
    ),
    (
        "waiting and resuming: a turn's `resume` record, `waiting_since`, `requeued`",
        base.RESUMES.format(json="jsonb", time="timestamptz"),
    ),
    (
        "the turn's event log: `turn_events`",
        log.EVENTS_TABLE.format(text="text", json="json", time="double precision", now=NOW),
    ),
)


PATIENCE = (0.5, 5.0)
"""Seconds between tries of a turn's write while the database cannot be reached: the
first, and the most."""
PROBE_TIMEOUT = 1.5
"""Seconds the first connection may take before the database counts as unreachable."""


async def probe(url: str) -> None:
    """One connection, before the pool (whose retries would hide the cause): `ConfigError`
    with the server's own reason (no such role or database, nothing listening) on one line."""
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            connection = await psycopg.AsyncConnection.connect(url, connect_timeout=2)
    except TimeoutError:
        raise ConfigError(
            f"cannot connect to PostgreSQL at {redact_url(url)}: no answer within {PROBE_TIMEOUT} s"
        ) from None
    except psycopg.Error as e:
        reason = " ".join(str(e).split())
        raise ConfigError(f"cannot connect to PostgreSQL at {redact_url(url)}: {reason}") from None
    await connection.close()


ENDED_UNRUN = (
    psycopg.errors.AdminShutdown,
    psycopg.errors.CrashShutdown,
    psycopg.errors.IdleSessionTimeout,
)
"""The server ended the connection (`pg_terminate_backend`, a restart, a crash, an idle
timeout) and said so instead of answering: the statement did not run, or ran in a
transaction that ended with the connection, so sending it again writes nothing twice.
A connection ended just before it is handed out may not have said so yet."""


async def _check_if_spoken_to(db: Connection) -> None:
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


class PostgresStore:
    """The shared store on PostgreSQL, through a psycopg connection pool; also holds
    procrastinate's job queue. Open one with `PostgresStore.connect(url)` (or `open_store`)."""

    def __init__(self, pool: Pool, url: str) -> None:
        self.pool = pool
        self.shown: dict[str, tuple[int, int]] = {}
        """Per turn, the fence and bubble count of its last write from this process."""
        self.cancellations = Cancellations()
        self.hub = log.EventHub()
        """This process's subscribers to turns' events, woken by the listener's NOTIFYs."""
        self.listener = Listener(url, self.cancellations, self.hub)

    @classmethod
    async def connect(cls, url: str, *, max_size: int = 4) -> PostgresStore:
        await probe(url)
        # Pool: fails fast while the database cannot be reached (the API answers 503).
        pool = Pool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
            # A connection the server ended (restart, failover, pg_terminate_backend) is
            # found when it is handed out and replaced, not used for a turn's write.
            check=_check_if_spoken_to,
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except psycopg.Error as e:  # PoolTimeout is one
            await pool.close()
            raise ConfigError(f"cannot connect to PostgreSQL: {e}") from e
        return cls(pool, url)

    async def close(self) -> None:
        await self.listener.close()
        await self.pool.close()

    async def _one(self, sql: Any, params: Any = None) -> Any:
        return await self._fetch(sql, params, one=True)

    async def _all(self, sql: Any, params: Any = None) -> list[Any]:
        rows: list[Any] = await self._fetch(sql, params, one=False)
        return rows

    async def _fetch(self, sql: Any, params: Any, *, one: bool) -> Any:
        try:
            return await self._fetch_once(sql, params, one=one)
        except ENDED_UNRUN:  # nothing ran: once more, on a connection the pool checks
            return await self._fetch_once(sql, params, one=one)

    async def _again(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """A transaction, sent once more if the server ended its connection unrun."""
        try:
            return await attempt()
        except ENDED_UNRUN:  # nothing ran: once more, on a connection the pool checks
            return await attempt()

    async def _patient(self, sql: Any, params: Any) -> Any:
        return await self._patiently(lambda: self._one(sql, params))

    async def _patiently(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """A turn's write (its usage, state, checkpoint, final write) or its cancel check:
        while the database cannot be reached, wait for it and send it then. The pool's
        `PoolTimeout` means nothing was sent. The turn's job clock bounds the wait; a task being
        cancelled (a stopping process) waits for nothing and leaves it to the sweeper."""
        backoff = Backoff(*PATIENCE)
        while True:
            try:
                return await attempt()
            except PoolTimeout:
                task = asyncio.current_task()
                if not self.pool.outage.down or (task is not None and task.cancelling()):
                    raise
            await backoff.wait()

    async def _fetch_once(self, sql: Any, params: Any, *, one: bool) -> Any:
        async with self.pool.connection() as db:
            cursor = await db.execute(sql, params)
            return await (cursor.fetchone() if one else cursor.fetchall())

    # ---- migrations ----------------------------------------------------------

    async def migrate(self) -> None:
        async with self.pool.connection() as db, db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await db.execute(
                "CREATE TABLE IF NOT EXISTS turnkeeper_migrations (number integer PRIMARY KEY,"
                " name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
            )
            cursor = await db.execute("SELECT number FROM turnkeeper_migrations")
            done = {n for (n,) in await cursor.fetchall()}
            for number, (name, sql) in enumerate(MIGRATIONS, start=1):
                if number in done:
                    continue
                await db.execute(sql() if callable(sql) else sql)
                await db.execute(
                    "INSERT INTO turnkeeper_migrations (number, name) VALUES (%s, %s)",
                    (number, name),
                )

    async def pending(self) -> int | None:
        async with self.pool.connection() as db:
            cursor = await db.execute("SELECT to_regclass('turnkeeper_migrations') IS NOT NULL")
            found = await cursor.fetchone()
            if found is None or not found[0]:
                return None
            cursor = await db.execute("SELECT count(*) FROM turnkeeper_migrations")
            done = await cursor.fetchone()
        return max(len(MIGRATIONS) - int(done[0] if done else 0), 0)

    # ---- the API's side ------------------------------------------------------

    async def create_conversation(
        self, token_hash: str, owner: str | None = None, conversation_id: str | None = None
    ) -> str:
        conversation_id = conversation_id or new_id("c")
        await self._one(
            "INSERT INTO conversations (conversation_id, token_hash, owner) VALUES (%s, %s, %s)"
            " ON CONFLICT (conversation_id) DO NOTHING RETURNING conversation_id",
            (conversation_id, token_hash, owner),
        )
        return conversation_id

    async def guard(self, conversation_id: str) -> Guard | None:
        row = await self._one(
            "SELECT token_hash, owner FROM conversations WHERE conversation_id = %s",
            (conversation_id,),
        )
        return None if row is None else Guard(*row)

    async def conversations(self, owner: str, limit: int = 50) -> list[ConversationSummary]:
        rows = await self._all(CONVERSATIONS, (owner, max(limit, 0)))
        return [ConversationSummary(*row) for row in rows]

    async def create_turn(
        self, conversation_id: str, question: str, *, user: str | None = None, locale: str = "en"
    ) -> Turn:
        turn_id = new_id("t")
        async with self.pool.connection() as db:
            try:
                async with db.transaction():
                    cursor = await db.execute(
                        "SELECT COALESCE(SUM(n_messages), 0) FROM turns WHERE conversation_id = %s",
                        (conversation_id,),
                    )
                    (offset,) = await cursor.fetchone() or (0,)
                    first = published.queued(turn_id, conversation_id, question, int(offset))
                    await db.execute(
                        "INSERT INTO turns (turn_id, conversation_id, question, status, version,"
                        " state, n_messages, message_offset, usage, asked_by, locale)"
                        " VALUES (%s, %s, %s, 'queued', 1, %s, 1, %s, %s, %s, %s)",
                        (turn_id, conversation_id, question, Json(first.bare()), offset,
                         Jsonb(first.usage.as_dict()), user, locale),
                    )  # fmt: skip
                    await db.execute(
                        "INSERT INTO bubbles VALUES (%s, 0, %s)",
                        (turn_id, Json(first.messages[0].to_json())),
                    )
            except psycopg.errors.UniqueViolation as e:
                raise Busy(f"conversation {conversation_id} has a turn that is not done") from e
        return Turn(turn_id, conversation_id, question, 1, int(offset), False, user, locale)

    async def turn(self, turn_id: str) -> Turn | None:
        row = await self._one(
            "SELECT turn_id, conversation_id, question, version, message_offset, done,"
            " asked_by, locale FROM turns WHERE turn_id = %s",
            (turn_id,),
        )
        return None if row is None else Turn(*row)

    async def open_turn(self, conversation_id: str) -> str | None:
        row = await self._one(base.OPEN_TURN.format(p="%s", false="false"), (conversation_id,))
        return None if row is None else str(row[0])

    async def start(self, turn_id: str) -> TurnStart | None:
        async with self.pool.connection() as db:
            cursor = await db.execute(base.START.format(p="%s"), (turn_id,))
            row = await cursor.fetchone()
            if row is None:
                return None
            return base.turn_start(row, row[8], await _bubbles(db, turn_id, row[9]))

    async def state_after(self, turn_id: str, after: int) -> dict[str, Any] | None:
        async with self.pool.connection() as db:
            cursor = await db.execute(
                "SELECT state, n_messages FROM turns WHERE turn_id = %s AND version > %s",
                (turn_id, after),
            )
            row = await cursor.fetchone()
            if row is None:
                return None
            return {**row[0], "messages": await _bubbles(db, turn_id, row[1])}

    async def transcript(
        self, conversation_id: str, *, before: int | None = None, limit: int = ALL
    ) -> TranscriptPage:
        rows = await self._all(PAGED_POSTGRES, (conversation_id, before, before, limit))
        return transcript_page([(i, b) for i, b in rows], before)

    async def usages(self, conversation_id: str) -> list[Usage]:
        rows = await self._all(
            "SELECT usage FROM turns WHERE conversation_id = %s ORDER BY seq", (conversation_id,)
        )
        return [Usage.from_dict(u) for (u,) in rows]

    async def request_cancel(self, turn_id: str) -> None:
        await self._all(
            "WITH cancelled AS (UPDATE turns SET cancel = true WHERE turn_id = %s AND NOT done"
            " RETURNING turn_id) SELECT pg_notify(%s, turn_id) FROM cancelled",
            (turn_id, CHANNEL),
        )
        self.cancellations.wake(turn_id)

    async def counts(self) -> dict[str, int]:
        rows = await self._all("SELECT status, COUNT(*) FROM turns GROUP BY status")
        return {str(s): int(n) for s, n in rows}

    # ---- the worker's side ---------------------------------------------------

    async def history(self, conversation_id: str) -> list[Message]:
        rows = await self._all(
            "SELECT body FROM messages WHERE conversation_id = %s ORDER BY seq", (conversation_id,)
        )
        return [b for (b,) in rows]

    async def queued(self, older_than: float = 0.0) -> list[str]:
        rows = await self._all(
            "SELECT turn_id FROM turns WHERE status = 'queued'"
            " AND COALESCE(requeued, created) <= clock_timestamp() - make_interval(secs => %s)"
            " ORDER BY seq",
            (older_than,),
        )
        return [str(t) for (t,) in rows]

    async def claim(self, turn_id: str, lease: float, wire: str) -> int | None:
        row = await self._one(
            "UPDATE turns SET status = 'running', fence = fence + 1,"
            f" lease_expires = {NOW} + %s, wire = %s"
            " WHERE turn_id = %s AND status = 'queued' AND NOT done RETURNING fence",
            (lease, wire, turn_id),
        )
        return None if row is None else int(row[0])

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool:
        row = await self._one(
            f"UPDATE turns SET lease_expires = {NOW} + %s"
            " WHERE turn_id = %s AND fence = %s AND NOT done RETURNING fence",
            (lease, turn_id, fence),
        )
        return row is not None

    async def cancel_requested(self, turn_id: str) -> bool:
        # asked by the running turn before each call: it waits out an outage as its writes do
        row = await self._patient("SELECT cancel FROM turns WHERE turn_id = %s", (turn_id,))
        return row is not None and bool(row[0])

    async def wait_cancel(self, turn_id: str) -> None:
        self.listener.start()
        await self.cancellations.wait(turn_id, lambda: self.cancel_requested(turn_id))

    async def record_usage(self, turn_id: str, fence: int, usage: Usage) -> None:
        row = await self._patient(
            "UPDATE turns SET usage = %s WHERE turn_id = %s AND fence = %s AND NOT done"
            " RETURNING fence",
            (Jsonb(usage.as_dict()), turn_id, fence),
        )
        if row is None:
            raise refused(turn_id, fence)

    async def publish(self, turn_id: str, fence: int, state: PublishedState) -> None:
        await self._write("publish", turn_id, fence, state)

    async def checkpoint(self, turn_id: str, fence: int, checkpoint: Checkpoint) -> bool:
        return await self._write("checkpoint", turn_id, fence, checkpoint.state, checkpoint)

    async def finish(self, turn_id: str, fence: int, final: Checkpoint) -> None:
        await self._write("finish", turn_id, fence, final.state, final)

    async def _write(
        self,
        kind: str,
        turn_id: str,
        fence: int,
        state: PublishedState,
        write: Checkpoint | None = None,
    ) -> bool:
        """One `turnkeeper_write` statement; the cancel flag it read with the row locked.

        Of the state's bubbles it sends those past the count this store last wrote for
        the turn under the same fence, and all of them otherwise (a new holder, a write
        that failed): the statement stores those past the count in the turn's row."""
        held, count = self.shown.pop(turn_id, (None, 0))
        since = min(count, len(state.messages)) if held == fence else 0
        written = _written(kind, turn_id, fence, state, write, since)
        events = () if write is None else write.events
        if events:
            row = await self._patiently(
                lambda: self._again(lambda: self._with_events(turn_id, fence, written, events))
            )
            self.hub.wake(turn_id)
        else:
            row = await self._patient(WRITE, written)
        if row is None or row[0] is None:
            raise refused(turn_id, fence)
        if kind != "finish":
            if len(self.shown) >= SHOWN_KEPT:
                self.shown.clear()
            self.shown[turn_id] = (fence, len(state.messages))
        return bool(row[0])

    async def _with_events(
        self, turn_id: str, fence: int, written: tuple[Any, ...], events: Sequence[NewEvent]
    ) -> Any:
        """A write and its events in one transaction (none of it if the write is refused)."""
        async with self.pool.connection() as db, db.transaction():
            cursor = await db.execute(WRITE, written)
            row = await cursor.fetchone()
            if row is None or row[0] is None:
                raise refused(turn_id, fence)
            await _append(db, turn_id, events)
        return row

    # ---- the event log -------------------------------------------------------

    async def append_events(self, turn_id: str, fence: int, events: Sequence[NewEvent]) -> int:
        async def attempt() -> int:
            async with self.pool.connection() as db, db.transaction():
                cursor = await db.execute(
                    "SELECT 1 FROM turns WHERE turn_id = %s AND fence = %s FOR UPDATE",
                    (turn_id, fence),
                )
                if await cursor.fetchone() is None:
                    raise refused(turn_id, fence)
                return await _append(db, turn_id, events)

        last: int = await self._patiently(lambda: self._again(attempt))
        self.hub.wake(turn_id)
        return last

    async def events_after(
        self, turn_id: str, after: int, limit: int = log.PAGE
    ) -> list[TurnEvent]:
        found = await self._all(EVENTS_AFTER, (turn_id, after, limit))
        return log.read(found, json.loads)

    def subscribe(self, turn_id: str) -> Any:
        self.listener.start()
        return self.hub.subscribed(turn_id)

    async def forget_events(self, older_than: float) -> int:
        async with self.pool.connection() as db:
            cursor = await db.execute(FORGET_EVENTS, (older_than,))
            return int(cursor.rowcount)

    async def iterations(self, turn_id: str) -> list[dict[str, Any]]:
        rows = await self._all(base.LOAD_CALLS.format(p="%s"), (turn_id,))
        return [dict(r) for (r,) in rows]

    # ---- the sweeper's side --------------------------------------------------

    async def expired(self) -> list[str]:
        rows = await self._all(
            "SELECT turn_id FROM turns WHERE status = 'running' AND NOT done"
            f" AND lease_expires < {NOW} ORDER BY lease_expires"
        )
        return [str(t) for (t,) in rows]

    async def take_over(self, turn_id: str, holder: Holder, lease: float = 30.0) -> Recovery | None:
        async with self.pool.connection() as db, db.transaction():
            return await _take_over(db, turn_id, holder, lease)

    # ---- waiting and resuming ------------------------------------------------

    async def park(self, turn_id: str, fence: int, record: ResumeRecord) -> None:
        row = await self._patient(  # a turn's write: it waits out an outage
            "UPDATE turns SET resume = %s, waiting_since = clock_timestamp()"
            " WHERE turn_id = %s AND fence = %s AND NOT done RETURNING fence",
            (Jsonb(record.to_json()), turn_id, fence),
        )
        if row is None:
            raise refused(turn_id, fence)

    async def resume_record(self, turn_id: str) -> ResumeRecord | None:
        row = await self._one("SELECT resume FROM turns WHERE turn_id = %s", (turn_id,))
        return None if row is None or row[0] is None else ResumeRecord.from_json(dict(row[0]))

    async def decide(
        self, turn_id: str, tool_use_id: str, approved: bool
    ) -> tuple[str, int] | None:
        async with self.pool.connection() as db, db.transaction():
            cursor = await db.execute(
                "SELECT resume, state FROM turns WHERE turn_id = %s AND status = 'waiting'"
                " AND NOT done FOR UPDATE",
                (turn_id,),
            )
            row = await cursor.fetchone()
            if row is None or row[0] is None:
                return None
            record = ResumeRecord.from_json(dict(row[0]))
            made = decided(record, PublishedState.from_json(dict(row[1])), tool_use_id, approved)
            if made is None:
                return None
            record, state = made
            await db.execute(
                "UPDATE turns SET resume = %s, state = %s, version = %s, status = %s,"
                " requeued = CASE WHEN %s = 'queued' THEN clock_timestamp() ELSE requeued END"
                " WHERE turn_id = %s",
                (Jsonb(record.to_json()), Json(state.bare()), state.version, state.status,
                 state.status, turn_id),
            )  # fmt: skip
            return state.status, state.version

    async def requeue(
        self, turn_id: str, fence: int, record: ResumeRecord, state: PublishedState
    ) -> None:
        await self._write("publish", turn_id, fence, state)
        await self._one(
            "UPDATE turns SET resume = %s, requeued = clock_timestamp(), lease_expires = NULL"
            " WHERE turn_id = %s AND fence = %s RETURNING fence",
            (Jsonb(record.to_json()), turn_id, fence),
        )

    async def waiting(self, older_than: float) -> list[str]:
        rows = await self._all(
            "SELECT turn_id FROM turns WHERE status = 'waiting' AND NOT done"
            " AND waiting_since <= clock_timestamp() - make_interval(secs => %s)"
            " ORDER BY waiting_since",
            (older_than,),
        )
        return [str(t) for (t,) in rows]


WRITE = (
    "SELECT turnkeeper_write(%s::text, %s::text, %s::integer, %s::integer, %s::text, %s::json,"
    " %s::jsonb, %s::json, %s::json, %s::integer, %s::json)"
)
EVENTS_AFTER = log.AFTER.format(p="%s")
FORGET_EVENTS = log.FORGET.format(now=NOW, p="%s")
CONVERSATIONS = base.CONVERSATIONS.format(
    created="extract(epoch from c.created)::float8", inserted="c.seq", p="%s"
)
SHOWN_KEPT = 10_000
"""Turns whose bubble count a store keeps; past it, it forgets them all (a turn it
forgets sends its bubbles whole once)."""


def _written(
    kind: str,
    turn_id: str,
    fence: int,
    state: PublishedState,
    write: Checkpoint | None,
    since: int,
) -> tuple[Any, ...]:
    """`turnkeeper_write`'s arguments: each array encoded once, as one JSON text (wire
    data is stored as this encoding gives it, `\\u0000` escaped)."""
    shown = json.dumps([m.to_json() for m in state.messages[since:]])
    if write is None:
        usage, appended, calls = None, "[]", "[]"
    else:
        usage = json.dumps(write.usage.as_dict())
        appended = json.dumps(list(write.appended))
        calls = json.dumps([[c.iteration, c.summary()] for c in write.calls])
    bare = json.dumps(state.bare())
    return (kind, turn_id, fence, state.version, state.status, bare, usage, appended, shown,
            since, calls)  # fmt: skip


async def _append(db: Connection, turn_id: str, events: Sequence[NewEvent]) -> int:
    """Insert `events` numbered on from the turn's last, and NOTIFY its subscribers in
    every process (sent when the transaction commits); the last number."""
    cursor = await db.execute(log.LAST_SEQ.format(p="%s"), (turn_id,))
    found = await cursor.fetchone()
    last = int(found[0]) if found else 0
    async with db.cursor() as many:
        await many.executemany(log.INSERT.format(p="%s"), log.rows(turn_id, last, events, Json))
    end = last + len(events)
    await db.execute("SELECT pg_notify(%s, %s)", (log.CHANNEL, f"{turn_id}:{end}"))
    return end


async def _bubbles(db: Connection, turn_id: str, count: int) -> list[dict[str, Any]]:
    cursor = await db.execute(base.BUBBLES.format(p="%s"), (turn_id, count))
    return [b for (b,) in await cursor.fetchall()]


async def _take_over(db: Connection, turn_id: str, holder: Holder, lease: float) -> Recovery | None:
    condition = holder.condition(NOW, "%s")
    sql = base.TAKE_OVER.format(now=NOW, p="%s", false="false", condition=condition)
    cursor = await db.execute(sql, (lease, turn_id, *holder.params()))
    row = await cursor.fetchone()
    if row is None:
        return None
    new_fence, conversation_id, question, wire, version, offset, state, usage, count, mark = row
    cursor = await db.execute(base.LAST_MESSAGE.format(p="%s"), (turn_id,))
    last = await cursor.fetchone()
    recovered = recovered_state(dict(state), await _bubbles(db, turn_id, count), version)
    return Recovery(
        turn_id=turn_id,
        conversation_id=conversation_id,
        fence=new_fence,
        question=question,
        wire=wire,
        version=recovered.version,
        message_offset=offset,
        state=recovered,
        checkpointed=bool(mark),
        last_message=last[0] if last else None,
        usage=Usage.from_dict(usage),
    )
