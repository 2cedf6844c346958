"""The one SQL store: every store call, written once for SQLite and PostgreSQL.

Each call is a program (`dialect.py`) of statements from `statements.py`, run by the
store's executor: SQLite's writer thread with group commit, or PostgreSQL's pool.
What differs between the databases is the dialect's (its SQL words, its JSON, its
fast write path) and the executor's; what a call does is here, once, so the two
stores cannot drift apart. `sqlite.py` and `postgres.py` open a store on their
database and add what only it has (SQLite's idle-poll memory, PostgreSQL's
cancel listener).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .. import state as published
from ..outcomes import TurnStatus
from ..state import PublishedState
from ..usage import Charge, Ledger, Limits, Usage
from ..wire import Message
from . import compactions, ledger, owned
from . import events as log
from .base import ALL, Close, Holder, new_id, recovered_state
from .cancellations import Cancellations
from .controls import Controls, bubbles_past, waiting_of
from .dialect import All, Companion, Dialect, Exec, Executor, Many, One, Steps, Write
from .polls import Polls
from .records import (
    Checkpoint,
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
    decision_made,
    transcript_page,
)
from .refusals import Busy, NoConversation, refused
from .statements import compiled


class SqlStore(compactions.Reads, Controls, Polls):
    """The store over one dialect and one executor (the module's docstring; `Controls`)."""

    def __init__(
        self, dialect: Dialect, executor: Executor, companions: Sequence[Companion] = ()
    ) -> None:
        self.dialect = dialect
        self.executor = executor
        self.sql = compiled(dialect)
        self.cancellations = Cancellations()
        self.hub = log.EventHub()
        """This process's subscribers to turns' events, woken once a write of them commits
        (and on PostgreSQL by the listener, for another process's writes)."""
        self.companions = list(companions)

    async def close(self) -> None:
        for companion in self.companions:
            await companion.close()
        await self.executor.close()

    # ---- migrations ----------------------------------------------------------

    async def migrate(self) -> None:
        dialect, sql = self.dialect, self.sql

        def steps() -> Steps[None]:
            if "migration_lock" in dialect.words:
                yield Exec(dialect.words["migration_lock"])
            yield Exec(sql.migrations_table)
            done = {n for (n,) in (yield All(sql.migrations_done))}
            for number, (name, text) in enumerate(dialect.migrations(), start=1):
                if number not in done:
                    for statement in dialect.script(text() if callable(text) else text):
                        yield Exec(statement)
                    yield Exec(sql.migrated, (number, name))

        await self.executor.alone(steps)

    async def pending(self) -> int | None:
        sql = self.sql

        def steps() -> Steps[int | None]:
            if (yield One(sql.has_migrations)) is None:
                return None
            (done,) = yield One(sql.migrations_count)
            return max(len(self.dialect.migrations()) - int(done), 0)

        return await self.executor.read(steps)

    # ---- the API's side ------------------------------------------------------

    async def create_conversation(
        self, token_hash: str, owner: str | None = None, conversation_id: str | None = None
    ) -> str:
        conversation_id = conversation_id or new_id("c")
        statement = Exec(self.sql.create_conversation, (conversation_id, token_hash, owner))
        await self.executor.write(statement, one=True)
        return conversation_id

    async def guard(self, conversation_id: str) -> Guard | None:
        row = await self._one(self.sql.guard, (conversation_id,))
        return None if row is None else Guard(*row)

    async def conversations(self, owner: str, limit: int = 50) -> list[ConversationSummary]:
        rows = await self._all(self.sql.conversations, (owner, max(limit, 0)))
        return [ConversationSummary(*row) for row in rows]

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
        turn_id, sql, d = new_id("t"), self.sql, self.dialect
        columns = owned.columns(owner, fate, d.jsonb)

        def steps() -> Steps[Turn]:
            found = yield One(sql.offset, (conversation_id,))
            if found is None:
                raise NoConversation(conversation_id)
            if limits is not None:
                yield from ledger.admit(sql, user, limits)
            (offset,) = found
            first = published.queued(turn_id, conversation_id, question, int(offset))
            usage = d.jsonb(first.usage.as_dict())
            row = (turn_id, conversation_id, question, d.json(first.bare()), offset, usage)
            yield Exec(sql.create_turn, (*row, user, locale, *columns))
            yield Exec(sql.first_bubble, (turn_id, d.json(first.messages[0].to_json())))
            made = (turn_id, conversation_id, question, 1, int(offset), False, user, locale)
            return Turn(*made, owner, fate)

        try:
            return await self.executor.write(steps)
        except self.dialect.unique_violation as e:
            raise Busy(f"conversation {conversation_id} has a turn that is not done") from e

    async def turn(self, turn_id: str) -> Turn | None:
        row = await self._one(self.sql.turn, (turn_id,))
        return None if row is None else owned.turn_of(row, self.dialect.load)

    async def owners(self) -> list[tuple[Owner, int]]:
        return owned.owners(await self._all(self.sql.owners, ()))

    async def open_turn(self, conversation_id: str) -> str | None:
        row = await self._one(self.sql.open_turn, (conversation_id,))
        return None if row is None else str(row[0])

    async def start(self, turn_id: str) -> TurnStart | None:
        def steps() -> Steps[TurnStart | None]:
            row = yield One(self.sql.start, (turn_id,))
            if row is None:
                return None
            bubbles = yield from self._bubbles(turn_id, row[9])
            return owned.turn_start(row, self.dialect.load(row[8]), bubbles, self.dialect.load)

        return await self.executor.read(steps)

    async def transcript(
        self, conversation_id: str, *, before: int | None = None, limit: int = ALL
    ) -> TranscriptPage:
        rows = await self._all(self.sql.paged, (conversation_id, before, before, limit))
        return transcript_page(rows, before, self.dialect.load)

    async def usages(self, conversation_id: str) -> list[Usage]:
        rows = await self._all(self.sql.usages, (conversation_id,))
        return [Usage.from_dict(self.dialect.load(u)) for (u,) in rows]

    async def request_cancel(self, turn_id: str) -> None:
        statement = Exec(self.sql.request_cancel, (turn_id,))
        await self.executor.write(statement, one=True)
        self.cancellations.wake(turn_id)

    async def counts(self) -> dict[str, int]:
        rows = await self._all(self.sql.counts, ())
        return {str(s): int(n) for s, n in rows}

    # ---- the worker's side ---------------------------------------------------

    async def history(self, conversation_id: str) -> list[Message]:
        rows = await self._all(self.sql.history, (conversation_id,))
        load = self.dialect.load
        return [load(b) for (b,) in rows]

    async def queued(self, older_than: float = 0.0, assistant: str | None = None) -> list[str]:
        rows = await self._all(self.sql.queued, (older_than, assistant, assistant))
        return [str(t) for (t,) in rows]

    async def unclaimed(
        self, after: float, timeout: float, assistant: str | None = None
    ) -> list[tuple[str, str | None, bool]]:
        rows = await self._all(self.sql.unclaimed, (timeout, after, assistant, assistant))
        return [(str(t), a, bool(late)) for t, a, late in rows]

    async def show_unclaimed(self, turn_id: str, key: str) -> bool:
        d = self.dialect
        shown: bool = await self.executor.write(
            lambda: owned.show(d, self.sql, self._append, turn_id, key)
        )
        if shown:
            self.hub.wake(turn_id)
        return shown

    async def claim(
        self, turn_id: str, lease: float, wire: str, assistant: str | None = None
    ) -> int | None:
        statement = One(self.sql.claim, (lease, wire, turn_id, assistant, assistant))
        row: Any = await self.executor.write(statement, one=True)
        return None if row is None else int(row[0])

    async def renew(self, turn_id: str, fence: int, lease: float) -> bool:
        statement = Exec(self.sql.renew, (lease, turn_id, fence))
        changed: int = await self.executor.write(statement, one=True)
        return changed == 1

    async def cancel_requested(self, turn_id: str) -> bool:
        # asked by the running turn before each call: it waits out an outage as its writes do
        statement = One(self.sql.cancel_requested, (turn_id,))
        row: Any = await self.executor.read(statement, turn=True)
        return row is not None and bool(row[0])

    async def wait_cancel(self, turn_id: str) -> None:
        await self.cancellations.wait(turn_id, lambda: self.cancel_requested(turn_id))

    async def record_usage(
        self, turn_id: str, fence: int, usage: Usage, charge: Charge | None = None
    ) -> None:
        params = (self.dialect.jsonb(usage.as_dict()), turn_id, fence)
        if charge is not None and self.dialect.one_statement_write:  # PostgreSQL's statement
            await ledger.record_usage(self.sql, self.executor, params, charge, turn_id, fence)
            return
        statement = Exec(self.sql.record_usage, params, charge)  # SQLite's charge: `Exec`
        if await self.executor.write(statement, one=True, turn=True) != 1:
            raise refused(turn_id, fence)

    async def publish(
        self, turn_id: str, fence: int, state: PublishedState, charge: Charge | None = None
    ) -> None:
        await self._write(Write.PUBLISH, turn_id, fence, state, None, charge)

    async def checkpoint(
        self, turn_id: str, fence: int, checkpoint: Checkpoint, charge: Charge | None = None
    ) -> bool:
        state = checkpoint.state
        return await self._write(Write.CHECKPOINT, turn_id, fence, state, checkpoint, charge)

    async def finish(
        self, turn_id: str, fence: int, final: Checkpoint, charge: Charge | None = None
    ) -> None:
        await self._write(Write.FINISH, turn_id, fence, final.state, final, charge)

    def _write(
        self,
        kind: Write,
        turn_id: str,
        fence: int,
        state: PublishedState,
        cp: Checkpoint | None,
        charge: Charge | None,
    ) -> Awaitable[bool]:
        """The dialect's fast write path, as a turn's write (an awaitable of the cancel flag);
        with the checkpoint's events, compaction record and charge, in the same transaction."""
        if cp is not None and (cp.events or cp.compacted is not None):
            return self._write_with_events(kind, turn_id, fence, state, cp, charge)
        program = self.dialect.write(kind, turn_id, fence, state, cp, True, charge)
        one = self.dialect.one_statement_write
        return self.executor.write(program, one=one, turn=True)

    async def _write_with_events(
        self,
        kind: Write,
        turn_id: str,
        fence: int,
        state: PublishedState,
        cp: Checkpoint,
        charge: Charge | None,
    ) -> bool:
        """A write and its events in one transaction (none of it if the write is refused);
        the turn's subscribers woken once it is committed."""
        write = self.dialect.write(kind, turn_id, fence, state, cp, False, charge)

        def steps() -> Steps[bool]:
            cancel = yield from write()
            if cp.events:
                yield from self._append(turn_id, cp.events)
            yield from compactions.added(self.dialect, turn_id, cp.compacted)
            return cancel

        cancel: bool = await self.executor.write(steps, turn=True)
        self.hub.wake(turn_id)
        return cancel

    async def iterations(self, turn_id: str) -> list[dict[str, Any]]:
        rows = await self._all(self.sql.iterations, (turn_id,))
        load = self.dialect.load
        return [dict(load(r)) for (r,) in rows]

    # ---- the event log (events.py) -------------------------------------------

    async def append_events(self, turn_id: str, fence: int, events: Sequence[NewEvent]) -> int:
        def steps() -> Steps[int]:
            if (yield One(self.sql.held, (turn_id, fence))) is None:
                raise refused(turn_id, fence)
            return (yield from self._append(turn_id, events))

        last: int = await self.executor.write(steps, turn=True)
        self.hub.wake(turn_id)
        return last

    async def events_after(
        self, turn_id: str, after: int, limit: int = log.PAGE, size: int = log.PAGE_BYTES
    ) -> list[TurnEvent]:
        rows = await self._all(self.sql.events_after, (turn_id, after, limit, size))
        return log.read(rows, self.dialect.load)

    def subscribe(self, turn_id: str) -> AbstractContextManager[asyncio.Event]:
        return self.hub.subscribed(turn_id)

    async def forget_events(self, older_than: float) -> int:
        forgotten: int = await self.executor.write(Exec(self.sql.forget_events, (older_than,)))
        return forgotten

    def _append(self, turn_id: str, events: Sequence[NewEvent]) -> Steps[int]:
        """Insert `events` numbered on from the turn's last (on PostgreSQL, every process
        told at commit), and delete the text of the answers they retract as refused
        (`events.DROPPED`); the last number."""
        (last,) = yield One(self.sql.last_event, (turn_id,))
        yield Many(self.sql.add_event, log.rows(turn_id, int(last), events, self.dialect.json))
        for message in log.dropped(events):
            yield Exec(self.sql.dropped, (turn_id, message))
        end = int(last) + len(events)
        if self.sql.events_woken:
            yield One(self.sql.events_woken, (f"{turn_id}:{end}",))
        return end

    # ---- the sweeper's side --------------------------------------------------

    async def expired(self) -> list[str]:
        rows = await self._all(self.sql.expired, ())
        return [str(t) for (t,) in rows]

    async def take_over(self, turn_id: str, holder: Holder, lease: float = 30.0) -> Recovery | None:
        return await self.executor.write(lambda: self._take_over(turn_id, holder, lease))

    def _take_over(self, turn_id: str, holder: Holder, lease: float) -> Steps[Recovery | None]:
        d = self.dialect
        condition = d.sql(holder.condition(d.words["now"], "?"))
        row = yield One(self.sql.take_over.format(condition=condition), (lease, turn_id,
                        *holder.params()))  # fmt: skip
        if row is None:
            return None
        new_fence, conversation_id, question, wire, version, offset, state, usage, count, mark = row
        last = yield One(self.sql.last_message, (turn_id,))
        bubbles = yield from self._bubbles(turn_id, count)
        recovered = recovered_state(d.load(state), bubbles, version)
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
            last_message=d.load(last[0]) if last else None,
            usage=Usage.from_dict(d.load(usage)),
        )

    async def end_turn(
        self, turn_id: str, holder: Holder, close: Close, lease: float = 30.0
    ) -> Ended | None:
        ended: Ended | None = await self.executor.write(
            lambda: self._end_turn(turn_id, holder, close, lease), turn=True
        )
        if ended is not None and ended.final.events:
            self.hub.wake(turn_id)
        return ended

    def _end_turn(
        self, turn_id: str, holder: Holder, close: Close, lease: float
    ) -> Steps[Ended | None]:
        """Take over, read, compute the end, write it: one transaction."""
        recovery = yield from self._take_over(turn_id, holder, lease)
        if recovery is None:
            return None
        resume, cancel = yield One(self.sql.resume_and_cancel, (turn_id,))
        record = None if resume is None else ResumeRecord.from_json(dict(self.dialect.load(resume)))
        streamed = log.read((yield All(self.sql.streamed, (turn_id,))), self.dialect.load)
        taken = Taken(recovery, record, bool(cancel), streamed)
        final = close(taken)
        fence = recovery.fence
        yield from self.dialect.write(
            Write.FINISH, turn_id, fence, final.state, final, False, None
        )()
        if final.events:
            yield from self._append(turn_id, final.events)
        return Ended(taken, final)

    # ---- waiting and resuming ------------------------------------------------

    async def wait(self, turn_id: str, fence: int, record: ResumeRecord) -> None:
        params = (self.dialect.jsonb(record.to_json()), turn_id, fence)
        statement = Exec(self.sql.park, params)  # a turn's write: it waits out an outage
        if await self.executor.write(statement, one=True, turn=True) != 1:
            raise refused(turn_id, fence)

    async def resume_record(self, turn_id: str) -> ResumeRecord | None:
        row = await self._one(self.sql.resume_record, (turn_id,))
        if row is None or row[0] is None:
            return None
        return ResumeRecord.from_json(dict(self.dialect.load(row[0])))

    async def decide(
        self, turn_id: str, tool_use_id: str, approved: bool
    ) -> tuple[TurnStatus, int] | None:
        sql, d = self.sql, self.dialect

        def steps() -> Steps[tuple[TurnStatus, int] | None]:
            row = yield One(sql.waiting_turn, (turn_id,))
            if row is None or row[0] is None:
                return None
            record, stored = yield from waiting_of(d, self._bubbles(turn_id, row[2]), row)
            made = decision_made(record, stored, tool_use_id, approved)
            if made is None:
                return None
            record, state = made
            resume, bare, status = d.jsonb(record.to_json()), d.json(state.bare()), state.status
            count = yield from bubbles_past(d, sql.decision_bubble, turn_id, state, row[2])
            yield Exec(sql.decided, (resume, bare, state.version, status, count, status, turn_id))
            return status, state.version

        return await self.executor.write(steps)

    async def requeue(
        self,
        turn_id: str,
        fence: int,
        record: ResumeRecord,
        state: PublishedState,
        events: Sequence[NewEvent] = (),
    ) -> None:
        d = self.dialect
        publish = d.write(Write.PUBLISH, turn_id, fence, state, None, False, None)

        def steps() -> Steps[None]:
            yield from publish()
            changed = yield Exec(self.sql.requeued, (d.jsonb(record.to_json()), turn_id, fence))
            if changed != 1:
                raise refused(turn_id, fence)
            if events:
                yield from self._append(turn_id, events)

        await self.executor.write(steps, turn=True)
        if events:
            self.hub.wake(turn_id)

    async def waiting(self, older_than: float) -> list[str]:
        rows = await self._all(self.sql.waiting, (older_than,))
        return [str(t) for (t,) in rows]

    # ---- the ledger (ledger.py) ----------------------------------------------

    async def ledger(self, user: str | None, day: str, window: float = 60.0) -> Ledger:
        return await ledger.ledger(self.sql, self.executor, user, day, window)

    # ---- the statements' shapes ----------------------------------------------

    def _one(self, sql: str, params: Sequence[Any]) -> Awaitable[Any]:
        return self.executor.read(One(sql, params))

    def _all(self, sql: str, params: Sequence[Any]) -> Awaitable[Any]:
        return self.executor.read(All(sql, params))
