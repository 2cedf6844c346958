"""The embedded queue: turns run as asyncio tasks in the serving process.

Concurrency is bounded by a semaphore; a turn waits its turn in `queued`. The
distributed queue, on procrastinate, is in `worker.py`; both take a turn id
and hand it to a `TurnJob`, which runs it once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from .job import TurnJob

logger = logging.getLogger("turnkeeper.queue")


class Queue(Protocol):
    async def enqueue(self, turn_id: str) -> None:
        """Hand a queued turn to whoever runs turns."""
        ...


class LocalQueue:
    """Runs each turn as an asyncio task, at most `concurrency` at once."""

    def __init__(self, job: TurnJob, *, concurrency: int = 4) -> None:
        self.job = job
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()

    async def enqueue(self, turn_id: str) -> None:
        task = asyncio.create_task(self._run(turn_id), name=f"turn {turn_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, turn_id: str) -> None:
        async with self._slots:
            try:
                await self.job.run(turn_id)
            except Exception:
                logger.exception("turn %s: the job raised; the sweeper will finalise it", turn_id)

    async def join(self) -> None:
        """Wait for every turn enqueued so far."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self) -> None:
        """Stop running turns (their leases expire and the sweeper finalises them)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
