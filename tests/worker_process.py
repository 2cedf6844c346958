"""A worker process for the crash tests: runs one queued turn against a `FakeModelServer`.

    python -m tests.worker_process DATABASE_URL TURN_ID MODEL_URL LEASE

Its tools: `lookup` answers at once; `slow_step` tells the model server it
started, then blocks until the process is killed.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import httpx

from tests.fake_model import HttpModel
from turnkeeper.service.job import TurnJob
from turnkeeper.store import open_store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import ToolSpec


def toolset(model_url: str) -> FunctionToolset:
    async def slow_step(args: dict[str, Any]) -> str:
        async with httpx.AsyncClient() as client:
            await client.post(f"{model_url}/tool-started", json={"tool": "slow_step"})
        await asyncio.Event().wait()
        return "never"

    return FunctionToolset(
        [
            Tool(ToolSpec("lookup", "Look something up."), lambda args: "found it"),
            Tool(ToolSpec("slow_step", "Take a long time."), slow_step),
        ]
    )


async def main(database: str, turn_id: str, model_url: str, lease: float) -> None:
    store = await open_store(database)
    job = TurnJob(store, HttpModel(model_url), toolset(model_url), lease=lease)
    outcome = await job.run(turn_id)
    print(f"outcome: {outcome}", flush=True)
    await store.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
