"""PostgreSQL restarted while turns run: the turns in flight finish, or are finalised once
it is back; none stays `running` or `queued`.

A server of the test's own (`own_postgres`), a real `turnkeeper worker` process,
the model holding every turn's first call while the database restarts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import scripts
from tests.fake_model import HOLD, FakeModelServer
from tests.faults.own_postgres import OwnPostgres, own_postgres
from tests.waiting import eventually
from turnkeeper.service.worker import ProcrastinateQueue
from turnkeeper.store import new_token, open_store

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
TURNS = 6


@pytest.fixture
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


def worker(url: str, model_url: str, log: Path) -> subprocess.Popen[bytes]:
    environ = {**os.environ, "ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "sk-test"}
    command = ["worker", "--database", url, "--lease", "2", "--provider", "anthropic"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "turnkeeper", *command, "--concurrency", str(TURNS)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environ,
        )


async def test_turns_in_flight_survive_a_database_restart(
    postgres: OwnPostgres, tmp_path: Path
) -> None:
    store = await open_store(postgres.url)
    turns: dict[str, str] = {}
    async with ProcrastinateQueue(postgres.url) as queue:
        for _ in range(TURNS):
            conversation_id = await store.create_conversation(new_token()[1])
            turn_id = (await store.create_turn(conversation_id, "what now?")).turn_id
            await queue.enqueue(turn_id)
            turns[turn_id] = conversation_id
    log = tmp_path / "worker.log"
    with FakeModelServer([HOLD] * TURNS + [scripts.answer("done")] * TURNS) as model:
        process = worker(postgres.url, model.url, log)
        try:

            async def in_flight() -> bool:
                assert process.poll() is None, log.read_text(errors="replace")
                return len(model.requests) == TURNS

            await eventually(in_flight, "every turn in its model call", bound=60)
            await asyncio.to_thread(postgres.restart)
            model.release()

            async def settled() -> bool:
                try:
                    counts = await store.counts()
                except Exception:  # the test's own pool meeting the restart
                    return False
                return counts.get("running", 0) == 0 and counts.get("queued", 0) == 0

            await eventually(settled, "every turn finished or finalised", bound=60)
            assert process.poll() is None, "the worker outlived the restart"
        finally:
            process.kill()
            process.wait()
        assert len(model.requests) == TURNS, "no model call repeated"

    for turn_id, conversation_id in turns.items():
        state = await store.state_after(turn_id, 0)
        assert state is not None
        assert state["done"], state
        assert state["status"] in ("finished", "failed")
        scripts.assert_valid_history(await store.history(conversation_id))
    await store.close()
