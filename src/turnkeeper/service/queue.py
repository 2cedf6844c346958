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

from ..i18n import counted
from ..store import Store
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
        self._running: dict[str, asyncio.Task[None]] = {}
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
            self._running[turn_id] = task
            try:
                await self.job.run(turn_id)
            except Exception:
                logger.exception("turn %s: the job raised; the sweeper will finalise it", turn_id)
            finally:
                self._running.pop(turn_id, None)
                self._held.discard(turn_id)

    async def join(self) -> None:
        """Wait for every turn enqueued so far."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def running(self) -> list[str]:
        """The ids of the turns running now."""
        return list(self._running)

    async def drain(self, grace: float) -> None:
        """Start no more turns, give the running ones `grace` seconds, then close; say how
        each of them ended."""
        self.draining = True
        in_flight = dict(self._running)
        if in_flight:
            logger.info(
                "stopping: waiting up to %g s for %s", grace, counted(len(in_flight), "turn")
            )
            await asyncio.wait(set(in_flight.values()), timeout=grace)
        await self.close()
        for turn_id in in_flight:
            await say_how_it_ended(self.job.store, turn_id)

    async def close(self) -> None:
        """Stop running turns: each job finalises its turn as it is cancelled."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def say_how_it_ended(store: Store, turn_id: str) -> None:
    """One line at shutdown: a turn that was running, and its status as the store holds it."""
    try:
        state = await store.state_after(turn_id, 0)
    except Exception as e:
        logger.warning("turn %s: how it ended could not be read: %s", turn_id, e)
        return
    status = state.get("status") if state is not None else None
    logger.info("turn %s ended: %s", turn_id, status or "unknown")
