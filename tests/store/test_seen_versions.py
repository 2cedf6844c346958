"""Idle polls on SQLite answered from memory, and never older than the database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.store.test_contract import claimed_turn

from turnkeeper.state import PublishedState
from turnkeeper.store.sqlite import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "polls.db")
    await opened.migrate()
    yield opened
    await opened.close()


async def publish_running(store: SqliteStore, turn_id: str, fence: int) -> int:
    """Publish the turn's next version from what is stored; that version."""
    stored = await store.state_after(turn_id, 0)
    assert stored is not None
    state = PublishedState.from_json(stored).running()
    await store.publish(turn_id, fence, state)
    return state.version


async def test_idle_polls_do_not_go_to_the_database_thread(store: SqliteStore) -> None:
    _, turn_id, _ = await claimed_turn(store)
    assert await store.state_after(turn_id, 1) is None  # read once, remembered
    reads = store.commits.reads
    for _ in range(20):
        assert await store.state_after(turn_id, 1) is None
    assert store.commits.reads == reads


async def test_a_write_by_this_store_is_seen_by_the_next_poll(store: SqliteStore) -> None:
    _, turn_id, fence = await claimed_turn(store)
    assert await store.state_after(turn_id, 1) is None
    version = await publish_running(store, turn_id, fence)
    state = await store.state_after(turn_id, 1)
    assert state is not None
    assert state["version"] == version == 2


async def test_a_write_by_another_process_is_seen_by_the_next_poll(
    store: SqliteStore, tmp_path: Path
) -> None:
    """Another store on the same file (as another process would be) publishes: the first
    store's remembered version is dropped, not served."""
    _, turn_id, fence = await claimed_turn(store)
    assert await store.state_after(turn_id, 1) is None
    assert await store.state_after(turn_id, 1) is None  # answered from memory
    other = SqliteStore(store.path)
    try:
        version = await publish_running(other, turn_id, fence)
    finally:
        await other.close()
    state = await store.state_after(turn_id, 1)
    assert state is not None
    assert state["version"] == version == 2
    assert await store.state_after(turn_id, 2) is None


async def test_an_unknown_turn_is_not_remembered(store: SqliteStore) -> None:
    reads = store.commits.reads
    assert await store.state_after("t_nobody", 0) is None
    assert await store.state_after("t_nobody", 0) is None
    assert store.commits.reads == reads + 2


async def test_one_look_at_the_database_serves_the_polls_of_one_pass(store: SqliteStore) -> None:
    _, turn_id, _ = await claimed_turn(store)
    assert await store.state_after(turn_id, 1) is None
    await asyncio.sleep(0)  # the next pass: that look is no longer fresh
    store.seen.as_of()
    assert store.seen._db is not None
    looks: list[str] = []
    store.seen._db.set_trace_callback(looks.append)
    await asyncio.sleep(0)
    answers = await asyncio.gather(*(store.state_after(turn_id, 1) for _ in range(50)))
    assert answers == [None] * 50
    assert looks == ["PRAGMA data_version"]
