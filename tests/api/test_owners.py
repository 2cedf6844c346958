"""The API remembers a turn's conversation and a conversation's guard, never a miss."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from turnkeeper.api.owners import Owners
from turnkeeper.store import new_token
from turnkeeper.store.records import Guard, Turn
from turnkeeper.store.sqlite import SqliteStore


class CountingStore(SqliteStore):
    """A real SQLite store that counts the lookups `Owners` makes."""

    asked: list[str]

    async def turn(self, turn_id: str) -> Turn | None:
        self.asked.append(f"turn {turn_id}")
        return await super().turn(turn_id)

    async def guard(self, conversation_id: str) -> Guard | None:
        self.asked.append(f"guard {conversation_id}")
        return await super().guard(conversation_id)


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
    for _ in range(3):
        assert await owners.conversation_of(turn_id) == conversation_id
        assert await owners.guard(conversation_id) == Guard(token_hash, "ada")
    assert store.asked == [f"turn {turn_id}", f"guard {conversation_id}"]


async def test_unknown_ids_are_asked_every_time(store: CountingStore) -> None:
    owners = Owners(store)
    for _ in range(2):
        assert await owners.conversation_of("t_missing") is None
        assert await owners.guard("c_missing") is None
    assert store.asked == ["turn t_missing", "guard c_missing"] * 2


async def test_at_most_size_are_kept_the_oldest_dropped_first(store: CountingStore) -> None:
    turns = [await a_turn(store) for _ in range(3)]
    owners = Owners(store, size=2)
    for turn_id, _, _ in turns:
        await owners.conversation_of(turn_id)
    store.asked.clear()
    for turn_id, conversation_id, _ in reversed(turns):
        assert await owners.conversation_of(turn_id) == conversation_id
    assert store.asked == [f"turn {turns[0][0]}"]
