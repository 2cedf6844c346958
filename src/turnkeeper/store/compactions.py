"""A conversation's compaction records: what its requests are built from.

The history is kept verbatim, always (`messages`); a compaction adds a record to
`compactions` (`records.Compacted`: the summary, how far it reaches, up to where
tool results are cleared), numbered per conversation, written in the same
transaction as the turn's write that carries it (`Checkpoint.compacted`). A turn's
job reads the history and the newest record together (`context`), and builds its
requests from them (`turn/context.py`); the transcript a reader sees is the
history's, whole.
"""

from __future__ import annotations

from ..wire import Message
from .dialect import All, Dialect, Exec, Executor, One, Steps
from .records import Compacted

TABLE = """
    CREATE TABLE compactions (
        conversation_id {text} NOT NULL,
        n integer NOT NULL,
        turn_id {text} NOT NULL,
        record {json} NOT NULL,
        PRIMARY KEY (conversation_id, n)
    )
"""
"""The migration both stores append: one row per compaction of a conversation."""

ADD = (
    "INSERT INTO compactions (conversation_id, n, turn_id, record)"
    " SELECT t.conversation_id, COALESCE((SELECT MAX(c.n) FROM compactions c"
    " WHERE c.conversation_id = t.conversation_id), 0) + 1, t.turn_id, ?"
    " FROM turns t WHERE t.turn_id = ?"
)
NEWEST = "SELECT record FROM compactions WHERE conversation_id = ? ORDER BY n DESC LIMIT 1"
HISTORY = "SELECT body FROM messages WHERE conversation_id = ? ORDER BY seq"


def added(dialect: Dialect, turn_id: str, record: Compacted | None) -> Steps[None]:
    """Insert the record the turn `turn_id` made, if it made one (inside its write's
    transaction)."""
    if record is not None:
        yield Exec(dialect.sql(ADD), (dialect.json(record.to_json()), turn_id))


class Reads:
    """The store's read of what a turn's requests are built from (`sql.SqlStore` has it)."""

    dialect: Dialect
    executor: Executor

    async def context(self, conversation_id: str) -> tuple[list[Message], Compacted | None]:
        """The conversation's history, oldest first, and its newest compaction record."""
        return await self.executor.read(lambda: context(self.dialect, conversation_id))


def context(
    dialect: Dialect, conversation_id: str
) -> Steps[tuple[list[Message], Compacted | None]]:
    """The conversation's history, oldest first, and its newest compaction record."""
    load = dialect.load
    rows = yield All(dialect.sql(HISTORY), (conversation_id,))
    row = yield One(dialect.sql(NEWEST), (conversation_id,))
    record = None if row is None else Compacted.from_json(load(row[0]))
    return [load(b) for (b,) in rows], record
