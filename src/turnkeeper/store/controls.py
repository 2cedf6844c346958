"""What a reader controls of their own conversations: deleting one, renaming it, and the
feedback they gave a turn (docs/design.md §6, §8).

Written once for both databases, as programs of the one SQL store (`sql.py` mixes
`Controls` in). A deleted conversation leaves nothing behind: its turns, its history,
its published messages, the model calls' records (`trace show`), its event log and its
feedback go in the same transaction as its row, so a privacy request is done when the
call returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..state import PublishedState
from .controlled import Feedback, Given, Rated, Rating
from .dialect import All, Dialect, Exec, Executor, One, Steps
from .records import ResumeRecord
from .refusals import Busy, NoConversation

TITLES_AND_FEEDBACK = """
    ALTER TABLE conversations ADD COLUMN title {text};
    ALTER TABLE turns ADD COLUMN feedback {json};
    ALTER TABLE turns ADD COLUMN feedback_at {seconds};
    CREATE INDEX turns_feedback ON turns (feedback_at) WHERE feedback_at IS NOT NULL
"""
"""The migration both stores append: a conversation's own title (None: its first
question), a turn's feedback (`{"rating", "comment"}`) and when it was last given (Unix
seconds), indexed for `turnkeeper feedback --since`."""

OF_CONVERSATION = "SELECT turn_id FROM turns WHERE conversation_id = ?"
DELETES = (
    f"DELETE FROM turn_events WHERE turn_id IN ({OF_CONVERSATION})",
    f"DELETE FROM iterations WHERE turn_id IN ({OF_CONVERSATION})",
    f"DELETE FROM bubbles WHERE turn_id IN ({OF_CONVERSATION})",
    "DELETE FROM messages WHERE conversation_id = ?",
    "DELETE FROM compactions WHERE conversation_id = ?",
    "DELETE FROM turns WHERE conversation_id = ?",
    "DELETE FROM conversations WHERE conversation_id = ?",
)
"""Everything of a conversation, the rows that name its turns first."""
HOLD = "SELECT 1 FROM conversations WHERE conversation_id = ?{lock}"
"""The conversation's row, held first (on PostgreSQL): a turn being asked in it meanwhile
(`create_turn` holds the row against a delete) is committed before the delete looks for
turns not done, and one asked later finds the conversation gone."""
TURNS = "SELECT turn_id FROM turns WHERE conversation_id = ?{lock}"
"""Its turns' rows, held next (on PostgreSQL): every write of a turn holds its row from its
first statement to its commit (the fence check, `FOR UPDATE`), so a write under way is
committed before the delete reads what to delete, and one made later finds its turn gone
and is refused, writing nothing (docs/design.md §6, "Deleting is final")."""
OPEN = "SELECT turn_id FROM turns WHERE conversation_id = ? AND done = {false}"
RENAME = "UPDATE conversations SET title = ? WHERE conversation_id = ?"
TITLE = (
    "SELECT COALESCE(c.title, (SELECT t.question FROM turns t"
    " WHERE t.conversation_id = c.conversation_id ORDER BY t.seq LIMIT 1))"
    " FROM conversations c WHERE c.conversation_id = ?"
)
"""The title a conversation is listed by: its own, else its first question."""
GIVE = (
    "UPDATE turns SET feedback = ?, feedback_at = {now} WHERE turn_id = ? AND done = {true}"
    " RETURNING status"
)
LAST_MODEL = "SELECT record FROM iterations WHERE turn_id = ? ORDER BY n DESC LIMIT 1"
SINCE = (
    "SELECT turn_id, conversation_id, status, feedback, feedback_at, asked_by, locale, question"
    " FROM turns WHERE feedback_at >= ? ORDER BY feedback_at, seq"
)
FEEDBACK_OF = "SELECT feedback, feedback_at FROM turns WHERE turn_id = ?"


def waiting_of(
    d: Dialect, bubbles: Steps[list[Any]], row: Sequence[Any]
) -> Steps[tuple[ResumeRecord, PublishedState]]:
    """A waiting turn's resume record and its state with its stored `bubbles` (the decision
    joins them), from its row (`resume`, `state`)."""
    shown = yield from bubbles
    state = PublishedState.from_json({**d.load(row[1]), "messages": shown})
    return ResumeRecord.from_json(d.load(row[0])), state


def bubbles_past(
    d: Dialect, statement: str, turn_id: str, state: PublishedState, stored: int
) -> Steps[int]:
    """The state's bubbles past the `stored` count written (a decision's, `Store.decide`);
    the count after them."""
    for n in range(stored, len(state.messages)):
        yield Exec(statement, (turn_id, n, d.json(state.messages[n].to_json())))
    return len(state.messages)


class _SqlParts(Protocol):
    dialect: Dialect
    executor: Executor


class Controls:
    """The reader's controls, as calls of the one SQL store."""

    async def delete_conversation(self: _SqlParts, conversation_id: str, *, stop: bool) -> bool:
        """Delete the conversation and everything of it, in one transaction; False if there
        is no such conversation. `Busy` while a turn of it is not done (one being asked
        meanwhile included), unless `stop` (the caller has asked it to stop: its worker's
        next write is refused)."""
        d = self.dialect

        def steps() -> Steps[bool]:
            if (yield One(d.sql(HOLD), (conversation_id,))) is None:
                return False
            yield All(d.sql(TURNS), (conversation_id,))
            if not stop and (yield One(d.sql(OPEN), (conversation_id,))) is not None:
                raise Busy(conversation_id)
            *rest, last = DELETES
            for statement in rest:
                yield Exec(d.sql(statement), (conversation_id,))
            return bool((yield Exec(d.sql(last), (conversation_id,))))

        return await self.executor.write(steps)

    async def rename_conversation(
        self: _SqlParts, conversation_id: str, title: str | None
    ) -> str | None:
        """Give the conversation its own title (None: its first question again); the title it
        is now listed by (None before its first question). `NoConversation` if there is none."""
        d = self.dialect

        def steps() -> Steps[str | None]:
            if not (yield Exec(d.sql(RENAME), (title, conversation_id))):
                raise NoConversation(conversation_id)
            row = yield One(d.sql(TITLE), (conversation_id,))
            return None if row is None or row[0] is None else str(row[0])

        return await self.executor.write(steps)

    async def give_feedback(
        self: _SqlParts, turn_id: str, rating: Rating, comment: str | None
    ) -> Given | None:
        """Keep the reader's feedback on a turn that is done, over any given before; None if
        the turn is not done (or not there)."""
        d = self.dialect
        body = d.jsonb({"rating": rating, "comment": comment})
        row: Any = await self.executor.write(One(d.sql(GIVE), (body, turn_id)), one=True)
        if row is None:
            return None
        record: Any = await self.executor.read(One(d.sql(LAST_MODEL), (turn_id,)))
        model = d.load(record[0]).get("model") if record is not None else None
        return Given(str(row[0]), model if isinstance(model, str) else None)

    async def feedback_of(self: _SqlParts, turn_id: str) -> Rated | None:
        """The turn's feedback, or None if it has none."""
        row: Any = await self.executor.read(One(self.dialect.sql(FEEDBACK_OF), (turn_id,)))
        if row is None or row[0] is None:
            return None
        given = self.dialect.load(row[0])
        return Rated(str(given["rating"]), given.get("comment"), float(row[1]))

    async def feedback(self: _SqlParts, since: float) -> list[Feedback]:
        """Every turn's feedback given since `since` (Unix seconds), oldest first."""
        rows: Any = await self.executor.read(All(self.dialect.sql(SINCE), (since,)))
        return [_exported(self.dialect, row) for row in rows]


def _exported(d: Dialect, row: Sequence[Any]) -> Feedback:
    turn_id, conversation_id, status, body, at, user, locale, question = row
    given = d.load(body)
    return Feedback(
        str(turn_id),
        str(conversation_id),
        str(status),
        str(given["rating"]),
        given.get("comment"),
        float(at),
        user,
        str(locale),
        str(question),
    )
