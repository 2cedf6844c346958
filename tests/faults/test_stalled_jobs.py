"""A worker killed with SIGKILL mid-turn: procrastinate's own stalled-job recovery retires
its job (`failed`, never retried) and its worker row, and the sweeper finalises the turn.

Real worker processes (`procrastinate_worker.py`) on a PostgreSQL database of
the test's own, a `FakeModelServer` holding the dead worker's model call.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests import scripts
from tests.fake_model import HOLD, FakeModelServer
from tests.waiting import eventually
from turnkeeper.service.worker import ProcrastinateQueue
from turnkeeper.store import Store, new_token

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def worker(database: str, model_url: str, log: Path) -> Iterator[subprocess.Popen[str]]:
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.procrastinate_worker", database, model_url],
            cwd=REPO,
            stdout=err,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def rows(database: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database, autocommit=True) as db:
        return db.execute(sql).fetchall()


async def test_a_killed_workers_job_and_row_are_retired(
    pg_store: Store, own_database: str, tmp_path: Path
) -> None:
    conversation_id = await pg_store.create_conversation(new_token()[1])
    turn_id = (await pg_store.create_turn(conversation_id, "do the thing")).turn_id
    async with ProcrastinateQueue(own_database) as queue:
        await queue.enqueue(turn_id)

    with FakeModelServer([HOLD, scripts.answer("never seen")]) as model:
        with worker(own_database, model.url, tmp_path / "dead.log") as dead:

            async def calling() -> bool:
                assert dead.poll() is None, (tmp_path / "dead.log").read_text()
                return len(model.requests) == 1

            await eventually(calling, "the first worker calling the model")
            ((dead_id,),) = rows(own_database, "SELECT id FROM procrastinate_workers")
            dead.send_signal(signal.SIGKILL)
            dead.wait(15)

        with worker(own_database, model.url, tmp_path / "alive.log") as alive:

            async def retired() -> bool:
                assert alive.poll() is None, (tmp_path / "alive.log").read_text()
                jobs = rows(own_database, "SELECT status::text FROM procrastinate_jobs")
                workers = rows(own_database, "SELECT id FROM procrastinate_workers")
                turn = await pg_store.turn(turn_id)
                return (
                    jobs == [("failed",)]
                    and (dead_id,) not in workers
                    and turn is not None
                    and turn.done
                )

            await eventually(retired, "the dead worker's job, row and turn retired", bound=30)
            assert len(model.requests) == 1, "the turn was never sent to the model again"
        model.release()

    state = await pg_store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"]) == ("failed", True)
    history = await pg_store.history(conversation_id)
    scripts.assert_valid_history(history)
