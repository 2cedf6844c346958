"""What every store is: the protocol, and what both dialects share.

The records a store writes and hands back (`Turn`, `Checkpoint`, `Recovery`, …)
are `records.py`'s. The store imports those records, the state, usage and wire
types, the errors and credentials' redaction, and nothing of the hooks, the
trace, the loop, the job or a provider (`tests/test_imports.py` holds it so). Every call
of the protocol is written once, in `sql.py`; the SQLite and PostgreSQL modules import
it and nothing of each other's.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..outcomes import TurnStatus
from ..state import PublishedState
from ..usage import Charge, Ledger, Limits, Usage
from ..wire import Message
from .controlled import ReaderControls
from .records import (
    Checkpoint,
    Compacted,
    ConversationSummary,
    Ended,
    Fate,
    Guard,
    NewEvent,
    Owner,
    Recovery,
    ResumeRecord,
    Taken,
    TranscriptPage,
    Turn,
    TurnEvent,
    TurnStart,
)

Close = Callable[[Taken], Checkpoint]
"""The final write of a turn taken over, computed from what was read (pure: it may run
inside the store's transaction, on its thread)."""


@dataclass(frozen=True, slots=True)
class Holder:
    """Whom `take_over` takes a turn from: the claim that holds `fence`, an expired
    lease (`EXPIRED`), or nobody yet: a turn never claimed (`UNCLAIMED`)."""

    fence: int | None = None
    unclaimed: bool = False
    waiting: bool = False
    """A turn that stopped its job to wait for a person (`WAITING`): nobody holds it."""

    def condition(self, now: str, param: str) -> str:
        """The SQL that picks the turn in this position (both dialects)."""
        if self.waiting:
            return "status = 'waiting'"
        if self.unclaimed:
            return "status = 'queued'"
        if self.fence is None:
            return f"status = 'running' AND lease_expires < {now}"
        return f"fence = {param}"

    def params(self) -> tuple[int, ...]:
        """The SQL parameters `condition()` refers to: the fence, if it names one."""
        return () if self.fence is None else (self.fence,)


EXPIRED = Holder()
UNCLAIMED = Holder(unclaimed=True)
WAITING = Holder(waiting=True)


def held_by(fence: int) -> Holder:
    """The holder that owns the turn under `fence`: the job that claimed it, taking it over to
    finalise it itself."""
    return Holder(fence)


ALL = 2**62
"""A transcript's `limit` that no conversation reaches."""


class Store(ReaderControls, Protocol):
    """Everything a turn, its job, the sweeper and the HTTP API keep."""

    async def migrate(self) -> None:
        """Apply the numbered migrations not yet recorded in the database, in order."""

    async def pending(self) -> int | None:
        """How many migrations `migrate()` would apply, without applying any; None when the
        database holds no turnkeeper store at all."""
        ...

    async def close(self) -> None:
        """Close the store's connections (and, on PostgreSQL, its listening one)."""
        ...

    # ---- the API's side ----------------------------------------------------

    async def create_conversation(
        self, token_hash: str, owner: str | None = None, conversation_id: str | None = None
    ) -> str:
        """A new conversation guarded by the token with this hash, owned by `owner`; its id.
        With `conversation_id` (an id the client chose: AG-UI's `threadId`, the AI SDK's
        chat `id`), nothing is written if a conversation already has that id: the caller
        reads its guard to learn whose it is."""
        ...

    async def guard(self, conversation_id: str) -> Guard | None:
        """The conversation's token hash and owner; None if there is no such conversation."""
        ...

    async def conversations(self, owner: str, limit: int = 50) -> list[ConversationSummary]:
        """The owner's conversations, newest first (then last inserted first), at most `limit`."""
        ...

    async def create_turn(
        self,
        conversation_id: str,
        question: str,
        *,
        user: str | None = None,
        locale: str = "en",
        limits: Limits | None = None,
        owner: Owner | None = None,
        fate: Fate | None = None,
    ) -> Turn:
        """Queue a turn (version 1, `queued`) asked by `user` in `locale`, for the assistant
        `owner`, with its `fate`; `NoConversation` if the conversation is gone (deleted, by
        this process or another), decided in the transaction that would create the turn;
        `Busy` while the conversation has one not done; with `limits`, `OverLimit` if the
        asker's minute is full or day used up, decided in the same transaction (ledger.py)."""
        ...

    async def owners(self) -> list[tuple[Owner, int]]:
        """Each assistant (name and version) that has queued turns, and how many, most first."""
        ...

    async def turn(self, turn_id: str) -> Turn | None:
        """The turn as stored, or None if there is no such turn."""
        ...

    async def open_turn(self, conversation_id: str) -> str | None:
        """The id of the conversation's turn that is not done (queued or running), if any."""
        ...

    async def start(self, turn_id: str) -> TurnStart | None:
        """The turn and its state as last published, read together: what the job runs a
        claimed turn from. None if there is no such turn."""
        ...

    async def turn_guard(self, turn_id: str) -> tuple[str, Guard] | None:
        """The turn's conversation and that conversation's guard, read together; None if
        there is no such turn. Both are the turn's for as long as it exists (its row goes
        with its conversation's), so they may be remembered by turn."""
        ...

    async def poll(self, turn_id: str, after: int) -> dict[str, Any] | None:
        """The published state if its version is above `after`, else None; `NoTurn` if
        there is no such turn (its conversation was deleted): the API's poll, one read."""
        ...

    async def state_after(self, turn_id: str, after: int) -> dict[str, Any] | None:
        """The published state if its version is above `after`, else None (None too if
        there is no such turn)."""
        ...

    async def transcript(
        self, conversation_id: str, *, before: int | None = None, limit: int = ALL
    ) -> TranscriptPage:
        """The turns' published messages, oldest first, each with its `turn_id` (what a
        rating is given to): the last `limit` of those before message `before` (counted
        from 0, the oldest; None: the newest), all by default."""
        ...

    async def usages(self, conversation_id: str) -> list[Usage]:
        """Each turn's usage as last recorded, oldest first."""
        ...

    async def request_cancel(self, turn_id: str) -> None:
        """Set the turn's cancel flag (if it is not done) and wake its waiters: in this process
        at once, and on PostgreSQL in every process, by NOTIFY (docs/design.md §4)."""
        ...

    async def counts(self) -> dict[str, int]:
        """How many turns are in each status."""
        ...

    # ---- the worker's side -------------------------------------------------

    async def history(self, conversation_id: str) -> list[Message]:
        """The conversation's history in its wire format, oldest first."""
        ...

    async def context(self, conversation_id: str) -> tuple[list[Message], Compacted | None]:
        """The conversation's history, oldest first, and its newest compaction record (None:
        never compacted), read together: a turn's requests are built from both."""
        ...

    async def queued(self, older_than: float = 0.0, assistant: str | None = None) -> list[str]:
        """Turns waiting to be claimed (for at least `older_than` seconds), oldest first;
        with `assistant`, only those of the assistant of that name (or of none)."""
        ...

    async def unclaimed(
        self, after: float, timeout: float, assistant: str | None = None
    ) -> list[tuple[str, str | None, bool]]:
        """Queued turns no worker claimed for `after` seconds while none of their
        assistant's runs (with `assistant`, only that one's, or of none), oldest first:
        each turn, its assistant's name, and whether it waited past `timeout`."""
        ...

    async def show_unclaimed(self, turn_id: str, key: str) -> bool:
        """Publish a queued turn's state one version on with the notice `key` as its
        activity, and an `activity` event; False if it shows it already or is not queued."""
        ...

    async def claim(
        self, turn_id: str, lease: float, wire: str, assistant: str | None = None
    ) -> int | None:
        """Move a queued turn to running under a lease; its fence, or None if not queued or,
        with `assistant`, if an assistant of another name queued it."""
        ...

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool:
        """Renew the lease of a turn held under `fence`: it expires `lease` seconds from now.
        False if the turn was taken over (its fence moved on) or is done."""
        ...

    async def cancel_requested(self, turn_id: str) -> bool:
        """Whether the turn's cancel flag is set."""
        ...

    async def wait_cancel(self, turn_id: str) -> None:
        """Return once the turn's cancel is requested (at once if it was already): woken
        within a second by a cancel from this process or, on PostgreSQL, from any other."""
        ...

    async def record_usage(
        self, turn_id: str, fence: int, usage: Usage, charge: Charge | None = None
    ) -> None:
        """Store the turn's usage so far, as soon as a model call returns; `FenceLost` if the
        fence is not the turn's. A `charge` (this and the next three writes) is added to
        the ledger in the same transaction, and the day's totals read back into it."""
        ...

    async def publish(
        self, turn_id: str, fence: int, state: PublishedState, charge: Charge | None = None
    ) -> None:
        """Publish a state that is no checkpoint: the turn's `running` state, before its
        first checkpoint. (A turn is recovered from its row as last written, so a state
        published after a checkpoint would be the one recovered; the runtime never
        publishes one.)"""
        ...

    async def checkpoint(
        self, turn_id: str, fence: int, checkpoint: Checkpoint, charge: Charge | None = None
    ) -> bool:
        """One iteration's write, in one transaction: append the new history messages,
        publish its state, record its usage and model calls, and mark the turn's row
        as checkpointed (what `take_over` recovers).

        Returns the turn's cancel flag as that transaction read it. The loop awaits
        nothing between a checkpoint and its next stop check, so the flag is as fresh as
        a read of its own would be, and a cancel from any process is heard before the
        next model call without one."""
        ...

    async def finish(
        self, turn_id: str, fence: int, final: Checkpoint, charge: Charge | None = None
    ) -> None:
        """The one final write: history tail, final state, usage, model calls; clears the
        turn's checkpointed mark and cancel flag."""
        ...

    async def ledger(self, user: str | None, day: str, window: float = 60.0) -> Ledger:
        """The turns `user` asked in the last `window` seconds (None: every turn, an
        assistant without sign-in) and their subject's ledger for the UTC `day`."""
        ...

    async def iterations(self, turn_id: str) -> list[dict[str, Any]]:
        """One record per model call of the turn, oldest first (`ModelCall.summary()`, as
        each checkpoint and the final write stored it)."""
        ...

    # ---- the event log (events.py) -----------------------------------------

    async def append_events(self, turn_id: str, fence: int, events: Sequence[NewEvent]) -> int:
        """Write `events` numbered on from the turn's last, under `fence` (`FenceLost` if
        it is not the turn's; a turn already done still takes its own holder's events);
        the last number written. The subscribers are woken once it is committed."""
        ...

    async def events_after(
        self, turn_id: str, after: int, limit: int = 500, size: int = 192 * 1024
    ) -> list[TurnEvent]:
        """The turn's events numbered above `after`, in order, at most `limit`, and no more
        once their bodies passed `size` bytes (the first is always read): a page's memory
        is bounded however large the events."""
        ...

    def subscribe(self, turn_id: str) -> AbstractContextManager[asyncio.Event]:
        """An event set whenever the turn writes events, while the context is open (on
        PostgreSQL, whichever process writes them)."""
        ...

    async def forget_events(self, older_than: float) -> int:
        """Delete the events of turns that ended more than `older_than` seconds ago; how
        many were deleted."""
        ...

    # ---- the sweeper's side ------------------------------------------------

    async def expired(self) -> list[str]:
        """Running turns whose lease has expired."""
        ...

    async def take_over(self, turn_id: str, holder: Holder, lease: float = 30.0) -> Recovery | None:
        """Bump the fence of a turn to finalise it, from `holder`. None if the turn is
        done or not in that position.

        The new holder gets `lease` seconds; if it dies too, the sweeper tries again."""
        ...

    async def end_turn(
        self, turn_id: str, holder: Holder, close: Close, lease: float = 30.0
    ) -> Ended | None:
        """Take the turn over from `holder` and end it, in one transaction: read its row as
        `take_over` does, its resume record and cancel flag (a `Taken`), and make the final
        write `close` computes of them under the new fence. None, with nothing written, if
        the turn is done or not in that position: of several parties ending one turn, one
        ends it and the others learn it was already decided. On PostgreSQL it waits out an
        outage as a turn's writes do."""
        ...

    # ---- waiting and resuming (approvals.py) -------------------------------

    async def wait(self, turn_id: str, fence: int, record: ResumeRecord) -> None:
        """Keep the resume record of a turn about to wait for a person, and when its wait
        began; the checkpoint that follows publishes it `waiting` (`FenceLost` if not held)."""
        ...

    async def resume_record(self, turn_id: str) -> ResumeRecord | None:
        """The turn's resume record; None if it never waited nor was resumed."""
        ...

    async def decide(
        self, turn_id: str, tool_use_id: str, approved: bool
    ) -> tuple[TurnStatus, int] | None:
        """Record a person's decision on a use the waiting turn holds, in one transaction,
        publishing the state one version on: `(Status.WAITING, version)` while other
        uses wait, `(Status.QUEUED, version)` once all are decided (the caller enqueues
        it). None if the turn is not waiting for that use."""
        ...

    async def requeue(
        self,
        turn_id: str,
        fence: int,
        record: ResumeRecord,
        state: PublishedState,
        events: Sequence[NewEvent] = (),
    ) -> None:
        """Queue a turn taken over (`fence`) again, with its resume record, `state`
        (`queued`, one version on) and `events` (what its run streamed and never showed,
        retracted): a crashed turn that resumes. One transaction under the fence:
        `FenceLost`, and nothing changed, if the turn is not held under it."""
        ...

    async def waiting(self, older_than: float) -> list[str]:
        """Turns that have waited for a person for more than `older_than` seconds."""
        ...


def new_token() -> tuple[str, str]:
    """A bearer token and the hash the store keeps of it."""
    token = secrets.token_urlsafe(32)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    """The hash the store keeps of a bearer token (SHA-256, hex); never the token itself."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_id(prefix: str) -> str:
    """A new random id with its kind's prefix: `t_…` for a turn, `c_…` for a conversation."""
    return f"{prefix}_{secrets.token_hex(10)}"


# ---- the schema both dialects share: DDL templates of the migrations -------------

FIRST_SCHEMA = """
    CREATE TABLE conversations (
        conversation_id {text} PRIMARY KEY,
        token_hash {text} NOT NULL,
        created {time} NOT NULL{now_default}
    );
    CREATE TABLE turns (
        seq {serial},
        turn_id {text} NOT NULL UNIQUE,
        conversation_id {text} NOT NULL REFERENCES conversations (conversation_id),
        question {text} NOT NULL,
        status {text} NOT NULL,
        done {boolean} NOT NULL DEFAULT {false},
        version {integer} NOT NULL,
        state {json} NOT NULL,
        n_messages {integer} NOT NULL,
        message_offset {integer} NOT NULL,
        fence {integer} NOT NULL DEFAULT 0,
        lease_expires {seconds},
        wire {text},
        cancel {boolean} NOT NULL DEFAULT {false},
        usage {json} NOT NULL DEFAULT '{{}}',
        created {time} NOT NULL{now_default}
    );
    CREATE UNIQUE INDEX turns_one_open ON turns (conversation_id) WHERE {not_done};
    CREATE INDEX turns_leases ON turns (lease_expires) WHERE status = 'running';
    CREATE TABLE messages (
        seq {serial},
        conversation_id {text} NOT NULL,
        turn_id {text} NOT NULL,
        body {json} NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
    CREATE INDEX messages_by_turn ON messages (turn_id, seq);
    CREATE TABLE bubbles (
        turn_id {text} NOT NULL,
        n {integer} NOT NULL,
        body {json} NOT NULL,
        PRIMARY KEY (turn_id, n)
    );
    CREATE TABLE checkpoints (
        turn_id {text} PRIMARY KEY,
        iteration {integer} NOT NULL,
        state {json} NOT NULL,
        n_messages {integer} NOT NULL
    )
"""
"""Migration 1 on both: conversations, turns, history, published messages, checkpoints
(`{serial}` is a sequence column that is the primary key)."""
ITERATIONS_TABLE = """
    CREATE TABLE iterations (
        turn_id {text} NOT NULL,
        n integer NOT NULL,
        record {json} NOT NULL,
        PRIMARY KEY (turn_id, n)
    )
"""
CHECKPOINTS_INTO_TURNS = """
    ALTER TABLE turns ADD COLUMN checkpointed {boolean} NOT NULL DEFAULT {false};
    UPDATE turns SET checkpointed = {true},
        state = (SELECT c.state FROM checkpoints c WHERE c.turn_id = turns.turn_id),
        n_messages = (SELECT c.n_messages FROM checkpoints c WHERE c.turn_id = turns.turn_id)
        WHERE done = {false} AND turn_id IN (SELECT turn_id FROM checkpoints);
    DROP TABLE checkpoints
"""
"""The turn's row holds what the `checkpoints` row held (the state and its message count,
written by every checkpoint together): a flag says a checkpoint wrote it. An unfinished
turn's checkpoint is carried over, so a store upgraded mid-turn recovers it."""
OWNERS = """
    ALTER TABLE conversations ADD COLUMN owner {text};
    ALTER TABLE turns ADD COLUMN asked_by {text};
    ALTER TABLE turns ADD COLUMN locale {text} NOT NULL DEFAULT 'en';
    CREATE INDEX conversations_by_owner ON conversations (owner, created{inserted})
        WHERE owner IS NOT NULL;
    CREATE INDEX turns_by_conversation ON turns (conversation_id, seq)
"""
"""Who owns a conversation and who asked a turn in which locale (existing rows: no owner,
no user, 'en'), indexed for an owner's conversations and each one's first turn."""
RESUMES = """
    ALTER TABLE turns ADD COLUMN resume {json};
    ALTER TABLE turns ADD COLUMN waiting_since {time};
    ALTER TABLE turns ADD COLUMN requeued {time};
    CREATE INDEX turns_waiting ON turns (waiting_since) WHERE status = 'waiting'
"""
"""A turn that waits and resumes (approvals.py): its resume record, when its wait for a
person began, and when it was queued again (the unheld sweep counts from then)."""


def recovered_state(
    stored: dict[str, Any], bubbles: list[dict[str, Any]], version: int
) -> PublishedState:
    """The state `take_over` hands back: stored JSON, its bubbles, the highest version."""
    state = PublishedState.from_json({**stored, "messages": bubbles})
    return replace(state, version=max(version, state.version))
