"""Defect 1 of issue 14: nothing stays `queued` with no job behind it.

A claim that fails is finalised by its job through `lifecycle.fail()` (the `UNCLAIMED`
holder, reported once); a queued turn that no queue holds (the job died before
it could write, the API died between creating the turn and deferring it) is
finalised by the sweeper once it has waited `unheld_after` seconds. Both
stores; the distributed case on a real procrastinate worker.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from tests import scripts
from tests.waiting import eventually
from turnkeeper.observe.report import Report
from turnkeeper.outcomes import Outcome
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token, open_store


async def queued(store: Store) -> tuple[str, str]:
    conversation_id = await store.create_conversation(new_token()[1])
    return conversation_id, (await store.create_turn(conversation_id, "do the thing")).turn_id


def failing_claims(store: Store, monkeypatch: pytest.MonkeyPatch, times: int = 1) -> None:
    """The store's next `times` claims fail as a dropped connection would."""
    claim = store.claim
    left = [times]

    async def flaky(turn_id: str, lease: float, wire: str) -> int | None:
        if left[0] > 0:
            left[0] -= 1
            raise ConnectionError("the database went away mid-claim")
        return await claim(turn_id, lease, wire)

    monkeypatch.setattr(store, "claim", flaky)


async def assert_finalised(store: Store, conversation_id: str, turn_id: str) -> dict[str, Any]:
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"], state["has_error"]) == ("failed", True, True)
    history = await store.history(conversation_id)
    assert history == [], "a turn never claimed has no wire format: nothing was stored"
    # The conversation takes its next question: no turn is left open.
    assert (await store.create_turn(conversation_id, "again")).version == 1
    return state


async def test_a_failed_claim_finalises_the_turn_reported_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_id, turn_id = await queued(store)
    failing_claims(store, monkeypatch)
    reports: list[Report] = []
    provider = ScriptedProvider([scripts.answer("never")])

    outcome = await TurnJob(store, provider, reporter=reports.append).run(turn_id)

    assert outcome is Outcome.FAILED
    assert provider.requests == [], "an unclaimed turn never reaches the model"
    await assert_finalised(store, conversation_id, turn_id)
    assert [r.event for r in reports] == ["failed"]


async def test_the_sweeper_finalises_a_queued_turn_no_queue_holds(store: Store) -> None:
    _, held_id = await queued(store)
    other = await store.create_conversation(new_token()[1])
    orphan = (await store.create_turn(other, "do the thing")).turn_id

    class Holds:
        async def holding(self) -> set[str]:
            return {held_id}

    patient = Sweeper(store, queue=Holds(), unheld_after=3600)
    assert await patient.sweep() == [], "a turn queued for less than the bound is left alone"
    sweeper = Sweeper(store, queue=Holds(), unheld_after=0)
    assert await sweeper.sweep() == [orphan]
    assert await sweeper.sweep() == [], "finalised once"
    await assert_finalised(store, other, orphan)
    held = await store.turn(held_id)
    assert held is not None
    assert not held.done, "a turn its queue still holds waits"


async def test_a_local_queue_holds_its_turns_until_they_have_run(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded queue: a claim whose failure could not be written either (the store
    down for both) leaves the turn queued; the queue lets go of it and the sweeper
    finalises it."""
    conversation_id, turn_id = await queued(store)
    failing_claims(store, monkeypatch)
    end_turn = store.end_turn  # the failure's write: taken over and ended in one step
    monkeypatch.setattr(store, "end_turn", failing_once(end_turn))
    queue = LocalQueue(TurnJob(store, ScriptedProvider([scripts.answer("never")])))
    sweeper = Sweeper(store, queue=queue, unheld_after=0)

    await queue.enqueue(turn_id)
    assert await queue.holding() == {turn_id}
    await queue.join()
    assert await queue.holding() == set()
    assert (await store.turn(turn_id)) is not None
    assert await sweeper.sweep() == [turn_id]
    await assert_finalised(store, conversation_id, turn_id)


def failing_once(method: Any) -> Any:
    calls = [0]

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise ConnectionError("the database went away")
        return await method(*args, **kwargs)

    return flaky


# ---- the distributed queue: a real procrastinate worker ----------------------------


@pytest.mark.postgres
async def test_a_turn_never_deferred_is_finalised_by_a_worker(own_database: str) -> None:
    from turnkeeper.service.worker import ProcrastinateQueue, run_worker

    store = await open_store(own_database)
    try:
        # The API died after creating `orphan`, before deferring it; `deferred` waits.
        other = await store.create_conversation(new_token()[1])
        orphan = (await store.create_turn(other, "do the thing")).turn_id
        _, deferred = await queued(store)
        async with ProcrastinateQueue(own_database) as queue:
            await queue.enqueue(deferred)
            assert await queue.holding() == {deferred}

        provider = ScriptedProvider([scripts.answer("done")])
        job = TurnJob(store, provider)
        sweeper = Sweeper(store, interval=0.2, unheld_after=0)
        worker = asyncio.create_task(run_worker(own_database, job, sweeper=sweeper, grace=1))
        try:

            async def finished() -> bool:
                assert not worker.done(), worker
                turns = [await store.turn(deferred), await store.turn(orphan)]
                return all(t is not None and t.done for t in turns)

            await eventually(finished, "the deferred turn run, the orphan finalised", bound=30)
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        state = await store.state_after(deferred, 0)
        assert state is not None
        assert state["status"] == "finished", "a held turn is run"
        await assert_finalised(store, other, orphan)  # by the worker's sweeper
    finally:
        await store.close()
