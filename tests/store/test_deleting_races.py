"""A conversation deleted while a turn is asked in it, on PostgreSQL, where two processes'
transactions overlap (SQLite's writers take turns: `BEGIN IMMEDIATE`). Each side's
transaction is held open on a connection of the test's own, so the store's call meets
it half done: whichever commits first, the other ends in a refusal the API answers
(`NoConversation`: `404`; `Busy`: `409`), never a foreign-key violation (a `500`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest
from tests.waiting import eventually

from turnkeeper.store import Busy, NoConversation, Store, new_token, open_store

pytestmark = pytest.mark.postgres

NEW_TURN = (
    "INSERT INTO turns (turn_id, conversation_id, question, status, version, state,"
    " n_messages, message_offset) VALUES (%s, %s, 'hi', 'queued', 1, '{}', 1, 0)"
)
"""A turn as another process's `create_turn` inserts it (its other columns left out)."""


@pytest.fixture
async def pg(postgres_database: str) -> AsyncIterator[tuple[Store, str]]:
    from tests.databases import fresh_schema

    with fresh_schema(postgres_database) as url:
        opened = await open_store(url)
        yield opened, url
        await opened.close()


async def waits_for_a_lock(url: str, pid: int) -> None:
    """Until a session other than `pid` waits for a row lock in this database."""

    async def waiting() -> bool:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
            row = await (
                await db.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND wait_event_type = 'Lock' AND pid <> %s",
                    (pid,),
                )
            ).fetchone()
        return row is not None and row[0] > 0

    await eventually(waiting, "the store's call waiting for the other transaction's lock")


async def test_a_turn_asked_while_its_conversation_is_deleted_is_refused(
    pg: tuple[Store, str],
) -> None:
    store, url = pg
    conversation_id = await store.create_conversation(new_token()[1])
    async with await psycopg.AsyncConnection.connect(url) as deleting:
        await deleting.execute(
            "DELETE FROM conversations WHERE conversation_id = %s", (conversation_id,)
        )
        asking = asyncio.create_task(store.create_turn(conversation_id, "hi"))
        await waits_for_a_lock(url, deleting.info.backend_pid)
        await deleting.commit()
    with pytest.raises(NoConversation):
        await asking
    assert await store.counts() == {}


@pytest.mark.parametrize("stop", [False, True])
async def test_a_conversation_deleted_while_a_turn_is_asked_is_busy_or_taken_whole(
    pg: tuple[Store, str], stop: bool
) -> None:
    store, url = pg
    conversation_id = await store.create_conversation(new_token()[1])
    async with await psycopg.AsyncConnection.connect(url) as asking:
        await asking.execute(NEW_TURN, ("t_asked", conversation_id))
        deleting = asyncio.create_task(store.delete_conversation(conversation_id, stop=stop))
        await waits_for_a_lock(url, asking.info.backend_pid)
        await asking.commit()
    if stop:
        assert await deleting is True
        assert await store.turn("t_asked") is None
        assert await store.guard(conversation_id) is None
    else:
        with pytest.raises(Busy):
            await deleting
        assert await store.open_turn(conversation_id) == "t_asked"
