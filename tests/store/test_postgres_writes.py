"""On PostgreSQL a publish, a checkpoint and the final write are one statement each.

Each is one round trip on a pooled autocommit connection, its own transaction:
psycopg's cost per statement, not the database, is what a worker's CPU goes to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from tests.store.test_contract import queued_turn, running, write

from turnkeeper.store import Store, open_store
from turnkeeper.store.records import ModelCall
from turnkeeper.usage import Usage
from turnkeeper.wire import Message

pytestmark = pytest.mark.postgres


@pytest.fixture
async def pg_store(postgres_database: str) -> AsyncIterator[Store]:
    from tests.databases import fresh_schema

    with fresh_schema(postgres_database) as url:
        opened = await open_store(url)
        yield opened
        await opened.close()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the store's connections send, as sent (the pool's empty check
    of a connection left out)."""
    sent: list[str] = []
    execute, executemany = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany

    async def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if str(query):
            sent.append(str(query))
        return await execute(self, query, *args, **kwargs)

    async def counted_many(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return await executemany(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", counted)
    monkeypatch.setattr(psycopg.AsyncCursor, "executemany", counted_many)
    return sent


async def test_each_write_is_one_statement(pg_store: Store, statements: list[str]) -> None:
    conversation_id, turn_id = await queued_turn(pg_store, "q")
    fence = await pg_store.claim(turn_id, 30, "anthropic")
    assert fence is not None
    q = {"id": "m1", "role": "user", "text": "q"}
    call = ModelCall(1, 0.0, 10.0, duration=0.1, stop_reason="tool_use")
    appended: list[Message] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": []},
    ]
    step = replace(write(appended, running(3, q, {"id": "m2"}), n=1), calls=[call])
    tail = [{"role": "user", "content": [{"type": "tool_result", "content": "\x00"}]}]
    final = write(tail, running(4, q, {"id": "m2"}, {"id": "m3"}, done=True), Usage(1, 2, 3))

    statements.clear()
    await pg_store.publish(turn_id, fence, running(2, q))
    assert len(statements) == 1, statements
    statements.clear()
    assert await pg_store.checkpoint(turn_id, fence, step) is False
    assert len(statements) == 1, statements
    statements.clear()
    await pg_store.finish(turn_id, fence, replace(final, calls=[replace(call, iteration=2)]))
    assert len(statements) == 1, statements

    assert await pg_store.history(conversation_id) == appended + tail
    assert await pg_store.state_after(turn_id, 0) == final.state.to_json()
    assert [r["iteration"] for r in await pg_store.iterations(turn_id)] == [1, 2]
