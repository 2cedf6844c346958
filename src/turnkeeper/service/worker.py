"""The distributed queue: turns deferred on procrastinate, run by `turnkeeper worker` processes.

procrastinate keeps its jobs in the same PostgreSQL database as the store (its
schema is one of the store's migrations). Jobs are never retried (`tries = 1`
here as in `TurnJob`): a worker that dies leaves its turn to the sweeper.

A worker rides out an outage of the database, however long: procrastinate's
worker stops when its heartbeat, its listener or a fetch fails, so it runs on a
`RidingJobManager` that waits instead (see there). Its pool (`store.pool.Pool`)
fails fast while the database cannot be reached and keeps reconnecting; the
process logs the outage once and its end (docs/design.md §8).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Iterable
from typing import Any

from ..errors import MissingExtra
from ..i18n import counted
from ..store import Store
from . import ownership
from .job import TurnJob
from .ownership import queue_of
from .queue import say_how_it_ended
from .sweeper import Sweeper

try:
    import procrastinate
    import psycopg
    from procrastinate.exceptions import ConnectorException
    from procrastinate.jobs import Job, Status
    from procrastinate.manager import JobManager, NotificationCallback
    from procrastinate.worker import Worker
    from psycopg_pool import PoolTimeout

    from ..store.pool import Backoff, Outage, Pool, outage
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise MissingExtra("the distributed queue", "postgres") from e

logger = logging.getLogger("turnkeeper.worker")

TASK = "turnkeeper.run_turn"
QUEUE = ownership.QUEUE
"""The queue of turns that record no assistant (queued before turns recorded one)."""


async def defer(app: procrastinate.App, store: Store | None, turn_id: str) -> None:
    """Defer the turn's job on its own assistant's queue (as the store records it)."""
    turn = None if store is None else await store.turn(turn_id)
    queue = queue_of(None if turn is None else turn.owner)
    deferrer = app.configure_task(TASK, queue=queue, queueing_lock=turn_id)
    await deferrer.defer_async(turn_id=turn_id)


HEARTBEAT = 10.0
"""Seconds between a worker's heartbeats (procrastinate's default)."""
STALLED_AFTER = 30.0
"""Seconds without a heartbeat after which a worker is taken for dead (procrastinate's default)."""


def procrastinate_app(url: str) -> procrastinate.App:
    """An app on the store's PostgreSQL database (its own small pool, failing fast while
    the database cannot be reached)."""
    connector = procrastinate.PsycopgConnector(
        conninfo=url, min_size=1, max_size=4, pool_factory=Pool
    )
    return procrastinate.App(connector=connector)


def unreachable(error: BaseException) -> bool:
    """Whether a procrastinate error says the database could not be reached or the
    connection was lost (`psycopg.OperationalError`; the pool's `PoolTimeout` is one)."""
    return isinstance(error, ConnectorException) and isinstance(
        error.__cause__, psycopg.OperationalError
    )


ASTRAY = "SELECT id FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = %(worker_id)s"
BEAT = (
    "UPDATE procrastinate_workers SET last_heartbeat = NOW() WHERE id = %(worker_id)s RETURNING id"
)


class RidingJobManager(JobManager):
    """procrastinate's job manager for a worker that outlives any outage of the database.

    procrastinate's worker stops for good when its heartbeat, its listener or a fetch
    raises. Here, while the database cannot be reached: a fetch finds no job (the
    worker polls again); a heartbeat and the listener try again with backoff until
    they get through; a job's final status waits for the next heartbeat that does; a
    look for jobs to abort finds none. A worker taken for dead meanwhile (its row
    pruned by another worker's stalled-jobs pass) registers again at its next
    heartbeat and fetches under its new id; a job fetched as the connection was lost
    (marked this worker's, never received) is queued again at the next heartbeat.
    """

    def __init__(self, connector: procrastinate.PsycopgConnector, seen: Outage) -> None:
        super().__init__(connector)
        self.outage = seen
        self.ids: dict[int, int] = {}
        """Worker ids procrastinate's worker holds, to the ids registered again."""
        self.unrecorded: list[tuple[Job, Status, bool]] = []
        """Jobs that ended while the database could not be reached, oldest first."""
        self.fetched: set[int] = set()
        """The jobs this worker received and has not finished."""
        self.astray = False
        """A fetch was sent and its answer lost: the database may hold a job as ours."""
        self._fetching = asyncio.Lock()

    def _noted(self, error: BaseException) -> bool:
        if not unreachable(error):
            return False
        self.outage.failed(" ".join(str(error.__cause__ or error).split()))
        return True

    async def fetch_job(self, queues: Iterable[str] | None, worker_id: int) -> Job | None:
        async with self._fetching:
            try:
                job = await super().fetch_job(queues, self.ids.get(worker_id, worker_id))
            except ConnectorException as e:
                if not self._noted(e):
                    raise
                # Sent, and the answer lost with the connection: a job may be ours unknown.
                self.astray |= not isinstance(e.__cause__, PoolTimeout)
                return None
            if job is not None and job.id is not None:
                self.fetched.add(job.id)
            return job

    async def _requeue_astray(self, worker_id: int) -> None:
        """The jobs the database holds as this worker's that it never received (a fetch
        whose answer a lost connection took), queued again: they never ran, and a turn
        runs at most once whoever fetches its job (the store's claim)."""
        async with self._fetching:
            rows = await self.connector.execute_query_all_async(
                ASTRAY, worker_id=self.ids.get(worker_id, worker_id)
            )
            for job_id in {int(row["id"]) for row in rows} - self.fetched:
                now = datetime.datetime.now(datetime.UTC)
                await self.retry_job_by_id_async(job_id=job_id, retry_at=now)
                logger.warning("job %d: fetched as its connection was lost; queued again", job_id)
            self.astray = False

    async def update_heartbeat(self, worker_id: int) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._beat(worker_id)
                await self._record_finished()
                if self.astray:
                    await self._requeue_astray(worker_id)
                return
            except ConnectorException as e:
                if not self._noted(e):
                    raise
            await backoff.wait()

    async def _beat(self, worker_id: int) -> None:
        rows = await self.connector.execute_query_all_async(
            BEAT, worker_id=self.ids.get(worker_id, worker_id)
        )
        if not rows:
            self.ids[worker_id] = await self.register_worker()
            logger.warning(
                "worker %d was taken for dead while it could not beat; registered again as %d",
                worker_id,
                self.ids[worker_id],
            )

    async def finish_job(self, job: Job, status: Status, delete_job: bool) -> None:
        """Record a job's final status; while the database cannot be reached, keep it for
        the next heartbeat that gets through (a stopping worker never waits for it)."""
        self.fetched.discard(job.id or 0)
        try:
            await super().finish_job(job, status, delete_job)
        except ConnectorException as e:
            if not self._noted(e):
                logger.warning("job %s: its status was not recorded: %s", job.id, e)
                return
            self.unrecorded.append((job, status, delete_job))

    async def _record_finished(self) -> None:
        """The final statuses an outage kept from the database, recorded now."""
        while self.unrecorded:
            job, status, delete_job = self.unrecorded[0]
            try:
                await super().finish_job(job, status, delete_job)
            except ConnectorException as e:
                if unreachable(e):
                    raise
                logger.warning("job %s: its status was not recorded: %s", job.id, e)
            self.unrecorded.pop(0)

    async def list_jobs_to_abort_async(self, queue: str | None = None) -> Iterable[int]:
        try:
            return await super().list_jobs_to_abort_async(queue)
        except ConnectorException as e:
            if self._noted(e):
                return []
            raise

    async def unregister_worker(self, worker_id: int) -> None:
        try:
            await self._record_finished()  # what an outage kept, before the worker is gone
        except ConnectorException:
            logger.warning(
                "%s not recorded: the database cannot be reached; another worker's"
                " stalled-jobs pass retires them",
                counted(len(self.unrecorded), "job's final status", "jobs' final statuses"),
            )
        try:
            await super().unregister_worker(self.ids.get(worker_id, worker_id))
        except ConnectorException as e:
            if not self._noted(e):
                raise
            logger.info("worker %d stops unregistered: the database cannot be reached", worker_id)

    async def listen_for_jobs(
        self, *, on_notification: NotificationCallback, queues: Iterable[str] | None = None
    ) -> None:
        """Listen, connecting again with backoff whenever the connection cannot be made."""
        backoff = Backoff()
        while True:
            began = asyncio.get_running_loop().time()
            try:
                await super().listen_for_jobs(on_notification=on_notification, queues=queues)
            except ConnectorException as e:
                if not self._noted(e):
                    raise
            if asyncio.get_running_loop().time() - began > backoff.most:
                backoff = Backoff()  # it listened a while: the next outage starts over
            await backoff.wait()


class ProcrastinateQueue:
    """Defers turns as procrastinate jobs, each on its assistant's queue as `store` records
    it (without a store, on `QUEUE`); `async with` it to open the connection."""

    def __init__(self, url: str, store: Store | None = None) -> None:
        self.app = procrastinate_app(url)
        self.store = store

    async def __aenter__(self) -> ProcrastinateQueue:
        await self.app.open_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.app.close_async()

    async def enqueue(self, turn_id: str) -> None:
        await defer(self.app, self.store, turn_id)

    async def holding(self) -> set[str]:
        return await deferred_turns(self.app)


HELD = (
    "SELECT args->>'turn_id' AS turn_id FROM procrastinate_jobs"
    " WHERE task_name = %(task)s AND status IN ('todo', 'doing')"
)


async def deferred_turns(app: procrastinate.App) -> set[str]:
    """The turns with a job waiting (`todo`) or running (`doing`): the sweeper leaves
    those queued turns alone."""
    rows = await app.connector.execute_query_all_async(HELD, task=TASK)
    return {str(row["turn_id"]) for row in rows}


class DeferredTurns:
    """The sweeper's view of the procrastinate queues in a worker process: what they hold,
    and a crashed turn queued again (a new job, on its own assistant's queue)."""

    def __init__(self, app: procrastinate.App, store: Store | None = None) -> None:
        self.app = app
        self.store = store

    async def holding(self) -> set[str]:
        return await deferred_turns(self.app)

    async def enqueue(self, turn_id: str) -> None:
        await defer(self.app, self.store, turn_id)


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
            task_name=TASK, seconds_since_heartbeat=self.stalled_after
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
        """Retire every `interval` seconds until cancelled. A failed pass is logged (the
        first of a row) and retried; once the database answers again, nothing is retired
        for `stalled_after` seconds, while the live workers' heartbeats get through."""
        failing, resumes = 0, 0.0
        while True:
            try:
                if failing:
                    await self.manager.get_stalled_jobs(task_name=TASK)  # does it answer?
                    failing, resumes = 0, time.monotonic() + self.stalled_after
                elif time.monotonic() >= resumes:
                    await self.retire()
            except Exception:
                failing += 1
                if failing == 1:
                    logger.exception(
                        "retiring stalled jobs failed; trying again every %.1f s", self.interval
                    )
            await asyncio.sleep(self.interval)


class TurnWorker(Worker):
    """procrastinate's worker, told which turns it runs: when it is told to stop, it says
    how many turns it waits for (or that none runs), and then how each of them ended."""

    def __init__(self, app: procrastinate.App, **options: Any) -> None:
        super().__init__(app=app, **{**app.worker_defaults, **options})
        self.turns: set[str] = set()
        """The turns running now."""
        self.in_flight: list[str] | None = None
        """The turns running when the stop came (None before it)."""

    def stop(self) -> None:
        if self.in_flight is None:  # the first time it is told (SIGINT, SIGTERM)
            self.in_flight = sorted(self.turns)
            if self.in_flight:
                grace = self.shutdown_graceful_timeout or 0
                running = counted(len(self.in_flight), "turn")
                logger.info("stopping: waiting up to %g s for %s", grace, running)
            else:
                logger.info("stopping; no turn is running")
        super().stop()  # type: ignore[no-untyped-call]


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
    app.job_manager = RidingJobManager(app.connector, outage(url))  # type: ignore[arg-type]
    worker = turn_worker(
        app,
        job,
        concurrency=concurrency,
        shutdown_graceful_timeout=grace,
        update_heartbeat_interval=heartbeat,
        stalled_worker_timeout=stalled_after,
    )
    sweeper = sweeper or Sweeper(job.store, lease=job.lease, resuming=job.resuming, owner=job.owner)
    sweeper.queue = sweeper.queue or DeferredTurns(app, job.store)
    sweeper.requeue = sweeper.requeue or DeferredTurns(app, job.store)
    async with app.open_async():
        sweeping = asyncio.create_task(sweeper.run(), name="sweeper")
        try:
            stalled = StalledJobs(app, stalled_after=stalled_after, interval=sweeper.interval)
            retiring = asyncio.create_task(stalled.run(), name="stalled jobs")
            try:
                await worker.run()  # type: ignore[no-untyped-call]
            finally:
                await _cancelled(retiring)
            for turn_id in worker.in_flight or ():
                await say_how_it_ended(job.store, turn_id)
        finally:
            await _cancelled(sweeping)


def turn_worker(app: procrastinate.App, job: TurnJob, **options: Any) -> TurnWorker:
    """The worker of the job's assistant's queue (and of the turns that record none), and
    the task it runs each turn's job with."""
    queues = sorted({queue_of(job.owner), QUEUE})
    worker = TurnWorker(app, queues=queues, **options)

    async def run_turn(turn_id: str) -> None:
        worker.turns.add(turn_id)
        try:
            await job.run(turn_id)
        finally:
            worker.turns.discard(turn_id)

    app.task(name=TASK, queue=QUEUE, retry=False)(run_turn)
    return worker


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
