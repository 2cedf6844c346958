"""The shared store: PostgreSQL through psycopg 3 (async), for the API and any number of workers.

The store's calls are `sql.py`'s, in PostgreSQL's dialect; here is what only
PostgreSQL has: the schema's migrations (procrastinate's job queue is one of them, so
`migrate()` prepares everything a deployment needs), the fast write path, the pool,
and the connection listening for cancels (`listener.py`). Lease times come from the
database's clock, the one clock every machine shares. Fenced writes lock the turn's
row (`FOR UPDATE`), so a write and a take-over never interleave.

A publish, a checkpoint and the final write are each one statement, a call of
the `turnkeeper_write` function (migration 6): one round trip on an autocommit
connection, its own transaction. A worker's CPU goes to psycopg's cost per
statement (~0.2–0.35 ms under load), not to what the statement does.

Programs reach the database through `pooled.py`: while the database cannot be reached,
a request for a connection fails within a second (the API answers 503), and a turn's
writes wait for the database instead.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from ..credentials import redact_url
from ..errors import ConfigError, MissingExtra
from ..state import PublishedState
from ..usage import Charge
from . import base, compactions, ledger, owned
from . import events as log
from .controls import TITLES_AND_FEEDBACK
from .dialect import Dialect, One, Routine, Steps, Write
from .records import Checkpoint
from .refusals import refused
from .sql import SqlStore

try:
    import psycopg
    from psycopg.types.json import Json, Jsonb
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("PostgreSQL", "postgres") from e

from .listener import CHANNEL, Listener
from .pool import Pool
from .pooled import Pooled, check_if_spoken_to

NOW = "extract(epoch from clock_timestamp())"
MIGRATION_LOCK = 7_301_880_451  # pg_advisory_xact_lock key: one migrator at a time


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
        base.FIRST_SCHEMA.format(
            text="text",
            time="timestamptz",
            now_default=" DEFAULT now()",
            serial="bigserial PRIMARY KEY",
            boolean="boolean",
            false="false",
            integer="integer",
            json="jsonb",
            seconds="double precision",
            not_done="NOT done",
        ),
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
    (
        "the ledger: usage per subject per UTC day, `usage_days`",
        ledger.TABLE.format(text="text", bigint="bigint", real="double precision"),
    ),
    (
        "compactions: a conversation's records of what its requests are built from",
        compactions.TABLE.format(text="text", json="json"),
    ),
    (
        "a conversation's own title, a turn's feedback",
        TITLES_AND_FEEDBACK.format(text="text", json="jsonb", seconds="double precision"),
    ),
    (
        "what a turn needs travels with it: its `assistant`, `fingerprint`, `fate`",
        owned.OWNED.format(
            text="text", json="jsonb", seconds="double precision", not_done="NOT done"
        ),
    ),
    (
        "turns claimed by their assistant's name, whichever version queued them",
        owned.BY_NAME.format(not_done="NOT done") + ";" + owned.JOBS_BY_NAME,
    ),
)


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


class PostgresStore(SqlStore):
    """The shared store on PostgreSQL, through a psycopg connection pool; also holds
    procrastinate's job queue. Open one with `PostgresStore.connect(url)` (or `open_store`)."""

    def __init__(self, pool: Pool, url: str) -> None:
        self.pool = pool
        self.writes = FastWrites()
        """The fast write path, and the bubble counts it keeps per turn."""
        super().__init__(replace(DIALECT, write=self.writes.program), Pooled(pool))
        self.listener = Listener(url, self.cancellations, self.hub)
        """The one connection listening for other processes' cancels and turns' events,
        from the first wait or subscriber."""
        self.companions.append(self.listener)

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
            check=check_if_spoken_to,
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except psycopg.Error as e:  # PoolTimeout is one
            await pool.close()
            raise ConfigError(f"cannot connect to PostgreSQL: {e}") from e
        return cls(pool, url)

    async def wait_cancel(self, turn_id: str) -> None:
        self.listener.start()
        await super().wait_cancel(turn_id)

    def subscribe(self, turn_id: str) -> AbstractContextManager[asyncio.Event]:
        self.listener.start()  # another process's writes wake this one's readers
        return super().subscribe(turn_id)


# ---- the fast write path: one call of `turnkeeper_write` ------------------------------

WRITE = (
    "SELECT turnkeeper_write(%s::text, %s::text, %s::integer, %s::integer, %s::text, %s::json,"
    " %s::jsonb, %s::json, %s::json, %s::integer, %s::json)"
)
CHARGED_WRITE = (
    f"WITH charged AS ({ledger.CHARGE.replace('?', '%s')})"
    f" SELECT {WRITE.removeprefix('SELECT ')}, tokens, cost_usd FROM charged"
)
"""The write and the ledger's charge in one statement, the day's totals read back."""
READ_WRITE = f"{WRITE}, {ledger.READ_DAY.replace('?', '%s')}"
"""The write and the ledger's day read in one statement (a charge that adds nothing)."""
SHOWN_KEPT = 10_000
"""Turns whose bubble count a store keeps; past it, it forgets them all (a turn it
forgets sends its bubbles whole once)."""


class FastWrites:
    """PostgreSQL's write path, and per turn the fence and bubble count of its last write
    from this process (`shown`)."""

    def __init__(self) -> None:
        self.shown: dict[str, tuple[int, int]] = {}

    def program(
        self,
        kind: Write,
        turn_id: str,
        fence: int,
        state: PublishedState,
        cp: Checkpoint | None,
        alone: bool = True,
        charge: Charge | None = None,
    ) -> Routine[bool]:
        """One `turnkeeper_write` statement; the cancel flag it read with the row locked.

        Of the state's bubbles it sends those past the count this store last wrote for
        the turn under the same fence, and all of them otherwise (a new holder, a write
        that failed, a write inside a larger transaction, which may yet roll back): the
        statement stores those past the count in the turn's row."""

        def steps() -> Steps[bool]:
            held, count = self.shown.pop(turn_id, (None, 0))
            since = min(count, len(state.messages)) if held == fence and alone else 0
            written = _written(kind, turn_id, fence, state, cp, since)
            if charge is None:
                row = yield One(WRITE, written)
            elif charge.adds:
                row = yield One(CHARGED_WRITE, (*ledger.charge_params(charge), *written))
            else:
                row = yield One(READ_WRITE, (*written, *ledger.read_params(charge)))
            if row is None or row[0] is None:
                raise refused(turn_id, fence)
            if charge is not None and kind is not Write.FINISH:  # a call may follow: keep the day
                ledger.charged(charge, row[1:])
            if kind is not Write.FINISH and alone:
                if len(self.shown) >= SHOWN_KEPT:
                    self.shown.clear()
                self.shown[turn_id] = (fence, len(state.messages))
            return bool(row[0])

        return steps


def _written(
    kind: Write,
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


def _migrations() -> tuple[tuple[str, Any], ...]:
    return MIGRATIONS  # read when asked: a test may hold the list at an earlier schema


DIALECT = Dialect(
    name="postgresql",
    placeholder="%s",
    words={
        "now": NOW,
        "stamp": "clock_timestamp()",
        "ago": "clock_timestamp() - make_interval(secs => ?)",
        "waited": "extract(epoch from clock_timestamp() - waiting_since)",
        "true": "true",
        "false": "false",
        "least": "LEAST",
        "lock": " FOR UPDATE",
        "key_share": " FOR KEY SHARE",
        "message": "body ->> 'message'",
        "created": "extract(epoch from c.created)::float8",
        "inserted": "c.seq",
        "notify_from": "WITH cancelled AS (",
        "notify": f" RETURNING turn_id) SELECT pg_notify('{CHANNEL}', turn_id) FROM cancelled",
        "notify_events": f"SELECT pg_notify('{log.CHANNEL}', ?)",
        "time": "timestamptz",
        "body_size": "octet_length(body::text)",
        "has_migrations": "SELECT 1 WHERE to_regclass('turnkeeper_migrations') IS NOT NULL",
        "migration_lock": f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})",
        "age": "extract(epoch from clock_timestamp() - created)",
    },
    json=Json,
    jsonb=Jsonb,
    load=lambda value: value,
    write=FastWrites().program,
    one_statement_write=True,
    unique_violation=psycopg.errors.UniqueViolation,
    migrations=_migrations,
)
"""PostgreSQL: JSON as `json` (wire data, kept as sent) or `jsonb`, read back parsed by
psycopg; times as `timestamptz`, leases as seconds since the epoch."""
