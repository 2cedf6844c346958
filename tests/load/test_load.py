"""Load: one serving process with 1,000 turns in flight against a slow model while 200
clients poll. Every turn finishes; every poller sees strictly increasing versions
ending in `done: true`; nothing is lost (each history whole and valid).

The embedded `turnkeeper serve` on SQLite, `--concurrency 1000`: one process
holds every turn at once. The turns are queued in the store before it starts
(it runs what it finds queued), so all 1,000 start together.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.load.slow_model import SlowModel
from tests.scripts import assert_valid_history
from tests.test_server import free_port, until_up
from turnkeeper.store import new_token, open_store

pytestmark = pytest.mark.load

TURNS = 1000
POLLERS = 200
DELAY = 5.0
"""Seconds each model call takes: long enough that every turn is in flight at once."""


Turn = tuple[str, dict[str, str], str]
"""A conversation's id, its authorization header, its turn's id."""


async def queued(database: str) -> list[Turn]:
    store = await open_store(database)
    turns = []
    try:
        for _ in range(TURNS):
            token, token_hash = new_token()
            conversation_id = await store.create_conversation(token_hash)
            turn = await store.create_turn(conversation_id, "what now?")
            turns.append((conversation_id, {"authorization": f"Bearer {token}"}, turn.turn_id))
    finally:
        await store.close()
    return turns


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'load.db'}"


@pytest.fixture
async def turns(database: str) -> list[Turn]:
    return await queued(database)


@pytest.fixture
def serving(
    database: str, turns: list[Turn], tmp_path: Path
) -> Iterator[tuple[str, SlowModel, subprocess.Popen[bytes]]]:
    port = free_port()
    command = ["serve", "--database", database, "--port", str(port), "--provider", "anthropic"]
    command += ["--concurrency", str(TURNS)]
    with SlowModel(DELAY) as model, (tmp_path / "serve.log").open("wb") as out:
        environ = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-t"}
        process = subprocess.Popen(
            [sys.executable, "-m", "turnkeeper", *command],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )
        try:
            yield f"http://127.0.0.1:{port}", model, process
        finally:
            process.kill()
            process.wait()


async def poll(http: httpx.AsyncClient, turns: list[Turn]) -> dict[str, list[int]]:
    """Poll each turn until done; the versions seen, per turn."""
    seen: dict[str, list[int]] = {turn_id: [] for _, _, turn_id in turns}
    pending = list(turns)
    while pending:
        for turn in list(pending):
            _, auth, turn_id = turn
            after = seen[turn_id][-1] if seen[turn_id] else 0
            try:
                response = await http.get(f"/api/turns/{turn_id}?after={after}", headers=auth)
            except httpx.TransportError:  # a kept-alive connection closed under us: poll again
                continue
            assert response.status_code in (200, 204), response.text
            if response.status_code == 200:
                state: dict[str, Any] = response.json()
                seen[turn_id].append(state["version"])
                if state["done"]:
                    assert state["status"] == "finished", state
                    pending.remove(turn)
        await asyncio.sleep(0.5)  # a client's polling interval, not a wait for state
    return seen


async def test_a_thousand_turns_in_flight_under_two_hundred_pollers(
    serving: tuple[str, SlowModel, subprocess.Popen[bytes]],
    database: str,
    turns: list[Turn],
    tmp_path: Path,
) -> None:
    base, model, process = serving
    await until_up(base, process, tmp_path / "serve.log")
    limits = httpx.Limits(max_connections=POLLERS)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        share = TURNS // POLLERS
        polled = await asyncio.gather(
            *(poll(http, turns[i * share : (i + 1) * share]) for i in range(POLLERS))
        )
    assert process.poll() is None, "the serving process held"
    assert model.requests == TURNS, "one model call per turn, none repeated"
    assert model.peak == TURNS, "every turn was in its model call at once"
    versions = {turn_id: seen for by_turn in polled for turn_id, seen in by_turn.items()}
    assert len(versions) == TURNS
    for seen in versions.values():
        assert seen == sorted(set(seen)), f"versions not strictly increasing: {seen}"
    store = await open_store(database)
    try:
        assert await store.counts() == {"finished": TURNS}
        for conversation_id, _, _ in turns:
            history = await store.history(conversation_id)
            assert [m["role"] for m in history] == ["user", "assistant"]
            assert_valid_history(history)
    finally:
        await store.close()
