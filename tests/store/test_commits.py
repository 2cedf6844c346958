"""Group commit in the SQLite store: concurrent calls share transactions, each keeps its result."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from turnkeeper.outcomes import Status
from turnkeeper.state import PublishedState, queued
from turnkeeper.store import Busy, FenceLost, held_by, new_token
from turnkeeper.store.sqlite import SqliteStore
from turnkeeper.usage import Usage


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "commits.db")
    await opened.migrate()
    yield opened
    await opened.close()


async def running_turns(store: SqliteStore, n: int) -> list[tuple[str, int]]:
    """`n` claimed turns: (turn id, fence) each."""
    turns = []
    for _ in range(n):
        conversation_id = await store.create_conversation(new_token()[1])
        turn = await store.create_turn(conversation_id, "q")
        fence = await store.claim(turn.turn_id, 30, "anthropic")
        assert fence is not None
        turns.append((turn.turn_id, fence))
    return turns


def committed_usage(store: SqliteStore) -> dict[str, str]:
    """Each turn's usage column as another connection sees it: only what was committed."""
    with sqlite3.connect(store.path) as db:
        return dict(db.execute("SELECT turn_id, usage FROM turns").fetchall())


def running(version: int) -> PublishedState:
    return replace(queued("t", "c", "q"), version=version, status=Status.RUNNING)


async def test_concurrent_writes_share_one_commit_and_are_all_committed(
    store: SqliteStore,
) -> None:
    turns = await running_turns(store, 200)
    commits, writes = store.commits.commits, store.commits.writes
    await asyncio.gather(
        *(
            store.record_usage(t, f, Usage(iterations=1, input_tokens=i))
            for i, (t, f) in enumerate(turns)
        )
    )
    assert store.commits.writes - writes == 200
    assert store.commits.commits - commits == 1, "queued in one loop step: one transaction"
    usage = committed_usage(store)
    for i, (turn_id, _) in enumerate(turns):
        assert f'"input_tokens":{i},' in usage[turn_id]


async def test_a_stale_writer_inside_a_batch_is_refused_and_the_others_commit(
    store: SqliteStore,
) -> None:
    (taken, fence), *others = await running_turns(store, 5)
    results = await asyncio.gather(
        store.take_over(taken, held_by(fence)),
        store.record_usage(taken, fence, Usage(iterations=9)),  # after the take-over: stale
        store.publish(taken, fence, running(2)),
        *(store.record_usage(t, f, Usage(iterations=3)) for t, f in others),
        return_exceptions=True,
    )
    recovery, stale_usage, stale_publish, *fine = results
    assert not isinstance(recovery, BaseException)
    assert recovery is not None
    assert recovery.fence == fence + 1
    assert isinstance(stale_usage, FenceLost)
    assert isinstance(stale_publish, FenceLost)
    assert fine == [None] * len(others)
    usage = committed_usage(store)
    assert '"iterations":9' not in usage[taken]
    assert all('"iterations":3' in usage[t] for t, _ in others)
    turn = await store.turn(taken)
    assert turn is not None
    assert turn.version == 1


async def test_a_busy_conversation_fails_alone_and_calls_keep_their_order(
    store: SqliteStore,
) -> None:
    conversation_id = await store.create_conversation(new_token()[1])
    first = await store.create_turn(conversation_id, "q")
    ((turn_id, fence),) = await running_turns(store, 1)
    results = await asyncio.gather(
        store.request_cancel(turn_id),
        store.create_turn(conversation_id, "again"),
        store.cancel_requested(turn_id),  # read after the write queued before it
        store.publish(turn_id, fence, running(2)),
        store.state_after(turn_id, 1),
        return_exceptions=True,
    )
    cancelled, busy, cancel_seen, published, state = results
    assert cancelled is None
    assert published is None
    assert isinstance(busy, Busy)
    assert cancel_seen is True
    assert isinstance(state, dict)
    assert state["version"] == 2
    assert await store.queued() == [first.turn_id]


async def test_close_waits_for_queued_writes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "close.db")
    await store.migrate()
    ((turn_id, fence),) = await running_turns(store, 1)
    write = asyncio.create_task(store.record_usage(turn_id, fence, Usage(iterations=4)))
    await asyncio.sleep(0)  # queued, not yet committed
    await store.close()
    assert write.done()
    assert write.exception() is None
    assert '"iterations":4' in committed_usage(store)[turn_id]
