"""The embedded store: one SQLite file in WAL mode, `synchronous=NORMAL`.

The store's calls are `sql.py`'s, in SQLite's dialect (`DIALECT`); here is what only
SQLite has: the schema's migrations, the fast write path (several statements in the
group's transaction), the connection, and the idle-poll memory.

sqlite3 is blocking, so every call runs on one thread of its own and the
event loop never waits on the disk. Calls are batched (`commits`,
`group_commit.py`): the writes that arrive while one transaction commits share the
next, and each caller is answered once its write is committed. Several processes
may share the file (a worker beside the server): writes take `BEGIN IMMEDIATE` and
wait for each other up to the busy timeout. Lease times come from SQLite's own
clock. The one exception to the thread: a poll of a turn that has not moved since
it was last read is answered on the event loop, from memory, after a look at the
database's `data_version` (`seen`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..state import PublishedState
from ..usage import Charge
from . import base, compactions, ledger, owned
from . import events as log
from .controls import TITLES_AND_FEEDBACK
from .data_version import SeenVersions
from .dialect import Dialect, Exec, Many, One, Routine, Steps, Write
from .group_commit import GroupCommit
from .records import Checkpoint
from .refusals import refused
from .sql import SqlStore

NOW = "((julianday('now') - 2440587.5) * 86400.0)"


class SqliteStore(SqlStore):
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
        self.seen: SeenVersions = SeenVersions(self.path)
        """Polled turns' versions, answered from memory while the database has not moved."""
        super().__init__(DIALECT, self.commits, [self.seen])

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


# ---- the fast write path: a publish, a checkpoint or the final write -------------

FENCED = (
    "SELECT conversation_id, n_messages FROM turns"
    " WHERE turn_id = ? AND fence = ? AND done = 0 AND version < ?"
)
_SET_STATE = "UPDATE turns SET state = ?, version = ?, status = ?, n_messages = ?"
UPDATES = {
    Write.PUBLISH: _SET_STATE + " WHERE turn_id = ?",
    Write.CHECKPOINT: _SET_STATE
    + ", usage = ?, checkpointed = 1 WHERE turn_id = ? RETURNING cancel",
    Write.FINISH: _SET_STATE + ", usage = ?, done = 1, lease_expires = NULL, cancel = 0,"
    " checkpointed = 0 WHERE turn_id = ?",
}
"""The turn's row, by the kind of write (a checkpoint reads back the cancel flag; the
final write clears it)."""
APPEND = "INSERT INTO messages (conversation_id, turn_id, body) VALUES (?, ?, ?)"
SAVE_CALL = "INSERT INTO iterations (turn_id, n, record) VALUES (?, ?, ?)"
DROP_BUBBLES = "DELETE FROM bubbles WHERE turn_id = ? AND n >= ?"
ADD_BUBBLES = "INSERT INTO bubbles (turn_id, n, body) VALUES (?, ?, ?)"


@dataclass(slots=True)
class _Write:
    """A write, encoded once on the event loop: the database thread then runs one fence
    check, its inserts and one update of the turn's row."""

    kind: Write
    turn_id: str
    fence: int
    state: PublishedState
    row: tuple[Any, ...]
    bodies: list[str]
    calls: list[tuple[str, int, str]]
    charge: Charge | None = None

    @classmethod
    def of(
        cls, kind: Write, turn_id: str, fence: int, state: PublishedState, cp: Checkpoint | None
    ) -> _Write:
        row: tuple[Any, ...] = (_dump(state.bare()), state.version, state.status,
                                len(state.messages))  # fmt: skip
        if cp is None:
            return cls(kind, turn_id, fence, state, (*row, turn_id), [], [])
        return cls(
            kind,
            turn_id,
            fence,
            state,
            (*row, _dump(cp.usage.as_dict()), turn_id),
            [_dump(m) for m in cp.appended],
            [(turn_id, c.iteration, _dump(c.summary())) for c in cp.calls],
        )

    def steps(self) -> Steps[bool]:
        turn_id = self.turn_id
        row = yield One(FENCED, (turn_id, self.fence, self.state.version))
        if row is None:
            raise refused(turn_id, self.fence)
        conversation_id, stored = row
        if self.bodies:
            yield Many(APPEND, [(conversation_id, turn_id, b) for b in self.bodies])
        messages = self.state.messages
        if len(messages) < stored:
            yield Exec(DROP_BUBBLES, (turn_id, len(messages)))
        if stored < len(messages):
            shown = [
                (turn_id, n, _dump(messages[n].to_json())) for n in range(stored, len(messages))
            ]
            yield Many(ADD_BUBBLES, shown)
        if self.calls:
            yield Many(SAVE_CALL, self.calls)
        # The update (the cancel flag), the ledger charged with it (no statement: the days
        # are the database thread's, `days.py`).
        kind = self.kind
        if kind is not Write.CHECKPOINT:
            yield Exec(UPDATES[kind], self.row, self.charge)
            return False
        (cancel,) = yield One(UPDATES[kind], self.row, self.charge)
        return bool(cancel)


def fast_write(
    kind: Write,
    turn_id: str,
    fence: int,
    state: PublishedState,
    cp: Checkpoint | None,
    alone: bool = True,
    charge: Charge | None = None,
) -> Routine[bool]:
    """SQLite's write path: encoded here, run as several statements in the group's
    transaction (bubbles past those stored; fewer than stored drop the rest; the ledger's
    charge, if any)."""
    write = _Write.of(kind, turn_id, fence, state, cp)
    write.charge = charge
    return write.steps


# ---- the schema --------------------------------------------------------------------

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "conversations, turns, history, published messages, checkpoints",
        base.FIRST_SCHEMA.format(
            text="TEXT",
            time="REAL",
            now_default="",
            serial="INTEGER PRIMARY KEY AUTOINCREMENT",
            boolean="INTEGER",
            false="0",
            integer="INTEGER",
            json="TEXT",
            seconds="REAL",
            not_done="done = 0",
        ),
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
    (
        "the ledger: usage per subject per UTC day, `usage_days`",
        ledger.TABLE.format(text="TEXT", bigint="INTEGER", real="REAL"),
    ),
    (
        "compactions: a conversation's records of what its requests are built from",
        compactions.TABLE.format(text="TEXT", json="TEXT"),
    ),
    (
        "a conversation's own title, a turn's feedback",
        TITLES_AND_FEEDBACK.format(text="TEXT", json="TEXT", seconds="REAL"),
    ),
    (
        "what a turn needs travels with it: its `assistant`, `fingerprint`, `fate`",
        owned.OWNED.format(text="TEXT", json="TEXT", seconds="REAL", not_done="done = 0"),
    ),
    (
        "turns claimed by their assistant's name, whichever version queued them",
        owned.BY_NAME.format(not_done="done = 0"),
    ),
)


def _migrations() -> tuple[tuple[str, str], ...]:
    return MIGRATIONS  # read when asked: a test may hold the list at an earlier schema


def _script(sql: str) -> list[str]:
    """sqlite3 runs one statement per call."""
    return [statement for statement in sql.split(";") if statement.strip()]


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


DIALECT = Dialect(
    name="sqlite",
    placeholder="?",
    words={
        "now": NOW,
        "stamp": NOW,
        "ago": f"{NOW} - ?",
        "waited": f"{NOW} - waiting_since",
        "true": "1",
        "false": "0",
        "least": "min",
        "lock": "",
        "key_share": "",
        "message": "json_extract(body, '$.message')",
        "created": "c.created",
        "inserted": "c.rowid",
        "notify_from": "",
        "notify": "",
        "notify_events": "",
        "body_size": "length(CAST(body AS BLOB))",
        "time": "REAL",
        "has_migrations": "SELECT 1 FROM sqlite_master WHERE name = 'turnkeeper_migrations'",
        "age": f"{NOW} - created",
    },
    json=_dump,
    jsonb=_dump,
    load=_load,
    write=fast_write,
    one_statement_write=False,
    unique_violation=sqlite3.IntegrityError,
    migrations=_migrations,
    script=_script,
)
"""SQLite: JSON kept as text, booleans as integers, times as seconds since the epoch."""
