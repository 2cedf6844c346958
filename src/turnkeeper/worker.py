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
    from procrastinate.jobs import Status
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("the distributed queue", "postgres") from e

logger = logging.getLogger("turnkeeper.worker")

TASK = "turnkeeper.run_turn"
QUEUE = "turnkeeper_turns"
HEARTBEAT = 10.0
"""Seconds between a worker's heartbeats (procrastinate's default)."""
STALLED_AFTER = 30.0
"""Seconds without a heartbeat after which a worker is taken for dead (procrastinate's default)."""


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

    async def holding(self) -> set[str]:
        return await deferred_turns(self.app)


HELD = (
    "SELECT args->>'turn_id' AS turn_id FROM procrastinate_jobs"
    " WHERE queue_name = %(queue)s AND status IN ('todo', 'doing')"
)


async def deferred_turns(app: procrastinate.App) -> set[str]:
    """The turns with a job waiting (`todo`) or running (`doing`): the sweeper leaves
    those queued turns alone."""
    rows = await app.connector.execute_query_all_async(HELD, queue=QUEUE)
    return {str(row["turn_id"]) for row in rows}


class DeferredTurns:
    """The sweeper's view of the procrastinate queue in a worker process: what it holds,
    and a crashed turn queued again (a new job)."""

    def __init__(self, app: procrastinate.App) -> None:
        self.app = app

    async def holding(self) -> set[str]:
        return await deferred_turns(self.app)

    async def enqueue(self, turn_id: str) -> None:
        deferrer = self.app.configure_task(TASK, queue=QUEUE, queueing_lock=turn_id)
        await deferrer.defer_async(turn_id=turn_id)


class StalledJobs:
    """procrastinate's own recovery of a dead worker's jobs, run every `interval` seconds.

    A worker that is killed leaves its job `doing` and its row in
    `procrastinate_workers`. Once it has sent no heartbeat for `stalled_after`
    seconds, its jobs are retired as `failed` (never retried: `tries = 1`; the
    sweeper finalises the turn itself) and its row is pruned.
    """

    def __init__(
        self, app: procrastinate.App, *, stalled_after: float = STALLED_AFTER, interval: float = 5.0
    ) -> None:
        self.manager = app.job_manager
        self.stalled_after = stalled_after
        self.interval = interval

    async def retire(self) -> int:
        """Retire the stalled jobs and prune the dead workers; how many jobs were retired."""
        stalled = await self.manager.get_stalled_jobs(
            queue=QUEUE, seconds_since_heartbeat=self.stalled_after
        )
        retired = 0
        for found in stalled:
            try:
                await self.manager.finish_job(found, Status.FAILED, delete_job=False)
            except Exception as e:  # it finished, or another worker retired it, meanwhile
                logger.info("job %s was not retired: %s", found.id, e)
                continue
            logger.warning("job %s: its worker stopped beating; retired as failed", found.id)
            retired += 1
        await self.manager.prune_stalled_workers(self.stalled_after)
        return retired

    async def run(self) -> None:
        """Retire every `interval` seconds until cancelled; a failed pass is logged and retried."""
        while True:
            try:
                await self.retire()
            except Exception:
                logger.exception(
                    "retiring stalled jobs failed; trying again in %.1f s", self.interval
                )
            await asyncio.sleep(self.interval)


async def run_worker(
    url: str,
    job: TurnJob,
    *,
    concurrency: int = 4,
    sweeper: Sweeper | None = None,
    grace: float = 10.0,
    heartbeat: float = HEARTBEAT,
    stalled_after: float = STALLED_AFTER,
) -> None:
    """Run deferred turns until the process is told to stop (SIGINT, SIGTERM).

    Told to stop, procrastinate fetches no more jobs and gives the running ones
    `grace` seconds; then it cancels them, and each job finalises its turn. The
    worker beats its heart every `heartbeat` seconds; a worker silent for
    `stalled_after` seconds is taken for dead.
    """
    app = procrastinate_app(url)

    async def run_turn(turn_id: str) -> None:
        await job.run(turn_id)

    app.task(name=TASK, queue=QUEUE, retry=False)(run_turn)
    sweeper = sweeper or Sweeper(job.store, resuming=job.resuming)
    sweeper.queue = sweeper.queue or DeferredTurns(app)
    sweeper.requeue = sweeper.requeue or DeferredTurns(app)
    async with app.open_async():
        sweeping = asyncio.create_task(sweeper.run(), name="sweeper")
        try:
            stalled = StalledJobs(app, stalled_after=stalled_after, interval=sweeper.interval)
            retiring = asyncio.create_task(stalled.run(), name="stalled jobs")
            options: dict[str, Any] = {
                "queues": [QUEUE],
                "concurrency": concurrency,
                "shutdown_graceful_timeout": grace,
                "update_heartbeat_interval": heartbeat,
                "stalled_worker_timeout": stalled_after,
            }
            try:
                await app.run_worker_async(**options)
            finally:
                await _cancelled(retiring)
        finally:
            await _cancelled(sweeping)


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
