"""Open streams are capped (issue 52.4), over real HTTP on both stores: per user
(`max_streams_per_user`: `429` with `retry-after`, while another user still streams)
and per process (`max_streams`: `503`); every streaming endpoint counts (the REST
event stream, `/api/ag-ui`, `/api/chat`, `/api/chat/{id}/stream`); a stream's slot is
given back when it ends, when its reader disconnects, and at once when the endpoint
answers without a stream. A refused request starts no turn."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.requests import Request

from tests.api.test_routes import HeldQueue, start_turn
from tests.sse import live
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.store import Store


def by_header(request: Request) -> str | None:
    return request.headers.get("x-user")


ANN, BOB = {"x-user": "ann"}, {"x-user": "bob"}


def chat(chat_id: str, text: str = "hi") -> dict[str, Any]:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [message]}


def run_input(thread: str) -> dict[str, Any]:
    message = {"id": "m1", "role": "user", "content": "hi"}
    return {
        "threadId": thread,
        "runId": "r1",
        "state": {},
        "messages": [message],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


@contextlib.asynccontextmanager
async def opened(client: httpx.AsyncClient, method: str, url: str, **kw: Any) -> AsyncIterator[Any]:
    """A request whose response stays open (its headers read) while the body runs."""
    async with client.stream(method, url, **kw) as response:
        if response.status_code != 200:
            await response.aread()
        yield response


async def user_turn(client: httpx.AsyncClient, user: dict[str, str]) -> str:
    made = await client.post("/api/conversations", headers=user)
    conversation_id = made.json()["conversation_id"]
    r = await client.post(
        f"/api/conversations/{conversation_id}/turns", json={"text": "hi"}, headers=user
    )
    assert r.status_code == 202
    return str(r.json()["turn_id"])


async def test_the_21st_stream_of_a_user_is_429_while_another_user_still_streams(
    store: Store,
) -> None:
    app = create_app(store, HeldQueue(), authenticate=by_header)
    admission = app.state.admission
    async with live(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        turn_id = await user_turn(client, ANN)
        url = f"/api/turns/{turn_id}/events"
        async with contextlib.AsyncExitStack() as streams:
            for _ in range(20):
                r = await streams.enter_async_context(opened(client, "GET", url, headers=ANN))
                assert r.status_code == 200
            async with opened(client, "GET", url, headers=ANN) as refused:
                assert refused.status_code == 429
                assert refused.headers["retry-after"].isdigit()
                assert refused.headers["content-type"] == "application/json"
                assert "streams" in refused.json()["error"]
            bobs = await user_turn(client, BOB)
            async with opened(client, "GET", f"/api/turns/{bobs}/events", headers=BOB) as r:
                assert r.status_code == 200, "another user still streams"

            async def bobs_gone() -> bool:
                return bool(admission.open == 20 and admission.by_reader == {"user:ann": 20})

            await eventually(bobs_gone, "Bob's slot given back when he disconnected")
        async with opened(client, "GET", url, headers=ANN) as again:
            assert again.status_code == 200, "closed streams gave their slots back"

        async def freed() -> bool:
            return bool(admission.open == 0 and not admission.by_reader)

        await eventually(freed, "every slot given back once its reader disconnected")


async def test_every_streaming_endpoint_counts_and_a_refusal_starts_no_turn(store: Store) -> None:
    queue = HeldQueue()
    app = create_app(store, queue, authenticate=by_header, max_streams_per_user=3)
    async with live(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        turn_id = await user_turn(client, ANN)
        async with (
            opened(client, "GET", f"/api/turns/{turn_id}/events", headers=ANN) as rest,
            opened(client, "POST", "/api/chat", json=chat("c1"), headers=ANN) as ui,
            opened(client, "GET", "/api/chat/c1/stream", headers=ANN) as resumed,
        ):
            assert (rest.status_code, ui.status_code, resumed.status_code) == (200, 200, 200)
            asked = len(queue.turn_ids)
            for refused in [
                client.post("/api/ag-ui", json=run_input("t1"), headers=ANN),
                client.post("/api/chat", json=chat("c2"), headers=ANN),
                client.get("/api/chat/c1/stream", headers=ANN),
            ]:
                r = await refused
                assert r.status_code == 429
                assert "retry-after" in r.headers
            assert len(queue.turn_ids) == asked, "a refused request started no turn"
            r = await client.get("/api/chat/c2/stream", headers=ANN)
            assert r.status_code == 429, "refused before it is looked up: nothing to probe"
        missing = await client.get("/api/chat/nothing/stream", headers=ANN)
        assert missing.status_code == 204, "no active turn under that id"
        assert app.state.admission.open == 0, "an answer without a stream gives its slot back"


async def test_the_process_cap_is_503_and_a_token_is_a_reader_without_sign_in(
    store: Store,
) -> None:
    app = create_app(store, HeldQueue(), max_streams=3, max_streams_per_user=2)
    async with live(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        turns = [await start_turn(client) for _ in range(2)]
        (one, auth_one), (two, auth_two) = turns
        async with (
            opened(client, "GET", f"/api/turns/{one}/events", headers=auth_one) as a,
            opened(client, "GET", f"/api/turns/{one}/events", headers=auth_one) as b,
        ):
            assert (a.status_code, b.status_code) == (200, 200)
            r = await client.get(f"/api/turns/{one}/events", headers=auth_one)
            assert r.status_code == 429, "one token, one reader"
            async with opened(client, "GET", f"/api/turns/{two}/events", headers=auth_two) as c:
                assert c.status_code == 200
                r = await client.get(f"/api/turns/{two}/events", headers=auth_two)
                assert r.status_code == 503
                assert r.headers["retry-after"].isdigit()
                assert "error" in r.json()

        async def freed() -> bool:
            return bool(app.state.admission.open == 0)

        await eventually(freed, "the slots given back")
        r = await client.get(
            f"/api/turns/{two}/events", headers={**auth_two}, params={"after": "x"}
        )
        assert r.status_code == 400
        assert app.state.admission.open == 0
