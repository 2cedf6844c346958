"""Conversations that belong to the application's users (`authenticate`), on both stores:
401 without a user, 404 for another's (exactly as for an unknown id), one's own listed
newest first; the reader's user and locale stored with the turn."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from starlette.requests import Request

from tests.api.test_routes import HeldQueue, client_for
from tests.apps import orders
from turnkeeper.api import create_app
from turnkeeper.store import UNCLAIMED, Store
from turnkeeper.turn.lifecycle import fail


def by_header(request: Request) -> str | None:
    return request.headers.get("x-user") or None


async def by_header_async(request: Request) -> str | None:
    return by_header(request)


ADA = {"x-user": "ada"}
BOB = {"x-user": "bob"}


@pytest.fixture(params=["sync", "async"])
def authenticate(
    request: pytest.FixtureRequest,
) -> Callable[[Request], str | Awaitable[str | None] | None]:
    return by_header if request.param == "sync" else by_header_async


@pytest.fixture
async def client(
    store: Store, held: HeldQueue, authenticate: Callable[[Request], str | None]
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(store, held, catalogs=orders.assistant.catalogs, authenticate=authenticate)
    async with client_for(app) as c:
        yield c


async def asked(client: httpx.AsyncClient, user: dict[str, str], text: str) -> tuple[str, str]:
    created = await client.post("/api/conversations", headers=user)
    assert created.status_code == 201
    conversation_id = created.json()["conversation_id"]
    turn = await client.post(
        f"/api/conversations/{conversation_id}/turns", json={"text": text}, headers=user
    )
    assert turn.status_code == 202, turn.text
    return conversation_id, turn.json()["turn_id"]


async def test_every_api_call_without_a_user_answers_401(
    client: httpx.AsyncClient, store: Store
) -> None:
    conversation_id, turn_id = await asked(client, ADA, "q")
    calls = [
        ("POST", "/api/conversations", None),
        ("GET", "/api/conversations", None),
        ("GET", f"/api/conversations/{conversation_id}", None),
        ("POST", f"/api/conversations/{conversation_id}/turns", {"text": "again"}),
        ("GET", f"/api/turns/{turn_id}", None),
        ("POST", f"/api/turns/{turn_id}/cancel", None),
    ]
    for method, path, body in calls:
        response = await client.request(method, path, json=body)
        assert response.status_code == 401, (method, path)
        assert list(response.json()) == ["error"]
    assert not await store.cancel_requested(turn_id), "nothing was done for the 401s"
    widget = await client.get("/assistant.json")
    assert widget.json() == {
        "name": "Assistant",
        "locales": ["en", "es", "fr", "pt-BR"],
        "users": True,
    }


async def test_another_users_conversation_and_turn_answer_as_unknown_ids(
    client: httpx.AsyncClient, store: Store
) -> None:
    conversation_id, turn_id = await asked(client, ADA, "ada's question")
    calls = [
        ("GET", "/api/conversations/{}", conversation_id, "c_0000000000000000000a"),
        ("POST", "/api/conversations/{}/turns", conversation_id, "c_0000000000000000000a"),
        ("GET", "/api/turns/{}", turn_id, "t_0000000000000000000a"),
        ("POST", "/api/turns/{}/cancel", turn_id, "t_0000000000000000000a"),
    ]
    for method, path, hers, unknown in calls:
        body = {"text": "bob asks"} if method == "POST" else None
        as_bob = await client.request(method, path.format(hers), json=body, headers=BOB)
        as_nobody = await client.request(method, path.format(unknown), json=body, headers=BOB)
        assert as_bob.status_code == as_nobody.status_code == 404, (method, path)
        assert as_bob.json() == as_nobody.json()
    assert not await store.cancel_requested(turn_id)
    ada = await client.get(f"/api/conversations/{conversation_id}", headers=ADA)
    assert [m["text"] for m in ada.json()["messages"]] == ["ada's question"]


async def test_a_bearer_token_does_not_open_a_users_conversation(
    client: httpx.AsyncClient,
) -> None:
    created = (await client.post("/api/conversations", headers=ADA)).json()
    stolen = {**BOB, "authorization": f"Bearer {created['token']}"}
    response = await client.get(f"/api/conversations/{created['conversation_id']}", headers=stolen)
    assert response.status_code == 404


async def test_the_list_is_ones_own_newest_first_titled_by_the_first_question(
    client: httpx.AsyncClient, store: Store, held: HeldQueue
) -> None:
    first, _ = await asked(client, ADA, "where is my teapot?")
    await asked(client, BOB, "bob's")
    second = (await client.post("/api/conversations", headers=ADA)).json()["conversation_id"]
    listed = (await client.get("/api/conversations", headers=ADA)).json()["conversations"]
    assert [(c["conversation_id"], c["title"]) for c in listed] == [
        (second, None),
        (first, "where is my teapot?"),
    ]
    assert all(c["created_at"].endswith("+00:00") for c in listed)
    bobs = (await client.get("/api/conversations", headers=BOB)).json()["conversations"]
    assert [c["title"] for c in bobs] == ["bob's"]
    nobody = await client.get("/api/conversations", headers={"x-user": "carol"})
    assert nobody.json() == {"conversations": []}


async def test_the_turn_keeps_who_asked_and_in_which_language(
    client: httpx.AsyncClient, store: Store
) -> None:
    created = (await client.post("/api/conversations", headers=ADA)).json()
    path = f"/api/conversations/{created['conversation_id']}/turns"
    cases = [
        ({"text": "q", "locale": "fr-CA"}, {}, "fr"),
        ({"text": "q", "locale": "pt-br"}, {}, "pt-BR"),
        ({"text": "q", "locale": "de"}, {"accept-language": "fr"}, "en"),
        ({"text": "q"}, {"accept-language": "de;q=0.9, es-MX;q=0.8"}, "es"),
        ({"text": "q"}, {}, "en"),
    ]
    for body, headers, locale in cases:
        response = await client.post(path, json=body, headers={**ADA, **headers})
        assert response.status_code == 202, response.text
        turn = await store.turn(response.json()["turn_id"])
        assert turn is not None
        assert (turn.user, turn.locale) == ("ada", locale), body
        await fail(store, turn.turn_id, UNCLAIMED)  # done: the conversation takes the next


async def test_a_malformed_locale_is_400_and_queues_nothing(
    client: httpx.AsyncClient, held: HeldQueue
) -> None:
    created = (await client.post("/api/conversations", headers=ADA)).json()
    path = f"/api/conversations/{created['conversation_id']}/turns"
    for locale in ["français", 7, "", "fr--FR"]:
        response = await client.post(path, json={"text": "q", "locale": locale}, headers=ADA)
        assert response.status_code == 400
        assert "BCP 47" in response.json()["error"]
    assert held.turn_ids == []


async def test_without_authenticate_there_is_no_list_and_tokens_still_open_conversations(
    store: Store, held: HeldQueue
) -> None:
    async with client_for(create_app(store, held)) as client:
        listed = await client.get("/api/conversations")
        assert listed.status_code == 404
        assert "no sign-in" in listed.json()["error"]
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        path = f"/api/conversations/{created['conversation_id']}/turns"
        response = await client.post(path, json={"text": "q", "locale": "es"}, headers=auth)
        assert response.status_code == 202
        turn = await store.turn(response.json()["turn_id"])
        assert turn is not None
        assert (turn.user, turn.locale) == (None, "es")


@pytest.mark.parametrize("returned", [7, "", "x" * 300])
async def test_an_authenticate_that_returns_no_user_id_is_a_logged_500(
    store: Store, held: HeldQueue, returned: object
) -> None:
    app = create_app(store, held, authenticate=lambda request: returned)  # type: ignore[arg-type,return-value]
    async with client_for(app) as client:
        response = await client.post("/api/conversations")
    assert response.status_code == 500
    assert list(response.json()) == ["error"]
