"""Limits per user (issue 31), over HTTP with signed-in users, on both stores: a fake
Messages API bills 400 tokens a call (300 in, 100 out), so a turn of a tool call and an
answer is 800 tokens."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for
from tests.api.test_users import ADA, BOB, by_header
from tests.fake_model import FakeModelServer, HttpModel
from tests.models import LOOKUP
from turnkeeper import Limits
from turnkeeper.api import create_app
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store
from turnkeeper.usage import until_midnight

BILLED = scripts.usage(input_tokens=300, output_tokens=100)
"""What the fake Messages API bills for every call: 400 tokens."""


def tool_then_answer() -> list[dict[str, Any]]:
    """One 800-token turn: a call that asks for `lookup`, then the answer."""
    asks = scripts.asks(scripts.tool_use("lookup"))
    asks["usage"] = BILLED
    return [asks, scripts.answer("found it", usage=BILLED)]


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer([]) as server:
        yield server


async def ask(
    client: httpx.AsyncClient, user: dict[str, str], **body: Any
) -> tuple[httpx.Response, str]:
    created = await client.post("/api/conversations", headers=user)
    assert created.status_code == 201
    conversation_id = created.json()["conversation_id"]
    asked = await client.post(
        f"/api/conversations/{conversation_id}/turns",
        json={"text": "look it up", **body},
        headers=user,
    )
    return asked, conversation_id


async def test_a_fourth_turn_within_a_minute_is_429_and_another_user_is_not_affected(
    store: Store,
) -> None:
    held = HeldQueue()
    app = create_app(store, held, authenticate=by_header, limits=Limits(turns_per_minute=3))
    async with client_for(app) as client:
        for _ in range(3):
            assert (await ask(client, ADA))[0].status_code == 202
        refused, _ = await ask(client, ADA, locale="es")
        assert (await ask(client, BOB))[0].status_code == 202
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    body = refused.json()
    assert body["key"] == "limits.turns_per_minute"
    assert body["error"] == "Has hecho demasiadas preguntas en el último minuto."
    assert body["retry_after"] == int(refused.headers["retry-after"])
    assert len(held.turn_ids) == 4, "the refused turn was not queued"


async def test_a_days_tokens_run_out_inside_a_turn_then_at_the_door(
    store: Store, model: FakeModelServer
) -> None:
    limits = Limits(tokens_per_day=2000)
    model.script = tool_then_answer() * 3
    queue = LocalQueue(TurnJob(store, HttpModel(model.url), LOOKUP, limits=limits))
    app = create_app(store, queue, authenticate=by_header, limits=limits)
    async with client_for(app) as client:
        states = []
        for _ in range(3):
            asked, _ = await ask(client, ADA)
            assert asked.status_code == 202, asked.text
            await queue.join()
            turn_id = asked.json()["turn_id"]
            states.append((await client.get(f"/api/turns/{turn_id}", headers=ADA)).json())
        fourth, _ = await ask(client, ADA)
        usage = (await client.get("/api/usage", headers=ADA)).json()
        bob = (await client.get("/api/usage", headers=BOB)).json()

    assert [s["status"] for s in states] == ["finished", "finished", "limit_reached"]
    assert [s["usage"]["iterations"] for s in states] == [2, 2, 1]
    last = states[-1]
    assert (last["done"], last["has_error"], last["stopped"]) == (True, False, False)
    assert last["messages"][-1]["key"] == "notices.limit_reached"
    assert len(model.requests) == 5, "the third turn's second call was never made"

    assert fourth.status_code == 429
    assert fourth.json()["key"] == "limits.tokens_per_day"
    assert abs(int(fourth.headers["retry-after"]) - until_midnight()) <= 2, "until midnight"

    tokens = usage["tokens_per_day"]
    assert (tokens["used"], tokens["limit"]) == (2000, 2000)
    assert abs(tokens["resets_in"] - until_midnight()) <= 2
    assert usage["turns_per_minute"]["used"] == 3
    assert bob["tokens_per_day"]["used"] == 0, "bob's ledger is his own"


async def test_usage_is_counted_for_every_signed_in_user_without_limits(
    store: Store, model: FakeModelServer
) -> None:
    """Issue 44: `used: 0` unless `limits=` was set; now the day's turns are counted."""
    model.script = tool_then_answer() * 2
    queue = LocalQueue(TurnJob(store, HttpModel(model.url), LOOKUP))
    app = create_app(store, queue, authenticate=by_header)
    async with client_for(app) as client:
        for _ in range(2):
            assert (await ask(client, ADA))[0].status_code == 202
            await queue.join()
        usage = (await client.get("/api/usage", headers=ADA)).json()
        bob = (await client.get("/api/usage", headers=BOB)).json()
    assert (usage["tokens_per_day"]["used"], usage["tokens_per_day"]["limit"]) == (1600, None)
    assert usage["turns_per_minute"]["used"] == 2
    assert bob["tokens_per_day"]["used"] == 0


async def test_usage_needs_a_signed_in_user(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue(), authenticate=by_header)) as client:
        assert (await client.get("/api/usage")).status_code == 401
    async with client_for(create_app(store, HeldQueue())) as client:
        answer = await client.get("/api/usage")
    assert answer.status_code == 404
    assert "signed-in" in answer.json()["error"]


async def test_without_sign_in_the_limits_count_for_the_whole_assistant(
    store: Store,
) -> None:
    held = HeldQueue()
    app = create_app(store, held, limits=Limits(turns_per_minute=2))
    async with client_for(app) as client:
        answers = []
        for _ in range(3):
            created = (await client.post("/api/conversations")).json()
            auth = {"authorization": f"Bearer {created['token']}"}
            answers.append(
                await client.post(
                    f"/api/conversations/{created['conversation_id']}/turns",
                    json={"text": "hi"},
                    headers=auth,
                )
            )
    assert [a.status_code for a in answers] == [202, 202, 429]
    assert answers[-1].json()["error"] == "You have asked too many questions in the last minute."


async def test_a_days_cost_is_priced_per_call_and_closes_the_door_at_its_limit(
    store: Store, model: FakeModelServer
) -> None:
    """claude-sonnet-4-6 at $3 in and $15 out per million: a 400-token call is $0.0024."""
    priced = [dict(body, model="claude-sonnet-4-6") for body in tool_then_answer()]
    limits = Limits(cost_per_day=0.0048)
    model.script = priced
    queue = LocalQueue(TurnJob(store, HttpModel(model.url), LOOKUP, limits=limits))
    app = create_app(store, queue, authenticate=by_header, limits=limits)
    async with client_for(app) as client:
        asked, _ = await ask(client, ADA)
        await queue.join()
        state = (await client.get(f"/api/turns/{asked.json()['turn_id']}", headers=ADA)).json()
        refused, _ = await ask(client, ADA, locale="es")
        usage = (await client.get("/api/usage", headers=ADA)).json()
    assert (state["status"], state["usage"]["cost_usd"]) == ("finished", 0.0048)
    assert refused.status_code == 429
    assert refused.json()["key"] == "limits.cost_per_day"
    assert refused.json()["error"] == "Has agotado lo que puedes usar hoy del asistente."
    assert usage["cost_per_day"]["used"] == pytest.approx(0.0048)
    assert usage["cost_per_day"]["limit"] == 0.0048


async def test_a_tier_without_limits_is_still_counted_and_never_refused(
    store: Store, model: FakeModelServer
) -> None:
    def tiers(user: str | None) -> Limits | None:
        return None if user == "bob" else Limits(tokens_per_day=400)

    model.script = tool_then_answer() * 2
    queue = LocalQueue(TurnJob(store, HttpModel(model.url), LOOKUP, limits=tiers))
    app = create_app(store, queue, authenticate=by_header, limits=tiers)
    async with client_for(app) as client:
        for _ in range(2):
            asked, _ = await ask(client, BOB)
            assert asked.status_code == 202
            await queue.join()
        usage = (await client.get("/api/usage", headers=BOB)).json()
    assert (usage["tokens_per_day"]["used"], usage["tokens_per_day"]["limit"]) == (1600, None)
    assert len(model.requests) == 4


async def test_the_protocols_answer_the_same_429_in_their_own_shapes(store: Store) -> None:
    """A turn asked through AG-UI or the AI SDK's chat meets the same door (its first
    turn is held in the queue; its stream is not read)."""
    held = HeldQueue()
    app = create_app(store, held, authenticate=by_header, limits=Limits(turns_per_minute=1))
    async with client_for(app) as client:
        assert (await ask(client, ADA))[0].status_code == 202
        question = {"id": "q", "role": "user", "content": "hi"}
        run = {"threadId": "thread-1", "runId": "run-1", "messages": [question]}
        refused_run = await client.post("/api/ag-ui", json=run, headers=ADA)
        message = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        chat = {"id": "chat-1", "messages": [message]}
        refused_chat = await client.post("/api/chat", json=chat, headers=ADA)
    for refused in (refused_run, refused_chat):
        assert refused.status_code == 429
        assert refused.json()["key"] == "limits.turns_per_minute"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert (refused_run.json()["type"], refused_run.json()["code"]) == ("RUN_ERROR", "rate_limited")
    assert refused_chat.json()["errorText"] == refused_chat.json()["error"]
    assert len(held.turn_ids) == 1, "neither was queued"


async def test_concurrent_questions_of_one_user_are_counted_one_at_a_time(store: Store) -> None:
    """A script that asks ten questions at once, each in a conversation of its own, gets
    exactly its three a minute: the door decides in the transaction that creates the turn."""
    held = HeldQueue()
    app = create_app(store, held, authenticate=by_header, limits=Limits(turns_per_minute=3))
    async with client_for(app) as client:
        conversations = [
            (await client.post("/api/conversations", headers=ADA)).json()["conversation_id"]
            for _ in range(10)
        ]
        answers = await asyncio.gather(
            *(
                client.post(f"/api/conversations/{c}/turns", json={"text": "hi"}, headers=ADA)
                for c in conversations
            )
        )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [202] * 3 + [429] * 7
    assert len(held.turn_ids) == 3


@pytest.mark.parametrize(
    ("tokens_per_day", "sent"),
    [(1_000, 2), (1_500, 3)],
    ids=["spent-by-the-cut-reply", "spent-by-the-summary"],
)
async def test_compactions_calls_are_each_checked_against_the_day(
    store: Store, model: FakeModelServer, tokens_per_day: int, sent: int
) -> None:
    """A reply cut by the context window (1,000 tokens billed) is compacted and its request
    sent once more: two more calls, a summary (500 tokens) and the request. Each is made
    only if the day has room after everything the turn billed before it; the turn that
    cannot go on ends `limit_reached`, with every call it made counted."""
    limits = Limits(tokens_per_day=tokens_per_day)
    cut = scripts.body([], "model_context_window_exceeded", usage=scripts.usage(900, 100))
    model.script = [
        scripts.answer("first", usage=scripts.usage(10, 5)),
        cut,
        scripts.answer("A summary.", usage=scripts.usage(400, 100)),
        scripts.answer("never sent"),
    ]
    queue = LocalQueue(TurnJob(store, HttpModel(model.url), limits=limits))
    app = create_app(store, queue, authenticate=by_header, limits=limits)
    async with client_for(app) as client:
        _, conversation_id = await ask(client, ADA)
        await queue.join()
        asked = await client.post(
            f"/api/conversations/{conversation_id}/turns", json={"text": "and now?"}, headers=ADA
        )
        await queue.join()
        state = (await client.get(f"/api/turns/{asked.json()['turn_id']}", headers=ADA)).json()
        usage = (await client.get("/api/usage", headers=ADA)).json()
    assert len(model.requests) == sent, "no call was made once the day was used up"
    assert (state["status"], state["done"]) == ("limit_reached", True)
    assert state["messages"][-1]["key"] == "notices.limit_reached"
    billed = [15, 1_000, 500][:sent]
    assert state["usage"]["iterations"] == sent - 1
    assert usage["tokens_per_day"]["used"] == sum(billed), "every call made is on the ledger"
