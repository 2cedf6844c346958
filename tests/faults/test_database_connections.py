"""PostgreSQL ends the store's connections (`pg_terminate_backend`) while a turn runs.

The model's answer must still land: the turn finishes, and the API's next
request is answered (at worst 503 with the JSON error body, never a 500).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
import pytest

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for, start_turn
from turnkeeper.api import create_app
from turnkeeper.providers import TextSink, messages_api
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec

pytestmark = pytest.mark.postgres


def terminate_connections(url: str) -> int:
    """End every other connection to the database, as an administrator or a failover would."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


class TerminatingModel:
    """Answers once; during the call the database ends every store connection."""

    wire = messages_api.WIRE

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls = 0
        self.terminated = 0

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.calls += 1
        self.terminated = terminate_connections(self.url)
        return messages_api.parse_reply(scripts.answer("the answer arrived"))

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, str]:
        return {"provider": "terminating"}


async def test_a_turn_finishes_when_its_connections_are_terminated_mid_call(
    pg_store: Store, own_database: str
) -> None:
    held = HeldQueue()
    async with client_for(create_app(pg_store, held)) as client:
        turn_id, auth = await start_turn(client)
        model = TerminatingModel(own_database)
        outcome = await TurnJob(pg_store, model).run(held.turn_ids[0])
        assert model.terminated >= 1, "the store's connections were ended during the call"
        assert outcome is not None
        assert outcome.value == "finished"
        response = await client.get(f"/api/turns/{turn_id}", headers=auth)
    assert response.status_code == 200, response.text
    state = response.json()
    assert (state["status"], state["done"]) == ("finished", True)
    assert state["messages"][-1]["text"] == "the answer arrived"
    assert model.calls == 1


async def test_the_api_answers_after_its_connections_are_terminated(
    pg_store: Store, own_database: str
) -> None:
    async with client_for(create_app(pg_store, HeldQueue())) as client:
        turn_id, auth = await start_turn(client)
        assert terminate_connections(own_database) >= 1
        response = await client.get(f"/api/turns/{turn_id}", headers=auth)
        assert response.status_code in (200, 503), response.text
        if response.status_code == 503:
            assert list(response.json()) == ["error"]
        again = await client.get(f"/api/turns/{turn_id}", headers=auth)
    assert again.status_code == 200, "the pool hands out a live connection again"
    assert again.json()["status"] == "queued"


async def test_a_store_that_is_down_answers_503_with_the_json_body(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(turn_id: str, after: int) -> None:
        raise psycopg.OperationalError("connection to server was lost")

    async with client_for(create_app(pg_store, HeldQueue())) as client:
        turn_id, auth = await start_turn(client)
        monkeypatch.setattr(pg_store, "poll", down)
        response = await client.get(f"/api/turns/{turn_id}", headers=auth)
    assert response.status_code == 503
    assert list(response.json()) == ["error"]
    assert "lost" not in response.text


async def test_a_write_on_a_connection_ended_before_it_said_so_is_sent_again(
    pg_store: Store, own_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection ended just before it is handed out may not have said so yet (the
    server ends the backend after `pg_terminate_backend` returns): the pool's check lets
    it through, the server answers `AdminShutdown` instead of running the statement, and
    the store sends it once more on another connection."""
    conversation_id = await pg_store.create_conversation("hash")
    turn = await pg_store.create_turn(conversation_id, "still here?")

    async def not_yet(db: object) -> None:
        """The check, as it is when the server's word has not arrived yet."""

    monkeypatch.setattr(pg_store.pool, "_check", not_yet)  # type: ignore[attr-defined]
    assert terminate_connections(own_database) >= 1
    assert await pg_store.claim(turn.turn_id, 30.0, "anthropic") == 1
    assert await pg_store.cancel_requested(turn.turn_id) is False


async def test_a_transaction_on_a_connection_ended_before_it_said_so_is_sent_again(
    pg_store: Store, own_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a write of several statements: its `BEGIN` meets the ended
    connection, nothing of it ran, and the whole transaction is sent once more (the
    turn's final write took this path in CI and the turn failed)."""
    conversation_id = await pg_store.create_conversation("hash")

    async def not_yet(db: object) -> None:
        """The check, as it is when the server's word has not arrived yet."""

    monkeypatch.setattr(pg_store.pool, "_check", not_yet)  # type: ignore[attr-defined]
    assert terminate_connections(own_database) >= 1
    turn = await pg_store.create_turn(conversation_id, "still here?")
    assert (await pg_store.turn(turn.turn_id)) is not None
