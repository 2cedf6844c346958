"""The reader's controls over HTTP, on both stores: `DELETE` and `PATCH
/api/conversations/{id}`, `POST /api/turns/{id}/feedback` (api/controls.py)."""

from __future__ import annotations

import asyncio

import httpx

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for, conversation, start_turn
from tests.api.test_users import asked, by_header
from tests.models import LOOKUP, GatedModel
from turnkeeper.api import create_app
from turnkeeper.api.openapi import DOCUMENT, Transcript
from turnkeeper.observe.metrics import Metrics
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store


async def answered(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> tuple[str, dict[str, str]]:
    """A conversation's turn, answered: its id and the conversation's auth header."""
    turn_id, auth = await start_turn(client, "what is on my list?")
    model = GatedModel([scripts.answer("milk")])
    model.gate.set()
    await TurnJob(store, model).run(held.turn_ids[-1])
    return turn_id, auth


async def test_delete_removes_the_conversation_and_every_trace_of_it(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> None:
    turn_id, auth = await answered(store, client, held)
    turn = await store.turn(turn_id)
    assert turn is not None
    path = f"/api/conversations/{turn.conversation_id}"
    assert await store.iterations(turn_id) != []

    assert (await client.delete(path)).status_code == 404, "no token: as an unknown id"
    response = await client.delete(path, headers=auth)
    assert response.status_code == 204
    assert await store.turn(turn_id) is None
    assert await store.iterations(turn_id) == []
    assert await store.history(turn.conversation_id) == []
    assert (await client.get(path, headers=auth)).status_code == 404
    assert (await client.get(f"/api/turns/{turn_id}", headers=auth)).status_code == 404
    assert (await client.delete(path, headers=auth)).status_code == 404


async def test_delete_while_a_turn_runs_is_409_unless_stopped(store: Store) -> None:
    model = GatedModel([scripts.asks(scripts.tool_use("lookup")), scripts.answer("never")])
    queue = LocalQueue(TurnJob(store, model, LOOKUP))
    async with client_for(create_app(store, queue)) as client:
        turn_id, auth = await start_turn(client)
        await asyncio.wait_for(model.started.wait(), 10)
        turn = await store.turn(turn_id)
        assert turn is not None
        path = f"/api/conversations/{turn.conversation_id}"
        response = await client.delete(path, headers=auth)
        assert response.status_code == 409
        assert response.json()["turn_id"] == turn_id
        assert (await client.delete(path, params={"stop": "yes"}, headers=auth)).status_code == 400
        response = await client.delete(path, params={"stop": "1"}, headers=auth)
        assert response.status_code == 204
        model.gate.set()
        await queue.join()
        assert await store.turn(turn_id) is None, "the stopped turn wrote nothing back"
        assert (await client.get(path, headers=auth)).status_code == 404


async def test_rename_changes_the_listed_title_and_bad_titles_are_400(store: Store) -> None:
    async with client_for(create_app(store, HeldQueue(), authenticate=by_header)) as client:
        ann = {"x-user": "ann"}
        conversation_id, _ = await asked(client, ann, "what is on my list?")
        path = f"/api/conversations/{conversation_id}"
        response = await client.patch(path, json={"title": "  My   groceries "}, headers=ann)
        assert response.json() == {"conversation_id": conversation_id, "title": "My groceries"}
        listed = (await client.get("/api/conversations", headers=ann)).json()["conversations"]
        assert [c["title"] for c in listed] == ["My groceries"]
        for bad in ({"title": ""}, {"title": 5}, {"title": "x" * 201}, {}, ["t"]):
            response = await client.patch(path, json=bad, headers=ann)
            assert response.status_code == 400, bad
            assert response.json()["error"]
        assert (
            await client.patch(path, json={"title": "x"}, headers={"x-user": "bob"})
        ).status_code == 404
        restored = await client.patch(path, json={"title": None}, headers=ann)
        assert restored.json()["title"] == "what is on my list?", "the title it now has"
        listed = (await client.get("/api/conversations", headers=ann)).json()["conversations"]
        assert [c["title"] for c in listed] == ["what is on my list?"]


async def test_feedback_is_one_per_turn_counted_and_only_the_owners(
    store: Store, held: HeldQueue
) -> None:
    metrics = Metrics()
    async with client_for(create_app(store, held, metrics=metrics)) as client:
        turn_id, auth = await answered(store, client, held)
        path = f"/api/turns/{turn_id}/feedback"
        response = await client.post(
            path, json={"rating": "down", "comment": "wrong"}, headers=auth
        )
        assert response.json() == {"turn_id": turn_id, "rating": "down", "comment": "wrong"}
        response = await client.post(path, json={"rating": "up"}, headers=auth)
        assert response.status_code == 200
        kept = await store.feedback_of(turn_id)
        assert kept is not None
        assert (kept.rating, kept.comment) == ("up", None)
        counted = [
            line for line in metrics.exposition().decode().splitlines()
            if line.startswith("turnkeeper_feedback_total{")
        ]  # fmt: skip
        assert len(counted) == 2, counted
        assert any(
            'outcome="finished"' in c and 'rating="up"' in c and c.endswith(" 1.0") for c in counted
        )
        _, other = await conversation(client)
        assert (await client.post(path, json={"rating": "up"}, headers=other)).status_code == 404
        bad: object
        for bad in ({"rating": "meh"}, {"rating": "up", "comment": 3}, {}, []):
            assert (await client.post(path, json=bad, headers=auth)).status_code == 400, bad
        running_turn, auth2 = await start_turn(client)
        response = await client.post(
            f"/api/turns/{running_turn}/feedback", json={"rating": "up"}, headers=auth2
        )
        assert response.status_code == 409


async def test_the_transcript_says_each_of_its_turns_rating_to_its_owner_only(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> None:
    """`ratings` of a transcript page: the rating of each of its turns that has one, as
    last given, by turn id (what the widget shows pressed after a reload)."""
    conversation_id, auth = await conversation(client)
    path = f"/api/conversations/{conversation_id}"
    turns = []
    for text, reply in (("one", "first"), ("two", "second"), ("three", "third")):
        response = await client.post(f"{path}/turns", json={"text": text}, headers=auth)
        model = GatedModel([scripts.answer(reply)])
        model.gate.set()
        await TurnJob(store, model).run(held.turn_ids[-1])
        turns.append(response.json()["turn_id"])
    first, _, third = turns

    async def ratings(**page: int) -> object:
        response = await client.get(path, params=page, headers=auth)
        assert response.status_code == 200
        return response.json()["ratings"]

    assert await ratings() == {}, "nothing rated yet"
    for turn_id, rating in ((first, "up"), (first, "down"), (third, "up")):
        rated = await client.post(
            f"/api/turns/{turn_id}/feedback", json={"rating": rating}, headers=auth
        )
        assert rated.status_code == 200
    assert await ratings() == {first: "down", third: "up"}, "the last one given; unrated absent"
    assert await ratings(limit=2) == {third: "up"}, "only the page's own turns"
    assert await ratings(before=4, limit=4) == {first: "down"}
    assert await ratings(before=4, limit=1) == {}, "the second turn's question: not rated"

    body = (await client.get(path, headers=auth)).json()
    assert Transcript.model_validate(body).ratings == {first: "down", third: "up"}
    assert "ratings" in DOCUMENT["components"]["schemas"]["Transcript"]["properties"]
    _, other = await conversation(client)
    refused = await client.get(path, headers=other)
    assert refused.status_code == 404, "another conversation's token sees nothing of it"
    assert "ratings" not in refused.json()


async def test_a_signed_in_readers_ratings_are_theirs_alone(store: Store) -> None:
    held = HeldQueue()
    async with client_for(create_app(store, held, authenticate=by_header)) as client:
        ann = {"x-user": "ann"}
        conversation_id, turn_id = await asked(client, ann, "what is on my list?")
        model = GatedModel([scripts.answer("milk")])
        model.gate.set()
        await TurnJob(store, model).run(held.turn_ids[-1])
        rated = await client.post(
            f"/api/turns/{turn_id}/feedback", json={"rating": "up"}, headers=ann
        )
        assert rated.status_code == 200
        path = f"/api/conversations/{conversation_id}"
        assert (await client.get(path, headers=ann)).json()["ratings"] == {turn_id: "up"}
        refused = await client.get(path, headers={"x-user": "bob"})
        assert refused.status_code == 404
        assert "ratings" not in refused.json()
