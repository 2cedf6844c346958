"""A turn no worker claims is never a silent wait (issue 44.1).

Once it has waited `unclaimed_after` seconds with no worker of its assistant there, its
state and event log show `notices.waiting_for_worker` ("Waiting for the assistant to
start…"), `turnkeeper_turns_unclaimed` counts it, one warning names its queue and
assistant; past `unclaimed_timeout` it ends `failed` with `errors.no_worker`, a
procrastinate job behind it or not. A worker of another version that lacks a tool the
turn goes on with ends it the same way. Both stores; then real `serve --no-worker` on
PostgreSQL with no worker at all.
"""

from __future__ import annotations

import asyncio
import logging
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import scripts
from tests.api.test_approvals import Ran
from tests.api.test_turn_exits import ASKS, GATE
from tests.test_fleet import bakery, env_of, serve
from tests.test_resume import Api
from tests.test_server import output
from tests.waiting import eventually
from turnkeeper.observe.metrics import Metrics
from turnkeeper.observe.report import Report
from turnkeeper.outcomes import Outcome
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token
from turnkeeper.store.records import Owner
from turnkeeper.tools.functions import FunctionToolset

BAKERY = Owner("Bakery", "aaaaaaaaaaaa")
WAITING = "notices.waiting_for_worker"


async def queued(store: Store, owner: Owner | None = BAKERY) -> str:
    conversation_id = await store.create_conversation(new_token()[1])
    return (await store.create_turn(conversation_id, "when do you open?", owner=owner)).turn_id


async def state(store: Store, turn_id: str) -> dict[str, Any]:
    found = await store.state_after(turn_id, 0)
    assert found is not None
    return found


def sweeper(store: Store, metrics: Metrics | None = None, **more: Any) -> Sweeper:
    reports: list[Report] = []
    made = Sweeper(store, owner=BAKERY, unclaimed_after=0.5, unclaimed_timeout=2.0,
                   metrics=metrics, reporter=reports.append, **more)  # fmt: skip
    made.reports = reports  # type: ignore[attr-defined]
    return made


def unclaimed_gauge(metrics: Metrics) -> float:
    return float(metrics.unclaimed._value.get())


async def test_an_unclaimed_turn_says_it_waits_then_fails_no_worker(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    turn_id = await queued(store)
    sweeping = sweeper(store, metrics)
    assert await sweeping.sweep() == []
    assert (await state(store, turn_id))["activity"] is None, "not waited long enough yet"
    await asyncio.sleep(0.6)
    with caplog.at_level(logging.WARNING, logger="turnkeeper.sweeper"):
        for _ in range(3):
            assert await sweeping.sweep() == []
    shown = await state(store, turn_id)
    assert (shown["status"], shown["activity"], shown["version"]) == ("queued", WAITING, 2)
    events = await store.events_after(turn_id, 0)
    assert [(e.type.value, e.body) for e in events] == [("activity", {"key": WAITING})]
    assert unclaimed_gauge(metrics) == 1
    warned = [r.getMessage() for r in caplog.records if turn_id in r.getMessage()]
    assert len(warned) == 1, "one warning line"
    assert re.search(r"on queue turnkeeper_turns\.[0-9a-f]{12}", warned[0])
    assert "assistant 'Bakery'" in warned[0]
    await asyncio.sleep(1.5)
    assert await sweeping.sweep() == [turn_id]
    final = await state(store, turn_id)
    assert (final["status"], final["done"], final["has_error"]) == ("failed", True, True)
    assert final["messages"][-1]["key"] == "errors.no_worker"
    assert final["activity"] is None
    assert unclaimed_gauge(metrics) == 0
    (report,) = sweeping.reports  # type: ignore[attr-defined]
    assert report.event == Outcome.FAILED.value
    assert "no worker of assistant 'Bakery'" in report.message
    assert [e.type.value for e in await store.events_after(turn_id, 0)][-1] == "turn.ended"


async def test_a_busy_assistants_backlog_is_not_unclaimed(store: Store) -> None:
    """A turn of the assistant runs: its workers are there, busy; the others wait their turn."""
    busy = await queued(store)
    assert await store.claim(busy, 30, "anthropic", BAKERY.assistant) == 1
    waiting = await queued(store)
    await asyncio.sleep(2.1)
    assert await sweeper(store).sweep() == []
    assert (await state(store, waiting))["activity"] is None


async def test_another_assistants_turns_are_its_own_sweepers_concern(store: Store) -> None:
    theirs = await queued(store, Owner("Florist", "bbbbbbbbbbbb"))
    await asyncio.sleep(2.1)
    assert await sweeper(store).sweep() == []
    assert (await state(store, theirs))["status"] == "queued"


async def test_a_claimed_turn_shows_no_waiting_notice(store: Store) -> None:
    turn_id = await queued(store)
    await asyncio.sleep(0.6)
    await sweeper(store).sweep()
    job = TurnJob(store, ScriptedProvider([scripts.answer("At 7.")]), owner=BAKERY)
    assert await job.run(turn_id) is Outcome.FINISHED
    final = await state(store, turn_id)
    assert final["messages"][-1]["text"] == "At 7."
    assert [e.type.value for e in await store.events_after(turn_id, 0)][:2] == [
        "activity",
        "turn.started",
    ]


async def test_a_worker_lacking_a_tool_the_turn_goes_on_with_ends_it_no_worker(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Version 1 asked for `delete_file` and waited; version 2, without it, takes the
    approved turn: it ends `failed`, `errors.no_worker`, reported, the tool never run."""
    ran = Ran()
    first = TurnJob(store, ScriptedProvider([ASKS]), ran.toolset(), resuming=GATE, owner=BAKERY)
    turn_id = await queued(store)
    assert await first.run(turn_id) is None, "it waits for a person"
    assert await store.decide(turn_id, "toolu_delete", True) is not None
    lookup_only = FunctionToolset([t for t in ran.toolset().tools() if t.spec.name == "lookup"])
    reports: list[Report] = []
    newer = Owner(BAKERY.assistant, "cccccccccccc")
    second = TurnJob(store, ScriptedProvider([scripts.answer("Gone.")]), lookup_only,
                     resuming=GATE, owner=newer, reporter=reports.append)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="turnkeeper.job"):
        assert await second.run(turn_id) is Outcome.FAILED
    final = await state(store, turn_id)
    assert (final["status"], final["has_error"]) == ("failed", True)
    assert final["messages"][-1]["key"] == "errors.no_worker"
    assert ran.counts["delete_file"] == 0
    assert any("delete_file" in r.message and r.event == "failed" for r in reports)
    said = [r.getMessage() for r in caplog.records if "with version" in r.getMessage()]
    assert said == [f"running turns queued by assistant {BAKERY} with version cccccccccccc of it"]


@pytest.mark.postgres
async def test_serve_with_no_worker_says_the_turn_waits_then_fails_it(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema
    from tests.fake_model import FakeModelServer

    app = bakery(tmp_path / "app", "8 to 18")
    flags = ["--unclaimed-after", "1", "--unclaimed-timeout", "3", "--lease", "1.5"]
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model = stack.enter_context(FakeModelServer([]))
        log = tmp_path / "serve.log"
        base = await serve(stack, [*app, *flags, "--public-metrics"], url, env_of(model), log)
        api = Api(base)
        turn_id = await api.ask("when do you open?")
        asked = asyncio.get_running_loop().time()
        seen: dict[str, Any] = {}

        async def says_it_waits() -> bool:
            seen.update(await api.state(turn_id))
            return bool(seen["activity"] == WAITING)

        await eventually(says_it_waits, "the waiting notice", bound=10)
        waited = asyncio.get_running_loop().time() - asked
        assert seen["status"] == "queued"
        async with httpx.AsyncClient(base_url=base) as client:
            exposed = (await client.get("/metrics")).text
        assert "turnkeeper_turns_unclaimed 1.0" in exposed
        final = await api.until(turn_id, done=True, bound=20)
    said = output(log)
    assert waited < 1 + 0.5 + 2, "within unclaimed_after and a sweep"
    assert (final["status"], final["messages"][-1]["key"]) == ("failed", "errors.no_worker")
    assert model.requests == []
    lines = [x for x in said.splitlines() if "no worker of assistant 'Bakery' has claimed" in x]
    assert len(lines) == 1, said
    assert "on queue turnkeeper_turns." in lines[0]
