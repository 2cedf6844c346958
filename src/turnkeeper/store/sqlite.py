"""The embedded store: one SQLite file in WAL mode, `synchronous=NORMAL`.

sqlite3 is blocking, so every call runs on one thread of its own and the
event loop never waits on the disk. Calls are batched (`commits`): the writes
that arrive while one transaction commits share the next, and each caller is
answered once its write is committed. Several processes may share the file (a
worker beside the server): writes take `BEGIN IMMEDIATE` and wait for each
other up to the busy timeout. Lease times come from SQLite's own clock. The
one exception to the thread: a poll of a turn that has not moved since it was
last read is answered on the event loop, from memory, after a look at the
database's `data_version` (`seen`).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from .. import state as published
from ..errors import ConfigError
from ..state import PublishedState
from ..usage import Usage
from ..wire import Message
from . import base
from . import events as log
from .base import ALL, PAGED, Busy, Holder, new_id, recovered_state, refused, transcript_page
from .cancellations import Cancellations
from .data_version import SeenVersions
from .group_commit import GroupCommit, transaction
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

PAGED_SQLITE = PAGED.format(p="?", least="min")

NOW = "((julianday('now') - 2440587.5) * 86400.0)"

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "conversations, turns, history, published messages, checkpoints",
        """
        CREATE TABLE conversations (
            conversation_id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE TABLE turns (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            turn_id TEXT NOT NULL UNIQUE,
            conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
            question TEXT NOT NULL,
            status TEXT NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            version INTEGER NOT NULL,
            state TEXT NOT NULL,
            n_messages INTEGER NOT NULL,
            message_offset INTEGER NOT NULL,
            fence INTEGER NOT NULL DEFAULT 0,
            lease_expires REAL,
            wire TEXT,
            cancel INTEGER NOT NULL DEFAULT 0,
            usage TEXT NOT NULL DEFAULT '{}',
            created REAL NOT NULL
        );
        CREATE UNIQUE INDEX turns_one_open ON turns (conversation_id) WHERE done = 0;
        CREATE INDEX turns_leases ON turns (lease_expires) WHERE status = 'running';
        CREATE TABLE messages (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
        CREATE INDEX messages_by_turn ON messages (turn_id, seq);
        CREATE TABLE bubbles (
            turn_id TEXT NOT NULL,
            n INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (turn_id, n)
        );
        CREATE TABLE checkpoints (
            turn_id TEXT PRIMARY KEY,
            iteration INTEGER NOT NULL,
            state TEXT NOT NULL,
            n_messages INTEGER NOT NULL
        );
        """,
    ),
    (
        "one record per model call, for `trace show`",
        base.ITERATIONS_TABLE.format(text="TEXT", json="TEXT"),
    ),
    (
        "checkpoints kept in the turn's row: a `checkpointed` column, no `checkpoints` table",
        base.CHECKPOINTS_INTO_TURNS.format(boolean="INTEGER", true="1", false="0"),
    ),
    (
        "owners and askers: a conversation's `owner`, a turn's `asked_by` and `locale`",
        base.OWNERS.format(text="TEXT", inserted=""),
    ),
    (
        "waiting and resuming: a turn's `resume` record, `waiting_since`, `requeued`",
        base.RESUMES.format(json="TEXT", time="REAL"),
    ),
    (
        "the turn's event log: `turn_events`",
        log.EVENTS_TABLE.format(text="TEXT", json="TEXT", time="REAL", now=NOW),
    ),
)


class SqliteStore:
    """The embedded store: one SQLite file in WAL mode, shared by the processes on one machine."""

    def __init__(
        self, path: str | Path, *, busy_timeout: float = 10.0, read_only: bool = False
    ) -> None:
        self.path = str(path)
        self.busy_timeout = busy_timeout
        self.read_only = read_only
        """Opened for reading only: the file is not created, and its journal mode is kept."""
        self.commits = GroupCommit(self._connect)
        """The connection, its thread, and the batching of calls into transactions."""
        self.cancellations = Cancellations()
        self.hub = log.EventHub()
        """This process's subscribers to turns' events: every writer of the file's events
        is in this process (a worker beside `serve` needs PostgreSQL)."""
        self.seen = SeenVersions(self.path)
        """Polled turns' versions, answered from memory while the database has not moved."""

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
                return sqlite3.connect(
                    uri, uri=True, timeout=self.busy_timeout, isolation_level=None
                )
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode = WAL")
        except sqlite3.Error as e:
            raise ConfigError(f"cannot open the SQLite database {self.path}: {e}") from e
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        return db

    async def close(self) -> None:
        await self.commits.close()
        self.seen.close()

    # ---- migrations ----------------------------------------------------------

    async def migrate(self) -> None:
        await self.commits.alone(_migrate)

    async def pending(self) -> int | None:
        return await self.commits.alone(_pending)

    # ---- the API's side ------------------------------------------------------

    async def create_conversation(
        self, token_hash: str, owner: str | None = None, conversation_id: str | None = None
    ) -> str:
        conversation_id = conversation_id or new_id("c")

        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO conversations (conversation_id, token_hash, owner, created)"
                f" VALUES (?, ?, ?, {NOW}) ON CONFLICT (conversation_id) DO NOTHING",
                (conversation_id, token_hash, owner),
            )

        await self.commits.write(insert)
        return conversation_id

    async def guard(self, conversation_id: str) -> Guard | None:
        def read(db: sqlite3.Connection) -> Guard | None:
            row = db.execute(
                "SELECT token_hash, owner FROM conversations WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            return None if row is None else Guard(*row)

        return await self.commits.read(read)

    async def conversations(self, owner: str, limit: int = 50) -> list[ConversationSummary]:
        def read(db: sqlite3.Connection) -> list[ConversationSummary]:
            rows = db.execute(CONVERSATIONS, (owner, max(limit, 0))).fetchall()
            return [ConversationSummary(*row) for row in rows]

        return await self.commits.read(read)

    async def create_turn(
        self, conversation_id: str, question: str, *, user: str | None = None, locale: str = "en"
    ) -> Turn:
        turn_id = new_id("t")

        def insert(db: sqlite3.Connection) -> Turn:
            (offset,) = db.execute(
                "SELECT COALESCE(SUM(n_messages), 0) FROM turns WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            first = published.queued(turn_id, conversation_id, question, offset)
            try:
                db.execute(
                    "INSERT INTO turns (turn_id, conversation_id, question, status, version,"
                    " state, n_messages, message_offset, usage, asked_by, locale, created)"
                    f" VALUES (?, ?, ?, 'queued', 1, ?, 1, ?, ?, ?, ?, {NOW})",
                    (
                        turn_id,
                        conversation_id,
                        question,
                        _dump(first.bare()),
                        offset,
                        _dump(first.usage.as_dict()),
                        user,
                        locale,
                    ),
                )
            except sqlite3.IntegrityError as e:
                raise Busy(f"conversation {conversation_id} has a turn that is not done") from e
            db.execute(
                "INSERT INTO bubbles VALUES (?, 0, ?)",
                (turn_id, _dump(first.messages[0].to_json())),
            )
            return Turn(turn_id, conversation_id, question, 1, offset, False, user, locale)

        return await self.commits.write(insert)

    async def turn(self, turn_id: str) -> Turn | None:
        def read(db: sqlite3.Connection) -> Turn | None:
            row = db.execute(
                "SELECT turn_id, conversation_id, question, version, message_offset, done,"
                " asked_by, locale FROM turns WHERE turn_id = ?",
                (turn_id,),
            ).fetchone()
            if row is None:
                return None
            turn_id_, conversation_id, question, version, offset, done, user, locale = row
            return Turn(
                turn_id_, conversation_id, question, version, offset, bool(done), user, locale
            )

        return await self.commits.read(read)

    async def open_turn(self, conversation_id: str) -> str | None:
        def read(db: sqlite3.Connection) -> str | None:
            row = db.execute(base.OPEN_TURN.format(p="?", false="0"), (conversation_id,)).fetchone()
            return None if row is None else str(row[0])

        return await self.commits.read(read)

    async def start(self, turn_id: str) -> TurnStart | None:
        def read(db: sqlite3.Connection) -> TurnStart | None:
            row = db.execute(base.START.format(p="?"), (turn_id,)).fetchone()
            if row is None:
                return None
            return base.turn_start(row, _load(row[8]), _bubbles(db, turn_id, row[9]))

        return await self.commits.read(read)

    async def state_after(self, turn_id: str, after: int) -> dict[str, Any] | None:
        as_of = self.seen.as_of()
        if self.seen.unchanged(turn_id, after, as_of):
            return None

        def read(db: sqlite3.Connection) -> tuple[int | None, dict[str, Any] | None]:
            row = db.execute(
                "SELECT version, state, n_messages FROM turns WHERE turn_id = ?", (turn_id,)
            ).fetchone()
            if row is None:
                return None, None
            if row[0] <= after:
                return row[0], None
            return row[0], {**_load(row[1]), "messages": _bubbles(db, turn_id, row[2])}

        version, state = await self.commits.read(read)
        if version is not None:
            self.seen.saw(turn_id, version, as_of)
        return state

    async def transcript(
        self, conversation_id: str, *, before: int | None = None, limit: int = ALL
    ) -> TranscriptPage:
        def read(db: sqlite3.Connection) -> list[tuple[int, Any]]:
            asked = (conversation_id, before, before, limit)
            return [(i, _load(b)) for i, b in db.execute(PAGED_SQLITE, asked).fetchall()]

        return transcript_page(await self.commits.read(read), before)

    async def usages(self, conversation_id: str) -> list[Usage]:
        def read(db: sqlite3.Connection) -> list[Usage]:
            rows = db.execute(
                "SELECT usage FROM turns WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
            return [Usage.from_dict(_load(u)) for (u,) in rows]

        return await self.commits.read(read)

    async def request_cancel(self, turn_id: str) -> None:
        def update(db: sqlite3.Connection) -> None:
            db.execute("UPDATE turns SET cancel = 1 WHERE turn_id = ? AND done = 0", (turn_id,))

        await self.commits.write(update)
        self.cancellations.wake(turn_id)

    async def counts(self) -> dict[str, int]:
        def read(db: sqlite3.Connection) -> dict[str, int]:
            rows = db.execute("SELECT status, COUNT(*) FROM turns GROUP BY status").fetchall()
            return {str(s): int(n) for s, n in rows}

        return await self.commits.read(read)

    # ---- the worker's side ---------------------------------------------------

    async def history(self, conversation_id: str) -> list[Message]:
        def read(db: sqlite3.Connection) -> list[Message]:
            rows = db.execute(
                "SELECT body FROM messages WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
            return [_load(b) for (b,) in rows]

        return await self.commits.read(read)

    async def queued(self, older_than: float = 0.0) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT turn_id FROM turns WHERE status = 'queued'"
                f" AND COALESCE(requeued, created) <= {NOW} - ?"
                " ORDER BY seq",
                (older_than,),
            )
            return [str(t) for (t,) in rows.fetchall()]

        return await self.commits.read(read)

    async def claim(self, turn_id: str, lease: float, wire: str) -> int | None:
        def update(db: sqlite3.Connection) -> int | None:
            row = db.execute(
                "UPDATE turns SET status = 'running', fence = fence + 1,"
                f" lease_expires = {NOW} + ?, wire = ?"
                " WHERE turn_id = ? AND status = 'queued' AND done = 0 RETURNING fence",
                (lease, wire, turn_id),
            ).fetchone()
            return None if row is None else int(row[0])

        return await self.commits.write(update)

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool:
        def update(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                f"UPDATE turns SET lease_expires = {NOW} + ?"
                " WHERE turn_id = ? AND fence = ? AND done = 0",
                (lease, turn_id, fence),
            )
            return cursor.rowcount == 1

        return await self.commits.write(update)

    async def cancel_requested(self, turn_id: str) -> bool:
        def read(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT cancel FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
            return row is not None and bool(row[0])

        return await self.commits.read(read)

    async def wait_cancel(self, turn_id: str) -> None:
        await self.cancellations.wait(turn_id, lambda: self.cancel_requested(turn_id))

    async def record_usage(self, turn_id: str, fence: int, usage: Usage) -> None:
        def update(db: sqlite3.Connection) -> None:
            cursor = db.execute(
                "UPDATE turns SET usage = ? WHERE turn_id = ? AND fence = ? AND done = 0",
                (_dump(usage.as_dict()), turn_id, fence),
            )
            _check(cursor.rowcount, turn_id, fence)

        await self.commits.write(update)

    async def publish(self, turn_id: str, fence: int, state: PublishedState) -> None:
        def update(db: sqlite3.Connection) -> None:
            _publish(db, turn_id, fence, state)

        await self.commits.write(update)

    async def checkpoint(self, turn_id: str, fence: int, checkpoint: Checkpoint) -> bool:
        write = _Write.of(turn_id, fence, checkpoint)

        def run(db: sqlite3.Connection) -> bool:
            _write(db, write)
            return bool(db.execute(UPDATE_CHECKPOINT, write.update()).fetchone()[0])

        with self._waking(turn_id, checkpoint.events):
            return await self.commits.write(run)

    async def finish(self, turn_id: str, fence: int, final: Checkpoint) -> None:
        write = _Write.of(turn_id, fence, final)

        def run(db: sqlite3.Connection) -> None:
            _write(db, write)
            db.execute(UPDATE_FINAL, write.update())

        with self._waking(turn_id, final.events):
            await self.commits.write(run)

    # ---- the event log -------------------------------------------------------

    async def append_events(self, turn_id: str, fence: int, events: Sequence[NewEvent]) -> int:
        def insert(db: sqlite3.Connection) -> int:
            held = db.execute(
                "SELECT 1 FROM turns WHERE turn_id = ? AND fence = ?", (turn_id, fence)
            ).fetchone()
            if held is None:
                raise refused(turn_id, fence)
            return _append(db, turn_id, events)

        with self._waking(turn_id, events):
            return await self.commits.write(insert)

    async def events_after(
        self, turn_id: str, after: int, limit: int = log.PAGE
    ) -> list[TurnEvent]:
        def read(db: sqlite3.Connection) -> list[TurnEvent]:
            found = db.execute(EVENTS_AFTER, (turn_id, after, limit)).fetchall()
            return log.read(found, _load)

        return await self.commits.read(read)

    def subscribe(self, turn_id: str) -> Any:
        return self.hub.subscribed(turn_id)

    async def forget_events(self, older_than: float) -> int:
        def delete(db: sqlite3.Connection) -> int:
            return int(db.execute(FORGET_EVENTS, (older_than,)).rowcount)

        return await self.commits.write(delete)

    @contextmanager
    def _waking(self, turn_id: str, events: Sequence[NewEvent]) -> Iterator[None]:
        """Wake the turn's subscribers once the body's write of `events` is committed."""
        yield
        if events:
            asyncio.get_running_loop().call_soon(self.hub.wake, turn_id)

    async def iterations(self, turn_id: str) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(base.LOAD_CALLS.format(p="?"), (turn_id,)).fetchall()
            return [_load(r) for (r,) in rows]

        return await self.commits.read(read)

    # ---- the sweeper's side --------------------------------------------------

    async def expired(self) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT turn_id FROM turns WHERE status = 'running' AND done = 0"
                f" AND lease_expires < {NOW} ORDER BY lease_expires"
            ).fetchall()
            return [str(t) for (t,) in rows]

        return await self.commits.read(read)

    async def take_over(self, turn_id: str, holder: Holder, lease: float = 30.0) -> Recovery | None:
        def update(db: sqlite3.Connection) -> Recovery | None:
            return _take_over(db, turn_id, holder, lease)

        return await self.commits.write(update)

    # ---- waiting and resuming ------------------------------------------------

    async def park(self, turn_id: str, fence: int, record: ResumeRecord) -> None:
        def update(db: sqlite3.Connection) -> None:
            cursor = db.execute(
                f"UPDATE turns SET resume = ?, waiting_since = {NOW}"
                " WHERE turn_id = ? AND fence = ? AND done = 0",
                (_dump(record.to_json()), turn_id, fence),
            )
            _check(cursor.rowcount, turn_id, fence)

        await self.commits.write(update)

    async def resume_record(self, turn_id: str) -> ResumeRecord | None:
        def read(db: sqlite3.Connection) -> ResumeRecord | None:
            row = db.execute("SELECT resume FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
            return None if row is None or row[0] is None else ResumeRecord.from_json(_load(row[0]))

        return await self.commits.read(read)

    async def decide(
        self, turn_id: str, tool_use_id: str, approved: bool
    ) -> tuple[str, int] | None:
        def update(db: sqlite3.Connection) -> tuple[str, int] | None:
            row = db.execute(
                "SELECT resume, state FROM turns WHERE turn_id = ? AND status = 'waiting'"
                " AND done = 0",
                (turn_id,),
            ).fetchone()
            if row is None or row[0] is None:
                return None
            record = ResumeRecord.from_json(_load(row[0]))
            made = decided(record, PublishedState.from_json(_load(row[1])), tool_use_id, approved)
            if made is None:
                return None
            record, state = made
            db.execute(DECIDED, (_dump(record.to_json()), _dump(state.bare()), state.version,
                                 state.status, state.status, turn_id))  # fmt: skip
            return state.status, state.version

        return await self.commits.write(update)

    async def requeue(
        self, turn_id: str, fence: int, record: ResumeRecord, state: PublishedState
    ) -> None:
        def update(db: sqlite3.Connection) -> None:
            _publish(db, turn_id, fence, state)
            db.execute(
                f"UPDATE turns SET resume = ?, requeued = {NOW}, lease_expires = NULL"
                " WHERE turn_id = ?",
                (_dump(record.to_json()), turn_id),
            )

        await self.commits.write(update)

    async def waiting(self, older_than: float) -> list[str]:
        def read(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT turn_id FROM turns WHERE status = 'waiting' AND done = 0"
                f" AND waiting_since <= {NOW} - ? ORDER BY waiting_since",
                (older_than,),
            )
            return [str(t) for (t,) in rows.fetchall()]

        return await self.commits.read(read)


# ---- statements shared by several writes ---------------------------------------


def _check(rowcount: int, turn_id: str, fence: int) -> None:
    if rowcount != 1:
        raise refused(turn_id, fence)


def _publish(db: sqlite3.Connection, turn_id: str, fence: int, state: PublishedState) -> None:
    """Write the state; of its messages (which only grow) only those not stored yet."""
    row = db.execute(
        "SELECT n_messages FROM turns WHERE turn_id = ? AND fence = ? AND done = 0 AND version < ?",
        (turn_id, fence, state.version),
    ).fetchone()
    if row is None:
        raise refused(turn_id, fence)
    _bubbles_from(db, turn_id, state, row[0])
    db.execute(
        "UPDATE turns SET state = ?, version = ?, status = ?, n_messages = ? WHERE turn_id = ?",
        (_dump(state.bare()), state.version, state.status, len(state.messages), turn_id),
    )


SAVE_CALL = base.SAVE_CALL.format(p="?")
EVENTS_AFTER = log.AFTER.format(p="?")
FORGET_EVENTS = log.FORGET.format(now=NOW, p="?")
DECIDED = (
    "UPDATE turns SET resume = ?, state = ?, version = ?, status = ?,"
    f" requeued = CASE WHEN ? = 'queued' THEN {NOW} ELSE requeued END WHERE turn_id = ?"
)
CONVERSATIONS = base.CONVERSATIONS.format(created="c.created", inserted="c.rowid", p="?")
FENCED = (
    "SELECT conversation_id, n_messages FROM turns"
    " WHERE turn_id = ? AND fence = ? AND done = 0 AND version < ?"
)
_SET_STATE = "UPDATE turns SET state = ?, version = ?, status = ?, n_messages = ?, usage = ?"
UPDATE_CHECKPOINT = _SET_STATE + ", checkpointed = 1 WHERE turn_id = ? RETURNING cancel"
UPDATE_FINAL = (
    _SET_STATE + ", done = 1, lease_expires = NULL, cancel = 0, checkpointed = 0 WHERE turn_id = ?"
)


@dataclass(frozen=True, slots=True)
class _Write:
    """A checkpoint or the final write, encoded once on the event loop: the database
    thread then runs one fence check and one update of the turn's row."""

    turn_id: str
    fence: int
    state: PublishedState
    bare: str
    usage: str
    bodies: list[str]
    calls: list[tuple[str, int, str]]
    events: Sequence[NewEvent] = ()

    @classmethod
    def of(cls, turn_id: str, fence: int, checkpoint: Checkpoint) -> _Write:
        return cls(
            turn_id,
            fence,
            checkpoint.state,
            _dump(checkpoint.state.bare()),
            _dump(checkpoint.usage.as_dict()),
            [_dump(m) for m in checkpoint.appended],
            [(turn_id, c.iteration, _dump(c.summary())) for c in checkpoint.calls],
            checkpoint.events,
        )

    @property
    def count(self) -> int:
        return len(self.state.messages)

    def update(self) -> tuple[Any, ...]:
        state = self.state
        return (self.bare, state.version, state.status, self.count, self.usage, self.turn_id)


def _write(db: sqlite3.Connection, write: _Write) -> None:
    """A write's history, bubbles and model calls, after one check of its fence and
    version; the caller then updates the turn's row."""
    turn_id = write.turn_id
    row = db.execute(FENCED, (turn_id, write.fence, write.state.version)).fetchone()
    if row is None:
        raise refused(turn_id, write.fence)
    conversation_id, stored = row
    if write.bodies:
        db.executemany(
            "INSERT INTO messages (conversation_id, turn_id, body) VALUES (?, ?, ?)",
            [(conversation_id, turn_id, b) for b in write.bodies],
        )
    _bubbles_from(db, turn_id, write.state, stored)
    if write.calls:
        db.executemany(SAVE_CALL, write.calls)
    if write.events:
        _append(db, turn_id, write.events)


def _append(db: sqlite3.Connection, turn_id: str, events: Sequence[NewEvent]) -> int:
    """Insert `events` numbered on from the turn's last; the last number."""
    (last,) = db.execute(log.LAST_SEQ.format(p="?"), (turn_id,)).fetchone()
    db.executemany(log.INSERT.format(p="?"), log.rows(turn_id, int(last), events, _dump))
    return int(last) + len(events)


def _bubbles_from(db: sqlite3.Connection, turn_id: str, state: PublishedState, stored: int) -> None:
    """Store the state's bubbles past the first `stored` (messages only grow; a state
    with fewer messages than stored drops the rest)."""
    messages = state.messages
    if len(messages) < stored:
        db.execute("DELETE FROM bubbles WHERE turn_id = ? AND n >= ?", (turn_id, len(messages)))
    if stored < len(messages):
        db.executemany(
            "INSERT INTO bubbles VALUES (?, ?, ?)",
            [(turn_id, n, _dump(messages[n].to_json())) for n in range(stored, len(messages))],
        )


def _bubbles(db: sqlite3.Connection, turn_id: str, count: int) -> list[dict[str, Any]]:
    rows = db.execute(base.BUBBLES.format(p="?"), (turn_id, count)).fetchall()
    return [_load(b) for (b,) in rows]


def _take_over(
    db: sqlite3.Connection, turn_id: str, holder: Holder, lease: float
) -> Recovery | None:
    sql = base.TAKE_OVER.format(now=NOW, p="?", false="0", condition=holder.condition(NOW, "?"))
    row = db.execute(sql, (lease, turn_id, *holder.params())).fetchone()
    if row is None:
        return None
    new_fence, conversation_id, question, wire, version, offset, state, usage, count, mark = row
    last = db.execute(base.LAST_MESSAGE.format(p="?"), (turn_id,)).fetchone()
    recovered = recovered_state(_load(state), _bubbles(db, turn_id, count), version)
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
        last_message=_load(last[0]) if last else None,
        usage=Usage.from_dict(_load(usage)),
    )


def _pending(db: sqlite3.Connection) -> int | None:
    tables = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'turnkeeper_migrations'")
    if tables.fetchone() is None:
        return None
    (done,) = db.execute("SELECT count(*) FROM turnkeeper_migrations").fetchone()
    return max(len(MIGRATIONS) - int(done), 0)


def _migrate(db: sqlite3.Connection) -> None:
    with transaction(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS turnkeeper_migrations"
            " (number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        done = {n for (n,) in db.execute("SELECT number FROM turnkeeper_migrations")}
        for number, (name, sql) in enumerate(MIGRATIONS, start=1):
            if number in done:
                continue
            for statement in sql.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"INSERT INTO turnkeeper_migrations VALUES (?, ?, {NOW})", (number, name))


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every write (`json.dumps` with options builds a new one per call)."""
_ENCODE = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, True
    )
)
"""Its C encoder, built once: `encode()` builds a new one per call (no circular-reference
check: what the store writes is parsed JSON or built by the runtime, never cyclic)."""


def _dump(value: Any) -> str:
    if _ENCODE is None:
        return _ENCODER.encode(value)
    return "".join(_ENCODE(value, 0))


def _load(text: str) -> Any:
    return json.loads(text)
