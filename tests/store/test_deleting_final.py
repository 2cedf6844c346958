"""Deleting is final (issue 52, item 1): a conversation deleted while its turn runs leaves
no row in any table, whatever write the turn makes, before, after or during the delete.

Every kind of write a turn makes is tried after the delete (both stores: refused, nothing
written) and, on PostgreSQL, where two processes' transactions overlap, with the write's
transaction held open while the delete runs and the other way round (SQLite's writers
take turns: `BEGIN IMMEDIATE`). The rows left are counted in every table the schema has
(`tests.databases.rows_left`), so a table added later is covered."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import psycopg
import pytest
from tests.databases import rows_left
from tests.store.test_contract import claimed_turn, running, write
from tests.store.test_deleting_races import waits_for_a_lock

from turnkeeper.state import Approval
from turnkeeper.store import FenceLost, Store, held_by, open_store
from turnkeeper.store.dialect import Program
from turnkeeper.store.pooled import _run_on
from turnkeeper.store.records import Compacted, EventType, ModelCall, ResumeRecord, Taken
from turnkeeper.turn.lifecycle import unfinished_end
from turnkeeper.usage import Usage

T = TypeVar("T")

DELTA = (EventType.TEXT_DELTA, {"delta": "hello", "message": "m2"})
ANSWER = ({"id": "m1", "role": "user", "text": "hi"}, {"id": "m2", "text": "hello"})
NEXT = {"id": "m3", "text": "more"}


def every_row(version: int, *, done: bool = False) -> Any:
    """A checkpoint that writes a row into every table a turn's write reaches: the history,
    a bubble, a model call, an event and a compaction record."""
    shown = running(version, *ANSWER, NEXT, done=done)
    cp = write([{"role": "user", "content": "hi"}], shown)
    call = ModelCall(version, 0.0, 10.0, duration=0.1, stop_reason="end_turn", model="m")
    return replace(cp, calls=[call], events=[DELTA], compacted=Compacted(summary="s"))


async def waiting_turn(store: Store, turn_id: str, fence: int) -> None:
    """The turn waits for a person's yes on one tool use."""
    asked = (Approval("u1", "delete_file", {}),)
    await store.wait(turn_id, fence, ResumeRecord(asked=True, approvals=asked))
    state = running(2, *ANSWER).waiting(None, Usage(), (), asked)
    await store.checkpoint(turn_id, fence, write([], state, n=0))


async def taken(store: Store, turn_id: str, fence: int) -> int:
    """The turn taken over from its job (its fence then), as a crashed turn's is."""
    recovery = await store.take_over(turn_id, held_by(fence))
    assert recovery is not None
    return recovery.fence


async def requeue(store: Store, turn_id: str, fence: int) -> None:
    """A turn taken over (`taken`) queued again: its bubbles, its retraction."""
    state = running(2, *ANSWER).requeued()
    await store.requeue(turn_id, fence, ResumeRecord(asked=True), state, [DELTA])


async def ended(store: Store, turn_id: str, fence: int) -> None:
    def close(taken: Taken) -> Any:
        return replace(unfinished_end(taken), appended=[{"role": "user", "content": "hi"}])

    if await store.end_turn(turn_id, held_by(fence), close) is None:
        raise FenceLost(turn_id)


async def decided(store: Store, turn_id: str, fence: int) -> None:
    """A person's decision on the waiting turn (`waiting_turn`): its bubble, its state."""
    if await store.decide(turn_id, "u1", True) is None:
        raise FenceLost(turn_id)


async def prepared(store: Store, kind: str, turn_id: str, fence: int) -> int:
    """The fence the write of `kind` is made under: the job's, or its new holder's (a
    decision's turn waits for it first)."""
    if kind == "decision":
        await waiting_turn(store, turn_id, fence)
    return await taken(store, turn_id, fence) if kind == "requeue" else fence


Write = Callable[[Store, str, int], Awaitable[Any]]
WRITES: dict[str, Write] = {
    "event append": lambda s, t, f: s.append_events(t, f, [DELTA]),
    "usage": lambda s, t, f: s.record_usage(t, f, Usage(input_tokens=5)),
    "publish": lambda s, t, f: s.publish(t, f, running(3, *ANSWER, NEXT)),
    "checkpoint": lambda s, t, f: s.checkpoint(t, f, every_row(3)),
    "checkpoint alone": lambda s, t, f: s.checkpoint(t, f, write([{"a": 1}], running(3, NEXT))),
    "final write": lambda s, t, f: s.finish(t, f, every_row(3, done=True)),
    "waiting write": lambda s, t, f: s.wait(t, f, ResumeRecord(asked=True)),
    "requeue": requeue,
    "ended from the store": ended,
    "decision": decided,
}
"""Each kind of write of a turn: its holder's (the job's, its sweeper's), and a person's
decision on a turn that waits."""


async def test_each_write_makes_rows_so_each_counts(store_url: str) -> None:
    """The writes below reach every table a conversation has rows in: a delete that missed
    one of them would leave it."""
    store = await open_store(store_url)
    try:
        _, turn_id, fence = await claimed_turn(store)
        await WRITES["event append"](store, turn_id, fence)
        await WRITES["checkpoint"](store, turn_id, fence)
        await store.give_feedback(turn_id, "up", None)
        assert set(rows_left(store_url)) == {
            "conversations", "turns", "messages", "bubbles", "iterations", "turn_events",
            "compactions",
        }  # fmt: skip
    finally:
        await store.close()


@pytest.mark.parametrize("kind", list(WRITES))
async def test_a_write_after_the_delete_is_refused_and_writes_nothing(
    store_url: str, kind: str
) -> None:
    store = await open_store(store_url)
    try:
        conversation_id, turn_id, fence = await claimed_turn(store)
        await store.append_events(turn_id, fence, [(EventType.TURN_STARTED, {})])
        await store.checkpoint(turn_id, fence, every_row(2))
        fence = await prepared(store, kind, turn_id, fence)
        assert await store.delete_conversation(conversation_id, stop=True) is True
        with pytest.raises(FenceLost):
            await WRITES[kind](store, turn_id, fence)
        assert rows_left(store_url) == {}
        again = await store.create_conversation("h", conversation_id=conversation_id)
        assert await store.history(again) == []
        assert (await store.transcript(again)).messages == []
    finally:
        await store.close()


# ---- PostgreSQL: a write and the delete in flight together ------------------------


@dataclass
class Held:
    """An executor whose writes run in a transaction of a connection of its own, held open
    (its statements run, not committed) until `release` is set."""

    url: str
    inner: Any
    ran: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    pid: int = 0

    def read(self, program: Program[T], *, turn: bool = False) -> Awaitable[T]:
        return self.inner.read(program, turn=turn)  # type: ignore[no-any-return]

    async def write(self, program: Program[T], *, one: bool = False, turn: bool = False) -> T:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            self.pid = db.info.backend_pid
            async with db.transaction():
                value = await _run_on(db, program)
                self.ran.set()
                await self.release.wait()
        return value


@pytest.fixture
async def pg(postgres_database: str) -> AsyncIterator[tuple[Store, str]]:
    from tests.databases import fresh_schema

    with fresh_schema(postgres_database) as url:
        opened = await open_store(url)
        yield opened, url
        await opened.close()


async def held(store: Store, url: str, call: Callable[[Store], Awaitable[Any]]) -> Any:
    """`call` on `store` with its one write held open: the task, once the write has run,
    and the executor that holds it."""
    executor = Held(url, store.executor)  # type: ignore[attr-defined]
    plain = store.executor  # type: ignore[attr-defined]
    store.executor = executor  # type: ignore[attr-defined]
    try:
        task = asyncio.ensure_future(call(store))
        ran = asyncio.ensure_future(executor.ran.wait())
        await asyncio.wait([task, ran], timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if not executor.ran.is_set():
            ran.cancel()
            await task  # its failure, if it failed
            raise AssertionError("the write did not run")
    finally:
        store.executor = plain  # type: ignore[attr-defined]
    return task, executor


async def outcome(task: Awaitable[Any]) -> str:
    try:
        await task
    except FenceLost:
        return "refused"
    return "written"


@pytest.mark.postgres
@pytest.mark.parametrize("kind", list(WRITES))
async def test_a_write_in_flight_as_the_delete_begins_is_deleted_with_it(
    pg: tuple[Store, str], kind: str
) -> None:
    store, url = pg
    conversation_id, turn_id, fence = await claimed_turn(store)
    await store.checkpoint(turn_id, fence, every_row(2))
    fence = await prepared(store, kind, turn_id, fence)
    writing, executor = await held(store, url, lambda s: WRITES[kind](s, turn_id, fence))
    deleting = asyncio.ensure_future(store.delete_conversation(conversation_id, stop=True))
    await waits_for_a_lock(url, executor.pid)
    executor.release.set()
    assert await outcome(writing) == "written"
    assert await deleting is True
    assert rows_left(url) == {}


@pytest.mark.postgres
@pytest.mark.parametrize("kind", list(WRITES))
async def test_a_write_made_while_the_delete_is_in_flight_is_refused(
    pg: tuple[Store, str], kind: str
) -> None:
    store, url = pg
    conversation_id, turn_id, fence = await claimed_turn(store)
    await store.checkpoint(turn_id, fence, every_row(2))
    fence = await prepared(store, kind, turn_id, fence)
    deleting, executor = await held(
        store, url, lambda s: s.delete_conversation(conversation_id, stop=True)
    )
    writing = asyncio.ensure_future(WRITES[kind](store, turn_id, fence))
    await waits_for_a_lock(url, executor.pid)
    executor.release.set()
    assert await deleting is True
    assert await outcome(writing) == "refused"
    assert rows_left(url) == {}
