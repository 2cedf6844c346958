"""The turn's event log in the store: its table, its rows, and the wake-ups of its readers
(its statements are `statements.py`'s, its calls `sql.py`'s).

Every event a turn writes (`records.EventType`) is a row of `turn_events`,
numbered per turn from 1 across every run of the turn. A write
that the turn makes anyway (a checkpoint, the final write, the wait) carries
the events since the last one in its own transaction; only coalesced text
deltas make writes of their own (`append_events`). The writer assigns the next
numbers under the turn's fence, like every write of a running turn.

A refused answer is not kept (`DROPPED`): the write that retracts it deletes the text
deltas streamed into its bubble, so a turn's numbers may skip; a reader resuming after
any number reads on from the next one there is.

Readers (the HTTP stream) wait here, not in a polling loop: `EventHub` holds,
per turn, the events of this process's subscribers, and the store wakes them
once a write is committed. On PostgreSQL the writing transaction also sends
`NOTIFY turnkeeper_events, '<turn id>:<seq>'`, and the one listening
connection of each process (`listener.py`) wakes that process's subscribers;
after a reconnection it wakes them all, in case a notification was missed. A
wake-up is only ever a reason to read again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ResponseTooLarge
from .records import EventType, NewEvent, TurnEvent

CHANNEL = "turnkeeper_events"
"""The PostgreSQL channel the writers of events NOTIFY, `<turn id>:<seq>`."""
PAGE = 500
"""Events `events_after` reads at most at once."""
DROPPED = frozenset({ResponseTooLarge.key})
"""The keys of retractions whose text is deleted with them, in the retraction's write: an
answer refused for its size (`errors.ai_too_large`) keeps no part of it in any table."""
PAGE_BYTES = 192 * 1024
"""Bytes of event bodies `events_after` reads at once, at most (past its first event)."""
RETENTION = 7 * 24 * 3600.0
"""Seconds a turn's events are kept after it ended, by default."""

EVENTS_TABLE = """
    CREATE TABLE turn_events (
        turn_id {text} NOT NULL,
        seq integer NOT NULL,
        type {text} NOT NULL,
        body {json} NOT NULL,
        at {time} NOT NULL DEFAULT {now},
        PRIMARY KEY (turn_id, seq)
    );
    CREATE INDEX turn_events_ended ON turn_events (at) WHERE type = 'turn.ended'
"""
"""The event log: one row per event; the index finds the turns whose retention passed."""


def rows(turn_id: str, last: int, events: Sequence[NewEvent], dump: Any) -> list[tuple[Any, ...]]:
    """The rows of `events` numbered on from `last`, their bodies encoded by `dump`."""
    return [(turn_id, last + i, str(kind), dump(body)) for i, (kind, body) in enumerate(events, 1)]


def dropped(events: Sequence[NewEvent]) -> list[str]:
    """The bubbles whose streamed text `events` retract as refused (`DROPPED`)."""
    return [
        str(body["message"])
        for kind, body in events
        if kind is EventType.TEXT_RETRACTED and body.get("key") in DROPPED
    ]


def read(found: Sequence[tuple[Any, Any, Any]], load: Any) -> list[TurnEvent]:
    """The events of `events_after`'s rows (seq, type, body), their bodies decoded by
    `load` (a body the driver decoded is kept)."""
    return [
        TurnEvent(int(seq), EventType(kind), body if isinstance(body, dict) else load(body))
        for seq, kind, body in found
    ]


class EventHub:
    """Turn ids to the wake-up events of this process's subscribers to their event log."""

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def wake(self, turn_id: str) -> None:
        """The turn wrote events: its subscribers read again."""
        for event in self._waiting.get(turn_id, ()):
            event.set()

    def wake_all(self) -> None:
        """Every subscriber reads again (a notification may have been missed)."""
        for turn_id in list(self._waiting):
            self.wake(turn_id)

    @contextlib.contextmanager
    def subscribed(self, turn_id: str) -> Iterator[asyncio.Event]:
        """An event set at each write of the turn's events while the body runs: clear it,
        read, then wait on it, and no write is missed."""
        event = asyncio.Event()
        waiters = self._waiting.setdefault(turn_id, set())
        waiters.add(event)
        try:
            yield event
        finally:
            waiters.discard(event)
            if not waiters and self._waiting.get(turn_id) is waiters:
                del self._waiting[turn_id]

    def subscribers(self) -> int:
        """How many subscribers this process has, over all turns."""
        return sum(len(w) for w in self._waiting.values())
