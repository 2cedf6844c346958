"""What a turn needs travels with it (docs/design.md §8): the migration that gives each turn
its assistant and fate, the columns a new turn writes of them, and a turn read back
(`turn_of`, and `turn_start`: a claimed turn with its state).

The values are `records.Owner` and `records.Fate`; the store writes them with the turn
(`create_turn`), claims by the assistant's name, and hands them back with the turn. The
`fingerprint` column holds the assistant's version (`Owner.version`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..state import PublishedState
from .dialect import Dialect, Exec, One, Steps
from .records import EventType, Fate, NewEvent, Owner, Turn, TurnStart
from .statements import Statements

Append = Callable[[str, Sequence[NewEvent]], Steps[int]]
"""The store's insert of a turn's events, in the transaction it is called in."""

OWNED = """
    ALTER TABLE turns ADD COLUMN assistant {text};
    ALTER TABLE turns ADD COLUMN fingerprint {text};
    ALTER TABLE turns ADD COLUMN fate {json};
    ALTER TABLE turns ADD COLUMN approval_timeout {seconds};
    CREATE INDEX turns_by_owner ON turns (fingerprint) WHERE {not_done}
"""
"""What a turn needs travels with it: the assistant that queued it (its name and
version, in `fingerprint`) and the settings that decide its fate (`records.Fate`), its approval
timeout also as a column for the sweep of unanswered turns (existing rows: none)."""


BY_NAME = """
    DROP INDEX turns_by_owner;
    CREATE INDEX turns_by_assistant ON turns (assistant, status) WHERE {not_done}
"""
"""Turns claimed by their assistant's name, whichever version queued them (the index on
the version dropped: nothing looks turns up by it)."""

JOBS_BY_NAME = """
    UPDATE procrastinate_jobs j
    SET queue_name = 'turnkeeper_turns.' || left(encode(sha256(convert_to(t.assistant, 'UTF8')),
        'hex'), 12)
    FROM turns t
    WHERE j.status = 'todo' AND j.task_name = 'turnkeeper.run_turn'
        AND t.turn_id = j.args->>'turn_id' AND t.assistant IS NOT NULL
"""
"""PostgreSQL: the jobs waiting on a queue named by an assistant's fingerprint moved to its
name's (`ownership.queue_of`), where its workers of any version listen."""


def columns(owner: Owner | None, fate: Fate | None, jsonb: Callable[[Any], Any]) -> tuple[Any, ...]:
    """What `create_turn` writes of them: assistant, version, fate, approval timeout."""
    if owner is None and fate is None:
        return (None, None, None, None)
    return (
        None if owner is None else owner.assistant,
        None if owner is None else owner.version,
        None if fate is None else jsonb(fate.to_json()),
        None if fate is None else fate.approval_timeout,
    )


def turn_of(row: Sequence[Any], load: Callable[[Any], Any]) -> Turn:
    """The turn a `turn` row holds (its owner and fate columns last, `load` reading JSON)."""
    turn_id, conversation_id, question, version, offset, done, user, locale = row[:8]
    assistant, fingerprint, fate = row[8:11]
    return Turn(
        turn_id, conversation_id, question, version, offset, bool(done), user, locale,
        None if fingerprint is None else Owner(assistant, fingerprint),
        None if fate is None else Fate.from_json(dict(load(fate))),
    )  # fmt: skip


def turn_start(
    row: Sequence[Any], stored: dict[str, Any], bubbles: list[Any], load: Callable[[Any], Any]
) -> TurnStart:
    """What `start` hands back: the turn from `row` (`START`'s columns but the state and its
    count), and its stored state with its bubbles."""
    turn = turn_of((*row[:8], *row[10:]), load)
    return TurnStart(turn, PublishedState.from_json({**stored, "messages": bubbles}))


def owners(rows: Sequence[Sequence[Any]]) -> list[tuple[Owner, int]]:
    """The `owners` statement's rows: each assistant and its queued turns."""
    return [(Owner(str(a), str(f)), int(n)) for a, f, n in rows]


def show(d: Dialect, sql: Statements, append: Append, turn_id: str, key: str) -> Steps[bool]:
    """`Store.show_unclaimed`'s transaction: the queued turn's state one version on with
    `key` as its activity (the worker's `running` state clears it), and an `activity` event."""
    row = yield One(sql.unclaimed_state, (turn_id,))
    if row is None:
        return False
    version, bare = int(row[0]), dict(d.load(row[1]))
    if bare.get("activity") == key:
        return False
    bare.update(version=version + 1, activity=key)
    changed = yield Exec(sql.unclaimed_shown, (d.json(bare), version + 1, turn_id, version))
    if changed != 1:
        return False
    yield from append(turn_id, [(EventType.ACTIVITY, {"key": key})])
    return True
