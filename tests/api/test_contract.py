"""The HTTP contract true (issue 32, item 4): the OpenAPI document an app serves says how
its readers are known (bearer tokens, or the host application's sign-in), where it is
mounted, and every status each operation can answer; and a 404 for another's turn costs
what a 404 for an unknown id costs."""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
from starlette.requests import Request

from tests.api.test_mounted import HOST, host_app, model  # noqa: F401 - a fixture
from tests.api.test_routes import HeldQueue, client_for, start_turn
from turnkeeper.api import create_app
from turnkeeper.store import Store


def signed_in(request: Request) -> str | None:
    return request.headers.get("x-user")


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(p, m, op) for p, ops in document["paths"].items() for m, op in ops.items()]


async def test_with_sign_in_no_operation_declares_a_bearer_token(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue(), authenticate=signed_in)) as users:
        document = (await users.get("/openapi.json")).json()
    assert [p for p, _, op in operations(document) if "security" in op] == []
    assert "securitySchemes" not in document["components"]
    assert "host application's own sign-in" in document["info"]["description"]
    assert all("401" in op["responses"] for p, _, op in operations(document) if "/api/" in p)
    async with client_for(create_app(store, HeldQueue())) as tokens:
        document = (await tokens.get("/openapi.json")).json()
    bearer = {p for p, _, op in operations(document) if op.get("security") == [{"bearer": []}]}
    assert "/api/turns/{turn_id}" in bearer
    assert "/api/conversations" not in bearer, "a conversation is started without one"


async def test_every_operation_declares_500_and_503_with_retry_after(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue())) as client:
        document = (await client.get("/openapi.json")).json()
    for path, method, op in operations(document):
        assert "500" in op["responses"], (path, method)
        assert "retry-after" in op["responses"]["503"]["headers"], (path, method)
    assert document["servers"] == [{"url": "/"}]


async def test_a_mounted_apps_document_names_its_prefix_and_its_503_is_dressed(
    tmp_path: Any,
    model: Any,  # noqa: F811 - the fixture
) -> None:
    app, chat = host_app(f"sqlite:///{tmp_path / 'chat.db'}")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=HOST) as client:
        before = await client.get("/assistant/openapi.json")  # not started yet
        async with chat.lifespan(app):
            document = (await client.get("/assistant/openapi.json")).json()
    assert document["servers"] == [{"url": "/assistant"}]
    assert before.status_code == 503
    assert before.headers["retry-after"] == "1"
    assert before.headers["x-content-type-options"] == "nosniff"
    assert "default-src" in before.headers["content-security-policy"]


async def test_a_404_for_anothers_turn_costs_what_one_for_an_unknown_id_costs(
    store: Store,
) -> None:
    """1,500 interleaved polls of each: the medians within 10 % of each other."""
    async with client_for(create_app(store, HeldQueue())) as client:
        theirs, _ = await start_turn(client)
        _, mine = await start_turn(client)
        unknown = "t_" + "0" * 20
        await client.get(f"/api/turns/{theirs}", headers=mine)  # remembered, as a poll would
        took: dict[str, list[float]] = {theirs: [], unknown: []}
        for _ in range(1500):
            for turn_id in (theirs, unknown):
                started = time.perf_counter()
                answer = await client.get(f"/api/turns/{turn_id}", headers=mine)
                took[turn_id].append(time.perf_counter() - started)
                assert answer.status_code == 404
    ratio = statistics.median(took[theirs]) / statistics.median(took[unknown])
    assert 1 / 1.1 <= ratio <= 1.1, f"another's turn costs {ratio:.2f}× an unknown one"
