"""A conversation deleted through one app, asked of another over the same store: two
`serve` processes on one database (two stores on one URL), or two apps on one store
(one mounted twice), or by `turnkeeper conversations delete` in a process of its own
while an app serves the database. The other app remembered the conversation's owners; a deleted
conversation must still be a `404` on every route there, exactly as in the app that
deleted it, and nothing may be created for it: no turn queued, none run, no `500`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for, conversation
from tests.api.test_users import ADA, BOB, by_header
from tests.models import GatedModel
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.api.chat_ids import token_space
from turnkeeper.api.routes import NO_CONVERSATION, NO_TURN
from turnkeeper.providers import TextSink, messages_api
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store, new_token, open_store
from turnkeeper.wire import Message, Reply, ToolSpec

BOUND = 15.0
"""Seconds a stream of a deleted turn may stay open at most (it ends at its next read)."""


class Answering(GatedModel):
    """Answers every call at once."""

    def __init__(self) -> None:
        super().__init__([])

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.calls += 1
        return messages_api.parse_reply(scripts.answer("ok"))


@dataclass
class Side:
    """One app: its client, its store, and what it queued."""

    client: httpx.AsyncClient
    store: Store
    app: Any
    held: HeldQueue


@pytest.fixture(params=["two stores", "one store"])
async def other_store(
    request: pytest.FixtureRequest, store: Store, store_url: str
) -> AsyncIterator[Store]:
    """The second app's store: its own on the same database (another `serve` process), or
    the first app's."""
    if request.param == "one store":
        yield store
        return
    opened = await open_store(store_url)
    yield opened
    await opened.close()


@pytest.fixture
async def sides(store: Store, other_store: Store) -> AsyncIterator[tuple[Side, Side]]:
    """The app that deletes (`a`) and the other (`b`), each queueing into a held queue."""
    held_a, held_b = HeldQueue(), HeldQueue()
    app_a, app_b = create_app(store, held_a), create_app(other_store, held_b)
    async with client_for(app_a) as a, client_for(app_b) as b:
        yield Side(a, store, app_a, held_a), Side(b, other_store, app_b, held_b)


def said(response: httpx.Response) -> tuple[int, Any]:
    """The status and the JSON body (else the text) of an answer."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.status_code, response.json()
    return response.status_code, response.text


async def remembered(b: Side) -> tuple[str, str, dict[str, str]]:
    """A conversation with an answered turn, asked, polled and read through `b` (so `b`
    remembers its owners): its id, the turn's id, its auth header."""
    conversation_id, auth = await conversation(b.client)
    path = f"/api/conversations/{conversation_id}"
    response = await b.client.post(
        f"{path}/turns", json={"text": "what is on my list?"}, headers=auth
    )
    assert response.status_code == 202
    turn_id = response.json()["turn_id"]
    model = GatedModel([scripts.answer("milk")])
    model.gate.set()
    await TurnJob(b.store, model).run(b.held.turn_ids[-1])
    assert (await b.client.get(f"/api/turns/{turn_id}", headers=auth)).status_code == 200
    assert (await b.client.get(f"/api/turns/{turn_id}?after=99", headers=auth)).status_code == 204
    assert (await b.client.get(path, headers=auth)).status_code == 200
    return conversation_id, turn_id, auth


async def test_a_conversation_deleted_elsewhere_is_404_on_every_route(
    sides: tuple[Side, Side],
) -> None:
    a, b = sides
    conversation_id, turn_id, auth = await remembered(b)
    path, turn = f"/api/conversations/{conversation_id}", f"/api/turns/{turn_id}"
    assert (await a.client.delete(path, headers=auth)).status_code == 204
    counts = await a.store.counts()
    b.app.state.streams.close()  # an endless stream (as it was) ends at once: no hang

    answers = {
        "poll": await b.client.get(turn, headers=auth),
        "poll after": await b.client.get(turn, params={"after": 99}, headers=auth),
        "events": await b.client.get(f"{turn}/events", headers=auth),
        "cancel": await b.client.post(f"{turn}/cancel", headers=auth),
        "approvals": await b.client.post(
            f"{turn}/approvals", json={"tool_use_id": "toolu_x", "approved": True}, headers=auth
        ),
        "feedback": await b.client.post(f"{turn}/feedback", json={"rating": "up"}, headers=auth),
    }
    assert {n: said(r) for n, r in answers.items()} == dict.fromkeys(
        answers, (404, {"error": NO_TURN})
    )

    answers = {
        "transcript": await b.client.get(path, headers=auth),
        "new turn": await b.client.post(f"{path}/turns", json={"text": "again"}, headers=auth),
        "rename": await b.client.patch(path, json={"title": "mine"}, headers=auth),
        "delete": await b.client.delete(path, headers=auth),
        "delete stopping": await b.client.delete(path, params={"stop": "1"}, headers=auth),
    }
    assert {n: said(r) for n, r in answers.items()} == dict.fromkeys(
        answers, (404, {"error": NO_CONVERSATION})
    )
    stream = await b.client.get(f"/api/chat/{conversation_id}/stream", headers=auth)
    assert stream.status_code == 204, "a chat id with no conversation: nothing active"

    assert b.held.turn_ids == [turn_id], "nothing queued for the deleted conversation"
    assert await a.store.counts() == counts, "no turn row made for it"
    assert await a.store.open_turn(conversation_id) is None
    assert await a.store.guard(conversation_id) is None


async def test_a_conversation_deleted_by_the_command_line_is_404_in_a_serving_app(
    store: Store, store_url: str
) -> None:
    """`turnkeeper conversations delete`, run as its own process on the database an app
    serves: the app, which remembered the conversation and polled its turn, answers it
    as an unknown id, and the AG-UI thread of the same id starts anew, empty."""
    held = HeldQueue()
    app = create_app(store, held)
    async with client_for(app) as client:
        b = Side(client, store, app, held)
        conversation_id, turn_id, auth = await remembered(b)
        path, turn = f"/api/conversations/{conversation_id}", f"/api/turns/{turn_id}"
        deleting = await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", "turnkeeper", "conversations", "delete", conversation_id],
            *["--database", store_url],
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await deleting.communicate()
        assert (deleting.returncode, out.decode()) == (
            0,
            f"deleted conversation {conversation_id}\n",
        )

        answers = {
            "poll": await client.get(turn, headers=auth),
            "poll after": await client.get(turn, params={"after": 99}, headers=auth),
            "cancel": await client.post(f"{turn}/cancel", headers=auth),
            "feedback": await client.post(f"{turn}/feedback", json={"rating": "up"}, headers=auth),
        }
        assert {n: said(r) for n, r in answers.items()} == dict.fromkeys(
            answers, (404, {"error": NO_TURN})
        )
        answers = {
            "transcript": await client.get(path, headers=auth),
            "new turn": await client.post(f"{path}/turns", json={"text": "again"}, headers=auth),
            "rename": await client.patch(path, json={"title": "mine"}, headers=auth),
        }
        assert {n: said(r) for n, r in answers.items()} == dict.fromkeys(
            answers, (404, {"error": NO_CONVERSATION})
        )
        question = {"id": "q", "role": "user", "content": "hi"}
        run = {"threadId": conversation_id, "runId": "r", "messages": [question]}
        app.state.streams.close()  # the run's stream ends at once (its turn is held)
        again = await client.post("/api/ag-ui", json=run, headers=auth)
        assert again.status_code == 200, again.text
        thread = again.headers["x-turnkeeper-conversation"]
        assert thread != conversation_id, "a thread id names a conversation of the token's own"
        page = await client.get(f"/api/conversations/{thread}", headers=auth)
        assert [m["text"] for m in page.json()["messages"]] == ["hi"]
    assert held.turn_ids == [turn_id, again.headers["x-turnkeeper-turn"]]


async def test_the_protocols_find_a_conversation_deleted_elsewhere_unknown(
    store: Store, other_store: Store
) -> None:
    """AG-UI's thread and the AI SDK's chat are the client's ids, created on first use: a
    deleted one is unknown, in the other app as in the app that deleted it, and the
    token's next request starts a new, empty conversation under the id (never a turn in
    the deleted one, never a `500`)."""
    queue = LocalQueue(TurnJob(other_store, Answering()))
    question = {"id": "q", "role": "user", "content": "hi"}
    message = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    async with (
        client_for(create_app(store, HeldQueue())) as a,
        client_for(create_app(other_store, queue)) as b,
    ):
        for route, body in (
            ("/api/ag-ui", {"threadId": "thread-d", "runId": "r", "messages": [question]}),
            ("/api/chat", {"id": "chat-d", "messages": [message]}),
        ):
            first = await b.post(route, json=body)
            assert first.status_code == 200
            auth = {"authorization": f"Bearer {first.headers['x-turnkeeper-token']}"}
            path = f"/api/conversations/{first.headers['x-turnkeeper-conversation']}"
            assert len((await b.get(path, headers=auth)).json()["messages"]) == 2
            assert (await a.delete(path, headers=auth)).status_code == 204

            again = await b.post(route, json=body, headers=auth)

            assert again.status_code == 200, again.text
            assert "x-turnkeeper-token" not in again.headers, "the token's own space still"
            assert len((await b.get(path, headers=auth)).json()["messages"]) == 2, "empty before"
        await queue.join()


async def test_a_conversation_id_made_again_by_another_opens_only_for_them(
    store: Store, other_store: Store
) -> None:
    """A protocol id deleted and created again by someone else (a guessable thread id): the
    app that knew its first owner does not let them open the new one."""
    async with (
        client_for(create_app(store, HeldQueue(), authenticate=by_header)) as a,
        client_for(create_app(other_store, HeldQueue(), authenticate=by_header)) as b,
    ):
        await store.create_conversation(new_token()[1], owner="ada", conversation_id="thread-1")
        assert (await b.get("/api/conversations/thread-1", headers=ADA)).status_code == 200
        assert (await a.delete("/api/conversations/thread-1", headers=ADA)).status_code == 204
        await store.create_conversation(new_token()[1], owner="bob", conversation_id="thread-1")
        await store.create_turn("thread-1", "bob's question", user="bob")

        answers = {
            "transcript": await b.get("/api/conversations/thread-1", headers=ADA),
            "new turn": await b.post(
                "/api/conversations/thread-1/turns", json={"text": "mine?"}, headers=ADA
            ),
        }
        assert {n: r.status_code for n, r in answers.items()} == dict.fromkeys(answers, 404)
        assert (await b.get("/api/chat/thread-1/stream", headers=ADA)).status_code == 204
        bobs = await b.get("/api/conversations/thread-1", headers=BOB)
        assert bobs.json()["messages"][0]["text"] == "bob's question"


async def test_a_stream_open_when_its_conversation_is_deleted_ends(
    sides: tuple[Side, Side],
) -> None:
    a, b = sides
    conversation_id, auth = await conversation(b.client)
    path = f"/api/conversations/{conversation_id}"
    response = await b.client.post(f"{path}/turns", json={"text": "hi"}, headers=auth)
    turn_id = response.json()["turn_id"]
    b.app.state.streams.keep_alive = 0.05  # the log is read again at every keep-alive
    stream = asyncio.create_task(b.client.get(f"/api/turns/{turn_id}/events", headers=auth))

    async def opened() -> bool:
        return bool(b.app.state.streams.open)

    await eventually(opened, "the stream opening")
    assert (await a.client.delete(path, params={"stop": "1"}, headers=auth)).status_code == 204
    await asyncio.wait([stream], timeout=BOUND)
    if not stream.done():
        b.app.state.streams.close()
        await stream
        raise AssertionError(f"the deleted turn's stream was still open after {BOUND} s")
    ended = stream.result()
    assert ended.status_code == 200
    assert "event:" not in ended.text


@pytest.mark.parametrize(
    ("route", "call", "key"),
    [
        ("turns", "create_turn", NO_CONVERSATION),
        ("ag-ui", "create_turn", NO_CONVERSATION),
        ("chat", "create_turn", NO_CONVERSATION),
        ("feedback", "give_feedback", NO_TURN),
        ("approvals", "decide", NO_TURN),
    ],
)
async def test_a_conversation_deleted_while_a_request_acts_on_it_is_404(
    store: Store, monkeypatch: pytest.MonkeyPatch, route: str, call: str, key: str
) -> None:
    """Deleted after the request found it open and before the store's call: the call's
    refusal is the `404` of a conversation (or turn) that is not there, nothing queued."""
    held = HeldQueue()
    async with client_for(create_app(store, held)) as client:
        token, token_hash = new_token()  # the conversation the token's thread id names
        auth = {"authorization": f"Bearer {token}"}
        conversation_id = token_space(token_hash).conversation("thread-x")
        await store.create_conversation(token_hash, conversation_id=conversation_id)
        response = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": "hi"}, headers=auth
        )
        turn_id = response.json()["turn_id"]
        model = GatedModel([scripts.answer("milk")])
        model.gate.set()
        await TurnJob(store, model).run(turn_id)
        original = getattr(store, call)

        async def deleted_first(*args: Any, **kwargs: Any) -> Any:
            assert await store.delete_conversation(conversation_id, stop=False) is True
            return await original(*args, **kwargs)

        monkeypatch.setattr(store, call, deleted_first)
        question = {"id": "q", "role": "user", "content": "again"}
        message = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "again"}]}
        requests = {
            "turns": (f"/api/conversations/{conversation_id}/turns", {"text": "again"}),
            "ag-ui": (
                "/api/ag-ui",
                {"threadId": "thread-x", "runId": "r", "messages": [question]},
            ),
            "chat": ("/api/chat", {"id": "thread-x", "messages": [message]}),
            "feedback": (f"/api/turns/{turn_id}/feedback", {"rating": "up"}),
            "approvals": (
                f"/api/turns/{turn_id}/approvals",
                {"tool_use_id": "toolu_x", "approved": True},
            ),
        }
        path, body = requests[route]
        answer = await client.post(path, json=body, headers=auth)
    assert (answer.status_code, answer.json()["error"]) == (404, key)
    assert held.turn_ids == [turn_id]
    assert await store.counts() == {}
