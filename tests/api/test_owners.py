"""The API remembers a turn's conversation and guard (read together), never a miss, and
nothing by conversation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from turnkeeper.api.owners import Owners
from turnkeeper.store import new_token
from turnkeeper.store.records import Guard
from turnkeeper.store.sqlite import SqliteStore


class CountingStore(SqliteStore):
    """A real SQLite store that counts the lookups `Owners` makes."""

    asked: list[str]

    async def turn_guard(self, turn_id: str) -> tuple[str, Guard] | None:
        self.asked.append(turn_id)
        return await super().turn_guard(turn_id)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CountingStore]:
    opened = CountingStore(tmp_path / "owners.db")
    opened.asked = []
    await opened.migrate()
    yield opened
    await opened.close()


async def a_turn(store: CountingStore) -> tuple[str, str, str]:
    token_hash = new_token()[1]
    conversation_id = await store.create_conversation(token_hash, owner="ada")
    turn = await store.create_turn(conversation_id, "q")
    return turn.turn_id, conversation_id, token_hash


async def test_found_owners_are_asked_of_the_store_once(store: CountingStore) -> None:
    turn_id, conversation_id, token_hash = await a_turn(store)
    owners = Owners(store)
    assert not owners.knows(turn_id)
    for _ in range(3):
        assert await owners.of_turn(turn_id) == (conversation_id, Guard(token_hash, "ada"))
    assert owners.knows(turn_id)
    assert store.asked == [turn_id]


async def test_unknown_ids_are_asked_every_time(store: CountingStore) -> None:
    owners = Owners(store)
    for _ in range(2):
        assert await owners.of_turn("t_missing") is None
    assert store.asked == ["t_missing"] * 2
    assert not owners.knows("t_missing")


async def test_at_most_size_are_kept_the_oldest_dropped_first(store: CountingStore) -> None:
    turns = [await a_turn(store) for _ in range(3)]
    owners = Owners(store, size=2)
    for turn_id, _, _ in turns:
        await owners.of_turn(turn_id)
    store.asked.clear()
    for turn_id, conversation_id, _ in reversed(turns):
        found = await owners.of_turn(turn_id)
        assert found is not None
        assert found[0] == conversation_id
    assert store.asked == [turns[0][0]]


async def test_a_deleted_conversations_turns_are_forgotten_and_no_others(
    store: CountingStore,
) -> None:
    (gone, conversation_id, _), (kept, _, _) = await a_turn(store), await a_turn(store)
    owners = Owners(store)
    for turn_id in (gone, kept):
        await owners.of_turn(turn_id)
    owners.forget(conversation_id)
    assert (owners.knows(gone), owners.knows(kept)) == (False, True)
