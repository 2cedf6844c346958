"""The HTTP API of docs/design.md §6, through httpx's ASGI transport, on both stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests import scripts
from tests.models import LOOKUP, GatedModel
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store


class HeldQueue:
    """Keeps enqueued turn ids until the test runs them, so `queued` can be observed."""

    def __init__(self) -> None:
        self.turn_ids: list[str] = []

    async def enqueue(self, turn_id: str) -> None:
        self.turn_ids.append(turn_id)


def client_for(app: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://turnkeeper.test")


async def conversation(client: httpx.AsyncClient) -> tuple[str, dict[str, str]]:
    response = await client.post("/api/conversations")
    assert response.status_code == 201
    body = response.json()
    return body["conversation_id"], {"authorization": f"Bearer {body['token']}"}


async def start_turn(client: httpx.AsyncClient, text: str = "what's up?") -> tuple[str, Any]:
    conversation_id, auth = await conversation(client)
    response = await client.post(
        f"/api/conversations/{conversation_id}/turns", json={"text": text}, headers=auth
    )
    assert response.status_code == 202
    return response.json()["turn_id"], auth


async def test_a_turn_goes_queued_running_done_with_increasing_versions(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> None:
    turn_id, auth = await start_turn(client)
    seen: list[dict[str, Any]] = []

    async def poll() -> httpx.Response:
        after = seen[-1]["version"] if seen else 0
        response = await client.get(f"/api/turns/{turn_id}", params={"after": after}, headers=auth)
        if response.status_code == 200:
            seen.append(response.json())
        else:
            assert response.status_code == 204
            assert response.content == b""
        return response

    assert (await poll()).status_code == 200
    assert seen[0]["status"] == "queued"
    assert (await poll()).status_code == 204, "nothing changed while queued"

    model = GatedModel([scripts.asks(scripts.tool_use("lookup")), scripts.answer("done it")])
    job = asyncio.create_task(TurnJob(store, model, LOOKUP).run(held.turn_ids[0]))
    await asyncio.wait_for(model.started.wait(), 10)
    assert (await poll()).status_code == 200
    assert seen[-1]["status"] == "running"
    assert (await poll()).status_code == 204, "nothing changed during the model call"
    model.gate.set()

    async def done() -> bool:
        if (await poll()).status_code == 200 and not seen[-1]["done"]:
            model.gate.set()
        return bool(seen[-1]["done"])

    await eventually(done, "the turn finishing")
    await job
    versions = [s["version"] for s in seen]
    assert versions == sorted(set(versions)), f"versions must strictly increase: {versions}"
    assert [s["status"] for s in seen][:2] == ["queued", "running"]
    last = seen[-1]
    assert (last["status"], last["done"], last["activity"]) == ("finished", True, None)
    assert last["messages"][-1]["text"] == "done it"
    assert (await poll()).status_code == 204


async def test_cancel_stops_a_running_turn_after_at_most_one_more_call(store: Store) -> None:
    model = GatedModel([scripts.asks(scripts.tool_use("lookup")), scripts.answer("never")])
    queue = LocalQueue(TurnJob(store, model, LOOKUP))
    async with client_for(create_app(store, queue)) as client:
        turn_id, auth = await start_turn(client)
        await asyncio.wait_for(model.started.wait(), 10)
        response = await client.post(f"/api/turns/{turn_id}/cancel", headers=auth)
        assert response.status_code == 202
        model.gate.set()
        await queue.join()
        state = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()
    assert (state["status"], state["stopped"], state["has_error"]) == ("stopped", True, False)
    assert state["messages"][-1]["key"] == "notices.stopped"
    assert model.calls == 1, "no model call starts after the cancel"


async def test_the_transcript_holds_every_turn_oldest_first(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> None:
    conversation_id, auth = await conversation(client)
    for text, reply in (("one", "first answer"), ("two", "second answer")):
        response = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": text}, headers=auth
        )
        model = GatedModel([scripts.answer(reply)])
        model.gate.set()
        await TurnJob(store, model).run(response.json()["turn_id"])
    response = await client.get(f"/api/conversations/{conversation_id}", headers=auth)
    body = response.json()
    turns = [m.pop("turn_id") for m in body["messages"]]
    assert turns[0] == turns[1] != turns[2] == turns[3], "each message names its turn"
    assert body.pop("usage")["iterations"] == 2, "usage is summed over the conversation's turns"
    assert body.pop("running_turn_id") is None, "both turns are done"
    assert body.pop("before") is None, "one page holds them all"
    assert body.pop("ratings") == {}, "neither turn is rated"
    assert body == {
        "conversation_id": conversation_id,
        "messages": [
            {"id": "m1", "role": "user", "text": "one"},
            {"id": "m2", "role": "bot", "text": "first answer"},
            {"id": "m3", "role": "user", "text": "two"},
            {"id": "m4", "role": "bot", "text": "second answer"},
        ],
    }


async def test_a_second_turn_while_one_is_not_done_is_409(client: httpx.AsyncClient) -> None:
    conversation_id, auth = await conversation(client)
    path = f"/api/conversations/{conversation_id}/turns"
    first = await client.post(path, json={"text": "one"}, headers=auth)
    assert first.status_code == 202
    response = await client.post(path, json={"text": "two"}, headers=auth)
    assert response.status_code == 409
    assert "not done" in response.json()["error"]
    assert response.json()["turn_id"] == first.json()["turn_id"], "the turn to follow instead"
    transcript = await client.get(f"/api/conversations/{conversation_id}", headers=auth)
    assert transcript.json()["running_turn_id"] == first.json()["turn_id"]


def bad_tokens(auth: dict[str, str], other: dict[str, str]) -> Iterator[dict[str, str]]:
    yield {}
    yield {"authorization": "Bearer wrong"}
    yield {"authorization": auth["authorization"].replace("Bearer", "Basic")}
    yield {"authorization": "Bearer "}
    yield other


async def test_a_wrong_or_missing_token_answers_like_an_unknown_id(
    client: httpx.AsyncClient,
) -> None:
    turn_id, auth = await start_turn(client)
    conversation_id = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()[
        "conversation_id"
    ]
    _, other = await conversation(client)
    calls = [
        ("GET", "/api/turns/{}", turn_id, "t_unknown"),
        ("POST", "/api/turns/{}/cancel", turn_id, "t_unknown"),
        ("GET", "/api/conversations/{}", conversation_id, "c_unknown"),
        ("POST", "/api/conversations/{}/turns", conversation_id, "c_unknown"),
    ]
    for method, path, real, unknown in calls:
        expected = await client.request(
            method, path.format(unknown), json={"text": "x"}, headers=auth
        )
        assert expected.status_code == 404
        for headers in bad_tokens(auth, other):
            response = await client.request(
                method, path.format(real), json={"text": "x"}, headers=headers
            )
            assert (response.status_code, response.json()) == (404, expected.json()), (
                method,
                path,
                headers,
            )
    assert (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()["status"] == "queued"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", '"text"'),
        (b'{"text": 3}', '"text"'),
        (b'{"question": "hi"}', '"text"'),
        (b'{"text": "   "}', "empty"),
        (b'{"text": "a\\u0000b"}', "NUL"),
        (b'{"text": "a\\ud800b"}', "not valid Unicode"),
    ],
)
async def test_bad_input_gets_400_with_a_sentence(
    client: httpx.AsyncClient, body: bytes, says: str
) -> None:
    conversation_id, auth = await conversation(client)
    response = await client.post(
        f"/api/conversations/{conversation_id}/turns", content=body, headers=auth
    )
    assert response.status_code == 400
    assert says in response.json()["error"]


@pytest.mark.parametrize("after", ["abc", "-1", "1.5", "9" * 40])
async def test_a_bad_after_gets_400(client: httpx.AsyncClient, after: str) -> None:
    turn_id, auth = await start_turn(client)
    response = await client.get(f"/api/turns/{turn_id}", params={"after": after}, headers=auth)
    assert response.status_code == 400
    assert "after" in response.json()["error"]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("after=1", 204),
        ("after=0", 200),
        ("after=01", 204),
        ("x=1&after=1", 204),
        ("after=1&x=1", 204),
        ("after=0&after=1", 204),
        ("after=1&after=0", 200),
        ("after=%31", 204),
        ("after=" + "9" * 19, 400),
    ],
)
async def test_after_reads_the_same_alone_or_among_other_parameters(
    client: httpx.AsyncClient, query: str, status: int
) -> None:
    """The widget's own `?after=N` is read without parsing the query; any other query is
    parsed in full (the last `after` counts), with the same answer for the same value."""
    turn_id, auth = await start_turn(client)  # queued: version 1
    response = await client.get(f"/api/turns/{turn_id}?{query}", headers=auth)
    assert response.status_code == status


async def test_bodies_over_1_mib_get_413(client: httpx.AsyncClient) -> None:
    conversation_id, auth = await conversation(client)
    path = f"/api/conversations/{conversation_id}/turns"
    big = b'{"text": "' + b"x" * (1024 * 1024) + b'"}'
    response = await client.post(path, content=big, headers=auth)
    assert response.status_code == 413
    assert "1 MiB" in response.json()["error"]

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"x" * (300 * 1024)

    response = await client.post(path, content=chunks(), headers=auth)
    assert response.status_code == 413, "a streamed body is cut at the limit too"
    assert "1 MiB" in response.json()["error"]
    state = await client.post(path, json={"text": "still fine"}, headers=auth)
    assert state.status_code == 202, "nothing was queued by the refused bodies"


async def test_unknown_paths_and_methods_answer_json(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/nothing-here")
    assert (response.status_code, list(response.json())) == (404, ["error"])
    response = await client.delete("/api/conversations")
    assert (response.status_code, list(response.json())) == (405, ["error"])


async def test_server_errors_answer_json_with_a_sentence_and_the_security_headers(
    store: Store, held: HeldQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 is answered outside the app's middleware (Starlette's ServerErrorMiddleware):
    it carries the headers every answer does itself."""

    async def broken() -> dict[str, int]:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(store, "counts", broken)
    async with client_for(create_app(store, held, public_metrics=True)) as client:
        response = await client.get("/metrics")
    assert response.status_code == 500
    assert response.json()["error"].endswith(".")
    assert "fire" not in response.text
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in response.headers["content-security-policy"]


async def test_openapi_metrics_and_index_need_no_token(store: Store, held: HeldQueue) -> None:
    app = create_app(store, held, public_metrics=True)
    async with client_for(app) as client:
        document = (await client.get("/openapi.json")).json()
        assert "/api/turns/{turn_id}" in document["paths"]
        turn_id, _ = await start_turn(client)
        model = GatedModel([scripts.answer("ok")])
        model.gate.set()
        await TurnJob(store, model, watcher=app.state.metrics).run(turn_id)
        metrics = await client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain")
        assert 'turnkeeper_turns_total{outcome="finished"} 1.0' in metrics.text
        assert 'turnkeeper_turns_total{outcome="failed"} 0.0' in metrics.text
        index = await client.get("/")
        assert index.status_code == 200
        assert "turnkeeper" in index.text


class BrokenQueue:
    """A queue that cannot take a turn (its database went away between two statements)."""

    async def enqueue(self, turn_id: str) -> None:
        raise ConnectionError("the queue's database is out of reach")


async def test_a_turn_that_cannot_be_queued_is_503_with_retry_after_and_ends_failed(
    store: Store,
) -> None:
    async with client_for(create_app(store, BrokenQueue())) as client:
        conversation_id, auth = await conversation(client)
        response = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": "hi"}, headers=auth
        )
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert "try again" in response.json()["error"]
        transcript = await client.get(f"/api/conversations/{conversation_id}", headers=auth)
    assert (
        transcript.json()["running_turn_id"] is None
    )  # nothing left queued: it can be asked again
