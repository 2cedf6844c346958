"""The worker's job manager while PostgreSQL is out of reach, and after it was taken for dead.

procrastinate's worker stops for good when a fetch or a heartbeat raises; the
`RidingJobManager` it runs on waits instead (docs/design.md §8).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import psycopg
import pytest
from procrastinate.jobs import Job, Status
from procrastinate.manager import JobManager

from tests.tcp_proxy import TcpProxy
from tests.waiting import eventually
from turnkeeper.service.worker import QUEUE, ProcrastinateQueue, RidingJobManager, procrastinate_app
from turnkeeper.store import open_store
from turnkeeper.store.pool import outage

pytestmark = pytest.mark.postgres


@pytest.fixture
async def migrated(own_database: str) -> str:
    """The test's own database, migrated: procrastinate's schema is one migration."""
    store = await open_store(own_database)
    await store.close()
    return own_database


def scalar(url: str, sql: str, *params: object) -> object:
    with psycopg.connect(url, autocommit=True) as db:
        cursor = db.execute(sql, params)
        row = cursor.fetchone() if cursor.description else None
    return None if row is None else row[0]


async def test_a_worker_taken_for_dead_registers_again_and_fetches(migrated: str) -> None:
    async with ProcrastinateQueue(migrated) as queue:
        await queue.enqueue("t_waiting")
    app = procrastinate_app(migrated)
    manager = RidingJobManager(app.connector, outage(migrated))  # type: ignore[arg-type]
    async with app.open_async():
        worker_id = await manager.register_worker()
        scalar(migrated, "DELETE FROM procrastinate_workers WHERE id = %s", worker_id)
        await manager.update_heartbeat(worker_id)
        job = await manager.fetch_job([QUEUE], worker_id)
    assert job is not None
    assert job.task_kwargs == {"turn_id": "t_waiting"}
    new_id = scalar(migrated, "SELECT worker_id FROM procrastinate_jobs WHERE id = %s", job.id)
    assert new_id == manager.ids[worker_id] != worker_id


@contextlib.asynccontextmanager
async def riding(url: str) -> AsyncIterator[tuple[RidingJobManager, int, Job]]:
    """A riding job manager on `url`, its worker registered, holding the first queued job."""
    app = procrastinate_app(url)
    manager = RidingJobManager(app.connector, outage(url))  # type: ignore[arg-type]
    async with app.open_async():
        worker_id = await manager.register_worker()
        job = await manager.fetch_job([QUEUE], worker_id)
        assert job is not None
        yield manager, worker_id, job


async def test_out_of_reach_a_fetch_finds_nothing_and_an_end_is_recorded_later(
    migrated: str, proxy: TcpProxy
) -> None:
    async with ProcrastinateQueue(migrated) as queue:
        await queue.enqueue("t_running")
        await queue.enqueue("t_waiting")
    async with riding(proxy.url(migrated)) as (manager, worker_id, running):
        proxy.cut()
        assert await manager.fetch_job([QUEUE], worker_id) is None
        await manager.finish_job(running, Status.SUCCEEDED, delete_job=False)
        beat = asyncio.create_task(manager.update_heartbeat(worker_id))
        done, _ = await asyncio.wait({beat}, timeout=2)
        assert not done, "the heartbeat waits for the database"
        proxy.restore()
        await asyncio.wait_for(beat, 30)
    status = "SELECT status::text FROM procrastinate_jobs WHERE id = %s"
    assert scalar(migrated, status, running.id) == "succeeded"
    assert manager.unrecorded == []


async def test_a_job_fetched_as_the_connection_was_lost_is_queued_again(migrated: str) -> None:
    """The fetch ran in the database and marked the job this worker's; its answer was
    lost with the connection (the manager notes that as `astray`)."""
    async with ProcrastinateQueue(migrated) as queue:
        await queue.enqueue("t_lost")
    app = procrastinate_app(migrated)
    manager = RidingJobManager(app.connector, outage(migrated))  # type: ignore[arg-type]
    async with app.open_async():
        worker_id = await manager.register_worker()
        lost = await JobManager(app.connector).fetch_job([QUEUE], worker_id)
        assert lost is not None
        manager.astray = True
        await manager.update_heartbeat(worker_id)
        again = await manager.fetch_job([QUEUE], worker_id)
    assert again is not None
    assert (again.id, again.task_kwargs) == (lost.id, {"turn_id": "t_lost"})
    assert manager.astray is False


async def test_an_end_kept_through_an_outage_is_recorded_when_the_worker_stops(
    migrated: str, proxy: TcpProxy
) -> None:
    """The worker stops before a heartbeat got through: unregistering records what the
    outage kept, so no job stays `doing` behind a worker that is gone."""
    async with ProcrastinateQueue(migrated) as queue:
        await queue.enqueue("t_ending")
    url = proxy.url(migrated)
    async with riding(url) as (manager, worker_id, ending):
        proxy.cut()
        await manager.finish_job(ending, Status.SUCCEEDED, delete_job=False)
        assert manager.unrecorded != []
        proxy.restore()

        async def reached() -> bool:  # the pool's own reconnection, in the background
            return not outage(url).down

        await eventually(reached, "the pool reached the database again", bound=30)
        await manager.unregister_worker(worker_id)
    status = "SELECT status::text FROM procrastinate_jobs WHERE id = %s"
    assert scalar(migrated, status, ending.id) == "succeeded"
    assert manager.unrecorded == []
