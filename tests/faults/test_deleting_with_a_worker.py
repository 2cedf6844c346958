"""Deleting is final with a worker of its own (issue 52, item 1): on PostgreSQL, a
`turnkeeper worker` process runs the turns while the API, in this process, deletes each
turn's conversation (`DELETE ?stop=1`) at a different point of its run, round after
round. Once the stopped turn's job is over, no row of the conversation is left in any
table (the issue saw rows left in 25 of 30 rounds)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests import scripts
from tests.api.test_routes import client_for, start_turn
from tests.databases import rows_left
from tests.fake_model import FakeModelServer
from tests.test_server import output, turnkeeper
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.store import Store, open_store

pytestmark = pytest.mark.postgres

APPS = Path(__file__).resolve().parents[1] / "apps"
ROUNDS = 20
SAY = " ".join(f"word{n}" for n in range(40))


def talking(n: int) -> list[dict[str, Any]]:
    """`n` calls that each say something (streamed a piece at a time) and ask for `lookup`."""
    return [scripts.asks(scripts.tool_use("lookup"), say=SAY) for _ in range(n)]


def jobs_running(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as db:
        row = db.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        ).fetchone()
    return int(row[0]) if row is not None else 0


async def events(store: Store, turn_id: str) -> int:
    return len(await store.events_after(turn_id, 0))


async def test_conversations_deleted_mid_turn_leave_no_row_with_a_worker_of_their_own(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema
    from turnkeeper.service.worker import ProcrastinateQueue

    log = tmp_path / "worker.log"
    with (
        fresh_schema(postgres_database) as url,
        FakeModelServer(talking(ROUNDS * 40), gap=0.003) as model,
    ):
        store = await open_store(url)
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
        args = ("worker", "deleting:assistant", "--app-dir", str(APPS), "--database", url)
        left: list[dict[str, int]] = []
        try:
            async with ProcrastinateQueue(url) as queue, client_for(create_app(store, queue)) as c:
                with turnkeeper(*args, log=log, env=env) as worker:
                    for n in range(ROUNDS):
                        turn_id, auth = await start_turn(c, f"question {n}")
                        # a different write just made each round: the n-th event of the run
                        after = 1 + n % 7

                        async def written(turn_id: str = turn_id, after: int = after) -> bool:
                            assert worker.poll() is None, output(log)
                            return await events(store, turn_id) >= after

                        await eventually(written, f"round {n}: the turn's events", bound=60)
                        turn = await store.turn(turn_id)
                        assert turn is not None
                        path = f"/api/conversations/{turn.conversation_id}"
                        deleted = await c.delete(path, params={"stop": "1"}, headers=auth)
                        assert deleted.status_code == 204, deleted.text

                        async def over() -> bool:
                            return jobs_running(url) == 0

                        await eventually(over, f"round {n}: the stopped turn's job", bound=60)
                        left.append(rows_left(url))
        finally:
            await store.close()
    print(f"rows left after each of {ROUNDS} rounds: {left}")
    assert left == [{}] * ROUNDS, output(log)
