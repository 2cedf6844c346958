"""One user's turns on two worker processes share one ledger (issue 31): 20 concurrent
turns, each calling the model until the day's tokens are used up, overshoot the limit by
at most the calls in flight, and every billed call is in the ledger."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests import scripts
from tests.api.test_limits import BILLED
from tests.api.test_routes import client_for
from tests.apps import limited
from tests.fake_model import FakeModelServer
from tests.test_server import output, turnkeeper
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.store import open_store
from turnkeeper.usage import today

APPS = Path(__file__).resolve().parents[1] / "apps"
TURNS = 20
PER_CALL = 400


def endless_lookups(n: int) -> list[dict[str, Any]]:
    """`n` calls that each ask for `lookup` again, each billed 400 tokens."""
    calls: list[dict[str, Any]] = []
    for _ in range(n):
        asks = scripts.asks(scripts.tool_use("lookup"))
        asks["usage"] = BILLED
        calls.append(asks)
    return calls


async def test_twenty_turns_of_one_user_over_two_workers_overshoot_by_at_most_the_calls_in_flight(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema
    from turnkeeper.service.worker import ProcrastinateQueue

    with (
        fresh_schema(postgres_database) as url,
        FakeModelServer(endless_lookups(400), gap=0.005) as model,
    ):
        store = await open_store(url)
        try:
            async with ProcrastinateQueue(url) as queue:
                app = create_app(
                    store, queue, authenticate=limited.signed_in, limits=limited.assistant.limits
                )
                async with client_for(app) as client:
                    turn_ids = []
                    for _ in range(TURNS):
                        made = await client.post("/api/conversations", headers={"x-user": "ada"})
                        asked = await client.post(
                            f"/api/conversations/{made.json()['conversation_id']}/turns",
                            json={"text": "look it up"},
                            headers={"x-user": "ada"},
                        )
                        assert asked.status_code == 202, asked.text
                        turn_ids.append(asked.json()["turn_id"])
            env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
            args = ("worker", "limited:assistant", "--app-dir", str(APPS), "--database", url)
            logs = tmp_path / "one.log", tmp_path / "two.log"
            with (
                turnkeeper(*args, "--concurrency", "10", log=logs[0], env=env),
                turnkeeper(*args, "--concurrency", "10", log=logs[1], env=env),
            ):

                async def all_done() -> bool:
                    states = [await store.state_after(t, 0) for t in turn_ids]
                    return all(s is not None and s["done"] for s in states)

                await eventually(all_done, "every turn ending", bound=120)
            states = [await store.state_after(t, 0) for t in turn_ids]
            kept = await store.ledger("ada", today())
        finally:
            await store.close()
    statuses = {s["status"] for s in states if s is not None}
    assert statuses == {"limit_reached"}, (statuses, output(logs[0]), output(logs[1]))
    billed = PER_CALL * len(model.requests)
    assert kept.day.tokens == billed, "every call the model billed is in the ledger"
    assert kept.day.tokens >= limited.TOKENS_PER_DAY
    assert kept.day.tokens <= limited.TOKENS_PER_DAY + TURNS * PER_CALL, (
        "over by at most one call in flight per turn"
    )
