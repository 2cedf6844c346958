"""Nobody gets in: another conversation's token opens nothing, and ids cannot be guessed."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.api.test_routes import HeldQueue, client_for, conversation
from turnkeeper.api import create_app
from turnkeeper.store import Store, new_id, new_token


@pytest.fixture
def held() -> HeldQueue:
    return HeldQueue()


@pytest.fixture
async def client(store: Store, held: HeldQueue) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_app(store, held)) as c:
        yield c


async def test_another_conversations_token_can_neither_read_poll_cancel_nor_post(
    store: Store, client: httpx.AsyncClient, held: HeldQueue
) -> None:
    mine, auth = await conversation(client)
    response = await client.post(
        f"/api/conversations/{mine}/turns", json={"text": "mine"}, headers=auth
    )
    turn_id = response.json()["turn_id"]
    _, intruder = await conversation(client)

    attempts = [
        ("GET", f"/api/turns/{turn_id}", None),
        ("GET", f"/api/turns/{turn_id}?after=0", None),
        ("POST", f"/api/turns/{turn_id}/cancel", None),
        ("GET", f"/api/conversations/{mine}", None),
        ("POST", f"/api/conversations/{mine}/turns", {"text": "not yours"}),
    ]
    for method, path, body in attempts:
        response = await client.request(method, path, json=body, headers=intruder)
        assert response.status_code == 404, (method, path)
        assert turn_id not in response.text
        assert mine not in response.text

    assert not await store.cancel_requested(turn_id), "the intruder's cancel did nothing"
    assert held.turn_ids == [turn_id], "the intruder queued nothing"
    transcript = (await client.get(f"/api/conversations/{mine}", headers=auth)).json()
    assert [m["text"] for m in transcript["messages"]] == ["mine"]


def bits_per_character(samples: list[str]) -> float:
    counts = Counter("".join(samples))
    total = sum(counts.values())
    return -sum(n / total * math.log2(n / total) for n in counts.values())


@pytest.mark.parametrize("prefix", ["c", "t"])
def test_ids_are_long_random_and_not_a_sequence(prefix: str) -> None:
    ids = [new_id(prefix) for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    randoms = [i.removeprefix(f"{prefix}_") for i in ids]
    assert all(re.fullmatch(r"[0-9a-f]{20,}", r) for r in randoms), ids[:3]
    assert len(randoms[0]) * 4 >= 80, "at least 80 random bits"
    assert bits_per_character(randoms) > 3.9, "hex digits spread evenly"
    numbers = [int(r, 16) for r in randoms]
    steps = {b - a for a, b in itertools.pairwise(numbers)}
    assert len(steps) > 1990, "no counter or fixed stride"
    assert sorted(numbers) != numbers


def test_tokens_are_long_random_and_stored_only_as_a_hash() -> None:
    pairs = [new_token() for _ in range(500)]
    tokens = [t for t, _ in pairs]
    assert len(set(tokens)) == len(tokens)
    assert all(len(t) >= 43 for t in tokens), "at least 256 bits, URL-safe base64"
    assert bits_per_character(tokens) > 5.5
    assert all(token not in stored and len(stored) == 64 for token, stored in pairs)


async def test_ids_the_api_hands_out_are_the_random_kind(client: httpx.AsyncClient) -> None:
    seen = [await conversation(client) for _ in range(20)]
    ids = [c for c, _ in seen]
    assert all(re.fullmatch(r"c_[0-9a-f]{20}", c) for c in ids)
    assert len(set(ids)) == 20
