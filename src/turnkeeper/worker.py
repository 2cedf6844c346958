"""The distributed queue: turns deferred on procrastinate, run by `turnkeeper worker` processes.

procrastinate keeps its jobs in the same PostgreSQL database as the store (its
schema is one of the store's migrations). Jobs are never retried (`tries = 1`
here as in `TurnJob`): a worker that dies leaves its turn to the sweeper.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from .errors import MissingExtra
from .job import TurnJob
from .sweeper import Sweeper

try:
    import procrastinate
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("the distributed queue", "postgres") from e

logger = logging.getLogger("turnkeeper.worker")

TASK = "turnkeeper.run_turn"
QUEUE = "turnkeeper_turns"


def procrastinate_app(url: str) -> procrastinate.App:
    """An app on the store's PostgreSQL database (its own small pool)."""
    connector = procrastinate.PsycopgConnector(conninfo=url, min_size=1, max_size=4)
    return procrastinate.App(connector=connector)


class ProcrastinateQueue:
    """Defers turns as procrastinate jobs; `async with` it to open the connection."""

    def __init__(self, url: str) -> None:
        self.app = procrastinate_app(url)

    async def __aenter__(self) -> ProcrastinateQueue:
        await self.app.open_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.app.close_async()

    async def enqueue(self, turn_id: str) -> None:
        deferrer = self.app.configure_task(TASK, queue=QUEUE, queueing_lock=turn_id)
        await deferrer.defer_async(turn_id=turn_id)


async def run_worker(
    url: str,
    job: TurnJob,
    *,
    concurrency: int = 4,
    sweeper: Sweeper | None = None,
    grace: float = 10.0,
) -> None:
    """Run deferred turns until the process is told to stop (SIGINT, SIGTERM).

    Told to stop, procrastinate fetches no more jobs and gives the running ones
    `grace` seconds; then it cancels them, and each job finalises its turn.
    """
    app = procrastinate_app(url)

    async def run_turn(turn_id: str) -> None:
        await job.run(turn_id)

    app.task(name=TASK, queue=QUEUE, retry=False)(run_turn)
    sweeping = asyncio.create_task((sweeper or Sweeper(job.store)).run(), name="sweeper")
    try:
        async with app.open_async():
            options: dict[str, Any] = {
                "queues": [QUEUE],
                "concurrency": concurrency,
                "shutdown_graceful_timeout": grace,
            }
            await app.run_worker_async(**options)
    finally:
        sweeping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeping
