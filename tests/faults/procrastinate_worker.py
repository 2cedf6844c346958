"""A `turnkeeper worker` for the stalled-job tests, with short heartbeats and leases.

    python -m tests.faults.procrastinate_worker DATABASE_URL MODEL_URL

It runs deferred turns against a `FakeModelServer` through `run_worker`, the
same function `turnkeeper worker` runs, with its timings shortened so a dead
worker is noticed in a few seconds instead of half a minute.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from tests.fake_model import HttpModel
from turnkeeper.service.job import TurnJob
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.service.worker import run_worker
from turnkeeper.store import open_store

LEASE = 2.0
HEARTBEAT = 0.5
STALLED_AFTER = 2.0


async def main(database: str, model_url: str) -> None:
    store = await open_store(database)
    try:
        job = TurnJob(store, HttpModel(model_url), lease=LEASE)
        await run_worker(
            database,
            job,
            concurrency=2,
            sweeper=Sweeper(store, interval=0.5),
            heartbeat=HEARTBEAT,
            stalled_after=STALLED_AFTER,
        )
    finally:
        await store.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
