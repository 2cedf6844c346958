"""The embedded queue: turns run as asyncio tasks in the serving process.

Concurrency is bounded by a semaphore; a turn waits its turn in `queued`. On
shutdown the queue drains: it starts no more turns (those waiting stay `queued`
in the store and run when the process starts again), gives the running ones a
grace period to finish, then cancels the rest, which their jobs finalise. The
distributed queue, on procrastinate, is in `worker.py`; both take a turn id
and hand it to a `TurnJob`, which runs it once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from .i18n import counted
from .job import TurnJob

logger = logging.getLogger("turnkeeper.queue")


class Queue(Protocol):
    """Whoever runs queued turns: the in-process `LocalQueue`, or procrastinate on PostgreSQL
    (`worker.py`)."""

    async def enqueue(self, turn_id: str) -> None:
        """Hand a queued turn to whoever runs turns."""
        ...


class LocalQueue:
    """Runs each turn as an asyncio task, at most `concurrency` at once."""

    def __init__(self, job: TurnJob, *, concurrency: int = 4) -> None:
        self.job = job
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._running: set[asyncio.Task[None]] = set()
        self._held: set[str] = set()
        self.draining = False

    async def holding(self) -> set[str]:
        """The turns enqueued here and not run yet (those left to the next start included)."""
        return set(self._held)

    async def enqueue(self, turn_id: str) -> None:
        self._held.add(turn_id)
        if self.draining:
            logger.info("turn %s stays queued: the process is stopping", turn_id)
            return
        task = asyncio.create_task(self._run(turn_id), name=f"turn {turn_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, turn_id: str) -> None:
        async with self._slots:
            if self.draining:
                return
            task = asyncio.current_task()
            assert task is not None
            self._running.add(task)
            try:
                await self.job.run(turn_id)
            except Exception:
                logger.exception("turn %s: the job raised; the sweeper will finalise it", turn_id)
            finally:
                self._running.discard(task)
                self._held.discard(turn_id)

    async def join(self) -> None:
        """Wait for every turn enqueued so far."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def drain(self, grace: float) -> None:
        """Start no more turns, give the running ones `grace` seconds, then close."""
        self.draining = True
        if self._running:
            logger.info(
                "stopping: waiting up to %g s for %s", grace, counted(len(self._running), "turn")
            )
            await asyncio.wait(set(self._running), timeout=grace)
        await self.close()

    async def close(self) -> None:
        """Stop running turns: each job finalises its turn as it is cancelled."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
