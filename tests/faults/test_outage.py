"""PostgreSQL unreachable for a minute: the worker rides it out, the API answers 503 at once.

A `TcpProxy` stands between the processes under test and PostgreSQL: `cut()`
drops every connection and refuses new ones, `restore()` lets them through
again. The test's own store and queue connect directly, so it can queue turns
while the worker is cut off. (docs/design.md §8.)
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest

from tests import fake_model, scripts
from tests.api.test_routes import HeldQueue, client_for, start_turn
from tests.fake_model import HOLD, FakeModelServer
from tests.tcp_proxy import TcpProxy
from tests.test_server import output, running
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.outcomes import Outcome
from turnkeeper.providers import TextSink, messages_api
from turnkeeper.service.job import TurnJob
from turnkeeper.service.worker import ProcrastinateQueue
from turnkeeper.store import Store, new_token, open_store
from turnkeeper.wire import Message, Reply, ToolResult, ToolSpec

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
OUTAGE = float(os.environ.get("TURNKEEPER_TEST_OUTAGE", "60"))
"""Seconds the database refuses the worker: past the 35 s that once stopped it for good
(TURNKEEPER_TEST_OUTAGE sets another length, for a run by hand)."""
LEASE = 10.0
DOWN = "PostgreSQL cannot be reached"
BACK = "PostgreSQL reached again"


async def queue_turn(store: Store, url: str) -> str:
    """A turn queued on a direct connection (the worker's may be cut)."""
    conversation_id = await store.create_conversation(new_token()[1])
    turn_id = (await store.create_turn(conversation_id, "still there?")).turn_id
    async with ProcrastinateQueue(url) as queue:
        await queue.enqueue(turn_id)
    return turn_id


async def job_statuses(url: str) -> list[str]:
    """The procrastinate jobs' statuses, in the order they were deferred."""
    async with await psycopg.AsyncConnection.connect(url) as db:
        cursor = await db.execute("SELECT status::text FROM procrastinate_jobs ORDER BY id")
        return [str(s) for (s,) in await cursor.fetchall()]


async def status(store: Store, turn_id: str) -> tuple[str, bool]:
    state = await store.state_after(turn_id, 0)
    assert state is not None
    return state["status"], state["done"]


async def test_a_worker_rides_out_a_minute_without_its_database(
    own_database: str, proxy: TcpProxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fake_model, "HOLD_BOUND", 2 * OUTAGE)  # held past the outage
    store = await open_store(own_database)
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "turnkeeper", "worker", "--provider", "anthropic"]
    command += ["--database", proxy.url(own_database), "--lease", str(LEASE)]
    with FakeModelServer([HOLD, *[scripts.answer("done")] * 3]) as model:
        environ = {**os.environ, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-t"}
        with running(command, log=log, env=environ) as worker:
            held = await queue_turn(store, own_database)

            async def in_its_call() -> bool:
                assert worker.poll() is None, output(log)
                return len(model.requests) == 1

            await eventually(in_its_call, "the first turn in its model call", bound=60)
            proxy.cut()
            cut_at = time.monotonic()
            queued = [await queue_turn(store, own_database) for _ in range(2)]
            while time.monotonic() - cut_at < OUTAGE:  # the outage is the test's to time
                assert worker.poll() is None, f"the worker exited: {output(log)}"
                await asyncio.sleep(0.5)
            proxy.restore()

            async def ran_meanwhile() -> bool:
                assert worker.poll() is None, f"the worker exited: {output(log)}"
                return all([(await status(store, t))[1] for t in queued])

            await eventually(ran_meanwhile, "the turns queued in the outage finished", bound=60)
            model.release()

            async def held_done() -> bool:
                return (await status(store, held))[1]

            await eventually(held_done, "the turn in flight through the outage ended", bound=30)

            async def recorded() -> bool:
                statuses = await job_statuses(own_database)
                assert "failed" not in statuses, f"{statuses}: {output(log)}"
                return statuses == ["succeeded"] * 3

            await eventually(recorded, "every job recorded as succeeded (none retired)")
            assert worker.poll() is None, f"the worker exited: {output(log)}"
    text = output(log)
    assert [await status(store, t) for t in [held, *queued]] == [("finished", True)] * 3, text
    assert text.count(DOWN) == 1, text
    assert text.count(BACK) == 1, text
    assert "Side task" not in text, text
    await store.close()


async def test_the_api_answers_503_within_seconds_while_the_database_is_unreachable(
    own_database: str, proxy: TcpProxy
) -> None:
    store = await open_store(proxy.url(own_database))
    try:
        async with client_for(create_app(store, HeldQueue())) as client:
            turn_id, auth = await start_turn(client)
            proxy.cut()
            for _ in range(3):
                began = time.monotonic()
                response = await client.get(f"/api/turns/{turn_id}", headers=auth)
                took = time.monotonic() - began
                assert response.status_code == 503, response.text
                assert response.headers["retry-after"].isdigit()
                assert took < 5, f"the 503 took {took:.1f} s"
            proxy.restore()

            async def answers() -> bool:
                response = await client.get(f"/api/turns/{turn_id}", headers=auth)
                return response.status_code == 200

            await eventually(answers, "the API answering once the database is back", bound=20)
    finally:
        await store.close()


class OutageModel:
    """Answers at once; as the call is made, the database goes out of reach for `outage` s."""

    wire = messages_api.WIRE

    def __init__(self, proxy: TcpProxy, outage: float) -> None:
        self.back = threading.Timer(outage, proxy.restore)
        self.proxy = proxy

    async def complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        self.proxy.cut()
        self.back.start()
        return messages_api.parse_reply(scripts.answer("the answer outlived the outage"))

    def user_message(self, text: str) -> Message:
        return messages_api.user_message(text)

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        return messages_api.tool_results(results)

    def describe(self) -> dict[str, str]:
        return {"provider": "outage"}


async def test_a_model_answer_that_comes_during_an_outage_is_written_once_it_ends(
    own_database: str, proxy: TcpProxy
) -> None:
    direct = await open_store(own_database)
    conversation_id = await direct.create_conversation(new_token()[1])
    turn_id = (await direct.create_turn(conversation_id, "worth the wait?")).turn_id
    store = await open_store(proxy.url(own_database))
    model = OutageModel(proxy, 5.0)
    try:
        outcome = await TurnJob(store, model).run(turn_id)
    finally:
        model.back.join()
        await store.close()
    state = await direct.state_after(turn_id, 0)
    await direct.close()
    assert outcome == Outcome.FINISHED
    assert state is not None
    assert (state["status"], state["done"]) == ("finished", True)
    assert state["messages"][-1]["text"] == "the answer outlived the outage"
