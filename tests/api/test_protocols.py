"""The protocol routes' edges (api/protocols.py): a malformed body is a 400 in the
protocol's own error shape, the client's conversation id is created on first use and
another's answers 404, the token comes back in a header CORS exposes. Their streams are
proven with the real clients in tests/test_protocol_clients.py."""

from __future__ import annotations

import httpx
import pytest

from tests.api.test_routes import HeldQueue, client_for, conversation
from turnkeeper.api import create_app
from turnkeeper.store import Store

RUN = {"threadId": "thread-1", "runId": "run-1", "messages": []}


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b'{"threadId": 1}', b'{"threadId": "x", "runId": "r"}'],
)
async def test_a_malformed_run_input_is_a_400_run_error(
    client: httpx.AsyncClient, body: bytes
) -> None:
    response = await client.post(
        "/api/ag-ui", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    answer = response.json()
    assert answer["type"] == "RUN_ERROR"
    assert answer["code"] == "invalid_request"
    assert answer["message"] == answer["error"]


async def test_a_run_without_a_user_question_is_a_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/ag-ui", json=RUN)
    assert response.status_code == 400
    assert response.json()["type"] == "RUN_ERROR"


@pytest.mark.parametrize(
    "body",
    [{}, {"id": 3, "messages": []}, {"id": "c", "messages": []}, {"id": "c", "messages": [1]}],
)
async def test_a_malformed_chat_request_is_a_400_error_part(
    client: httpx.AsyncClient, body: object
) -> None:
    response = await client.post("/api/chat", json=body)
    assert response.status_code == 400
    answer = response.json()
    assert answer["type"] == "error"
    assert answer["errorText"] == answer["error"]


async def test_another_conversation_id_answers_404_on_both_protocols(
    client: httpx.AsyncClient, held: HeldQueue
) -> None:
    taken, _ = await conversation(client)
    question = {"id": "q", "role": "user", "content": "hi"}
    run = await client.post("/api/ag-ui", json={**RUN, "threadId": taken, "messages": [question]})
    assert run.status_code == 404
    assert run.json()["code"] == "not_found"
    message = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    chat = await client.post("/api/chat", json={"id": taken, "messages": [message]})
    assert chat.status_code == 404
    assert (await client.get(f"/api/chat/{taken}/stream")).status_code == 404
    assert held.turn_ids == []


async def test_no_active_turn_is_204(client: httpx.AsyncClient) -> None:
    conversation_id, auth = await conversation(client)
    response = await client.get(f"/api/chat/{conversation_id}/stream", headers=auth)
    assert response.status_code == 204


async def test_cors_lets_a_page_read_the_new_token(store: Store) -> None:
    app = create_app(store, HeldQueue(), cors_origins=["https://shop.example"])
    async with client_for(app) as client:
        response = await client.post(
            "/api/chat", json={}, headers={"origin": "https://shop.example"}
        )
    assert response.status_code == 400
    assert "x-turnkeeper-token" in response.headers["access-control-expose-headers"]


async def test_the_routes_answer_under_a_mounted_prefix(store: Store) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    host = Starlette(routes=[Mount("/assistant", app=create_app(store, HeldQueue()))])
    async with client_for(host) as client:
        run = await client.post("/assistant/api/ag-ui", json={"threadId": "x"})
        chat = await client.post("/assistant/api/chat", json={})
        stream = await client.get("/assistant/api/chat/nobody/stream")
    assert run.json()["type"] == "RUN_ERROR"
    assert chat.json()["type"] == "error"
    assert stream.status_code == 404
