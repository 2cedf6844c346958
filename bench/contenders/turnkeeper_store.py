"""turnkeeper's turns as queued turns: `TurnJob` with a store (SQLite or PostgreSQL).

Each turn is a new conversation with one queued turn, run by `TurnJob.run`:
claim, then the loop with the store's hooks (usage as each call returns,
then one write per iteration: checkpoint, state, calls; the cancel flag read
before every call), then the final write. The store is opened on the first
turn: SQLite in a temporary file, PostgreSQL in a scratch database; the
workload creates both, passes their URLs in the environment, and removes them
afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from turnkeeper import Budget, Outcome
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store, new_token, open_store

from .. import fake
from .turnkeeper_loop import FakeProvider, as_provider, quiet, toolset

URLS = {"sqlite": "TURNKEEPER_BENCH_SQLITE_URL", "postgres": "TURNKEEPER_BENCH_POSTGRES_URL"}


def store_url(kind: str) -> str:
    url = os.environ.get(URLS[kind])
    if not url:
        raise RuntimeError(f"{URLS[kind]} is not set")
    return url


def make(spec: fake.Spec, kind: str = "sqlite") -> fake.Turn:
    budget = Budget(max_iterations=spec.calls, deadline=3600.0, call_timeout=600.0)
    opened: dict[str, Any] = {}

    async def job() -> TurnJob:
        if "job" not in opened:
            store: Store = await open_store(store_url(kind))
            opened["job"] = TurnJob(
                store, as_provider(FakeProvider(spec)), toolset(spec), budget, reporter=quiet
            )
        found: TurnJob = opened["job"]
        return found

    async def turn() -> Outcome | None:
        runner = await job()
        conversation_id = await runner.store.create_conversation(new_token()[1])
        queued = await runner.store.create_turn(conversation_id, "go")
        outcome = await runner.run(queued.turn_id)
        assert outcome is Outcome.FINISHED, outcome
        return outcome

    return turn
