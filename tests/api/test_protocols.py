"""The protocol routes' edges (api/protocols.py): a malformed body is a 400 in the
protocol's own error shape, the client's conversation id names a conversation within its
owner's space (two owners, one id: two conversations; another's id is an unused one), the
token comes back in a header CORS exposes, a loaded conversation is the protocol's own
shape. Their streams are proven with the real clients in tests/test_protocol_clients.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.api.test_approvals import SCRIPT, serving
from tests.api.test_routes import HeldQueue, client_for, conversation
from tests.api.test_users import ADA, BOB, by_header
from turnkeeper.api import create_app
from turnkeeper.store import UNCLAIMED, Store
from turnkeeper.turn.lifecycle import fail

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


def _ag_ui(response: httpx.Response) -> list[dict[str, Any]]:
    """The AG-UI events of a response."""
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


async def test_a_run_without_a_new_question_loads_an_unknown_thread_empty(
    store: Store, client: httpx.AsyncClient
) -> None:
    """Nothing to ask, no thread of this id: an empty snapshot, nothing created."""
    response = await client.post("/api/ag-ui", json=RUN)
    assert response.status_code == 200
    events = _ag_ui(response)
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert events[1]["messages"] == []
    assert "x-turnkeeper-token" not in response.headers
    assert await store.counts() == {}


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


@pytest.fixture
async def quick(store: Store, held: HeldQueue) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app whose streams end at once (its turns are held, never run)."""
    app = create_app(store, held)
    app.state.streams.close()
    async with client_for(app) as client:
        yield client


QUESTION = {"id": "q", "role": "user", "content": "hi"}
MESSAGE = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}


async def _ask(client: httpx.AsyncClient, route: str, an_id: str, auth: Any) -> httpx.Response:
    if route == "/api/ag-ui":
        body: dict[str, Any] = {**RUN, "threadId": an_id, "messages": [QUESTION]}
    else:
        body = {"id": an_id, "messages": [MESSAGE]}
    return await client.post(route, json=body, headers=auth)


@pytest.mark.parametrize("route", ["/api/ag-ui", "/api/chat"])
async def test_two_token_holders_with_one_id_have_two_conversations(
    quick: httpx.AsyncClient, held: HeldQueue, route: str
) -> None:
    """Without sign-in the id is the token's: a request without one makes a new token
    and its conversation; the token finds its own again, and only its own."""
    first = await _ask(quick, route, "shared", {})
    second = await _ask(quick, route, "shared", {})
    assert first.status_code == second.status_code == 200
    mine, theirs = (r.headers["x-turnkeeper-conversation"] for r in (first, second))
    assert mine != theirs
    auth = {"authorization": f"Bearer {first.headers['x-turnkeeper-token']}"}
    other = {"authorization": f"Bearer {second.headers['x-turnkeeper-token']}"}
    for path, allowed, refused in (
        (f"/api/conversations/{mine}", auth, other),
        (f"/api/conversations/{theirs}", other, auth),
    ):
        assert (await quick.get(path, headers=allowed)).status_code == 200
        assert (await quick.get(path, headers=refused)).status_code == 404
    transcript = await quick.get(f"/api/conversations/{mine}", headers=auth)
    assert [m["text"] for m in transcript.json()["messages"]] == ["hi"]
    assert held.turn_ids == [
        first.headers["x-turnkeeper-turn"],
        second.headers["x-turnkeeper-turn"],
    ]


async def test_a_token_finds_its_own_conversation_again(
    quick: httpx.AsyncClient, held: HeldQueue
) -> None:
    first = await _ask(quick, "/api/chat", "mine", {})
    auth = {"authorization": f"Bearer {first.headers['x-turnkeeper-token']}"}
    again = await _ask(quick, "/api/chat", "mine", auth)
    assert again.status_code == 409, "the same conversation: its turn is not done"
    loaded = await quick.get("/api/chat/mine/messages", headers=auth)
    assert loaded.headers["x-turnkeeper-conversation"] == first.headers["x-turnkeeper-conversation"]
    assert [m["role"] for m in loaded.json()] == ["user"]


async def test_a_rest_conversation_id_names_a_new_conversation_in_the_protocols(
    quick: httpx.AsyncClient, store: Store
) -> None:
    """Nobody takes another's conversation by naming its id: the REST conversation's id,
    sent as a chat id by its own token holder or anyone, is a conversation of their own."""
    taken, auth = await conversation(quick)
    for headers in ({}, auth):
        response = await _ask(quick, "/api/chat", taken, headers)
        assert response.status_code == 200
        assert response.headers["x-turnkeeper-conversation"] != taken
    page = await quick.get(f"/api/conversations/{taken}", headers=auth)
    assert page.json()["messages"] == []


async def _unknown(client: httpx.AsyncClient, an_id: str, auth: Any) -> list[Any]:
    """What the read-only protocol routes answer for a client id."""
    stream = await client.get(f"/api/chat/{an_id}/stream", headers=auth)
    messages = await client.get(f"/api/chat/{an_id}/messages", headers=auth)
    loaded = await client.post(
        "/api/ag-ui", json={**RUN, "threadId": an_id, "runId": "r"}, headers=auth
    )
    said = [stream.status_code, stream.text, messages.status_code, messages.json()]
    answered: list[Any] = json.loads(
        json.dumps([*said, _ag_ui(loaded)]).replace(f'"{an_id}"', '"ID"')
    )
    return answered


async def test_another_token_holders_id_is_an_unused_one(quick: httpx.AsyncClient) -> None:
    taken = await _ask(quick, "/api/chat", "taken", {})
    assert taken.status_code == 200
    for headers in ({}, {"authorization": "Bearer another"}):
        assert await _unknown(quick, "taken", headers) == await _unknown(
            quick, "never-used", headers
        )
    assert (await _unknown(quick, "taken", {}))[:2] == [204, ""]


async def test_signed_in_users_with_one_id_have_two_conversations(store: Store) -> None:
    held = HeldQueue()
    app = create_app(store, held, authenticate=by_header)
    app.state.streams.close()
    async with client_for(app) as client:
        ada = await _ask(client, "/api/ag-ui", "thread", ADA)
        assert ada.status_code == 200
        assert "x-turnkeeper-token" not in ada.headers
        assert await _unknown(client, "thread", BOB) == await _unknown(client, "unused", BOB)
        bob = await _ask(client, "/api/chat", "thread", BOB)
        assert bob.status_code == 200
        again = await _ask(client, "/api/chat", "thread", ADA)
        assert again.status_code == 409, "ada's, with its turn not done"
        listed = {
            who: [
                c["conversation_id"]
                for c in (await client.get("/api/conversations", headers=h)).json()["conversations"]
            ]
            for who, h in (("ada", ADA), ("bob", BOB))
        }
    assert listed == {
        "ada": [ada.headers["x-turnkeeper-conversation"]],
        "bob": [bob.headers["x-turnkeeper-conversation"]],
    }
    assert len(held.turn_ids) == 2


async def test_a_chat_with_no_active_turn_streams_204(
    quick: httpx.AsyncClient, store: Store
) -> None:
    first = await _ask(quick, "/api/chat", "quiet", {})
    auth = {"authorization": f"Bearer {first.headers['x-turnkeeper-token']}"}
    conversation_id = first.headers["x-turnkeeper-conversation"]
    await fail(store, first.headers["x-turnkeeper-turn"], UNCLAIMED)
    assert (await quick.get("/api/chat/quiet/stream", headers=auth)).status_code == 204
    assert (await quick.get("/api/chat/never-seen/stream", headers=auth)).status_code == 204
    assert (await quick.get("/api/chat/never-seen/stream")).status_code == 204
    assert (await quick.get(f"/api/chat/{conversation_id}/stream", headers=auth)).status_code == 204


async def test_a_chat_loads_as_ui_messages(store: Store) -> None:
    """`GET /api/chat/{id}/messages`: the question, then the answer as the stream made it
    (text, each tool with its input and output, the approval and its decision, the
    caption); the same as the AG-UI snapshot says."""
    async for served in serving(store, SCRIPT):
        client = served.client
        asked = await _ask(client, "/api/chat", "tools", {})
        auth = {"authorization": f"Bearer {asked.headers['x-turnkeeper-token']}"}
        await served.queue.join()
        waiting = (await client.get("/api/chat/tools/messages", headers=auth)).json()
        assert [m["role"] for m in waiting] == ["user"], "the active turn is the stream's"
        decided = {
            "id": "a",
            "role": "assistant",
            "parts": [
                {
                    "type": "dynamic-tool",
                    "toolCallId": "toolu_delete",
                    "state": "approval-responded",
                    "approval": {"id": "toolu_delete", "approved": True},
                }
            ],
        }
        resumed = await client.post(
            "/api/chat", json={"id": "tools", "messages": [MESSAGE, decided]}, headers=auth
        )
        assert resumed.status_code == 200, resumed.text
        await served.queue.join()
        loaded = await client.get("/api/chat/tools/messages", headers=auth)
        snapshot = await client.post("/api/ag-ui", json={**RUN, "threadId": "tools"}, headers=auth)
    user, answer = loaded.json()
    assert user["role"] == "user"
    assert user["parts"] == [{"type": "text", "text": "hi"}]
    assert answer["id"] == asked.headers["x-turnkeeper-turn"]
    kinds = [p["type"] for p in answer["parts"]]
    assert kinds == [
        "step-start", "text", "dynamic-tool",  # the first call: its text, the tool it ran
        "step-start", "dynamic-tool",  # the use that waited
        "step-start", "data-activity", "text",  # the next call, once it ran
    ], json.dumps(answer, indent=1)  # fmt: skip
    text, look, delete = (answer["parts"][i] for i in (1, 2, 4))
    assert text == {"type": "text", "text": "I will delete it.", "state": "done"}
    assert look == {
        "type": "dynamic-tool", "toolName": "lookup", "toolCallId": "toolu_look",
        "input": {}, "state": "output-available", "output": "found it",
    }  # fmt: skip
    assert delete["state"] == "output-available"
    assert delete["input"] == {"path": "notes.txt"}
    assert delete["output"] == "deleted notes.txt"
    assert delete["approval"] == {"id": "toolu_delete", "approved": True}
    assert answer["parts"][-1]["text"] == "Done."
    events = _ag_ui(snapshot)
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    messages = events[1]["messages"]
    assert messages[0] == {"id": user["id"], "role": "user", "content": "hi"}
    calls = [c["function"]["name"] for m in messages for c in m.get("toolCalls") or []]
    assert calls == ["lookup", "delete_file"]
    assert [m["content"] for m in messages if m["role"] == "tool"] == [
        "found it",
        "deleted notes.txt",
    ]
    assert [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")] == [
        "I will delete it.", "Done.",
    ]  # fmt: skip


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
    assert stream.status_code == 204
