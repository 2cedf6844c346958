"""Every exit of a waiting turn raced against the others, through the HTTP API on both
stores (turn/lifecycle.py): concurrent Stops, an approval against a Stop, two sweepers
on the same timed-out approvals. One party ends the turn; the others learn it was
already decided — never a 500, never a refused write taken for an outage."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from tests import scripts
from tests.api.test_approvals import Ran, Served, serving
from tests.api.test_routes import start_turn
from turnkeeper.observe.report import Report
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store, new_token
from turnkeeper.turn.resume import Resuming

ROUNDS = 20
STOPS = 10
ASKS = scripts.asks(
    scripts.tool_use("lookup", {}, id="toolu_look"),
    scripts.tool_use("delete_file", {"path": "notes.txt"}, id="toolu_delete"),
)
GATE = Resuming(needs_approval=frozenset({"delete_file"}))


@pytest.fixture
async def many(store: Store) -> AsyncIterator[Served]:
    """A served API whose model asks for a tool that waits, once per turn, many turns."""
    async for served in serving(store, [ASKS] * (ROUNDS + 5) + [scripts.answer("Done.")] * ROUNDS):
        yield served


async def waiting(served: Served) -> tuple[str, dict[str, str]]:
    turn_id, auth = await start_turn(served.client, "delete my notes")
    await served.until(turn_id, auth, "waiting")
    await served.queue.join()
    return turn_id, auth


def stop_reports(caplog: pytest.LogCaptureFixture, turn_id: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "turnkeeper.report"
        and turn_id in r.getMessage()
        and "stopped" in r.getMessage()
    ]


async def test_concurrent_stops_of_a_waiting_turn_all_answer_202_and_it_stops_once(
    many: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for _ in range(ROUNDS):
        turn_id, auth = await waiting(many)
        stops = [
            many.client.post(f"/api/turns/{turn_id}/cancel", headers=auth) for _ in range(STOPS)
        ]
        answers: list[httpx.Response] = await asyncio.gather(*stops)
        assert [a.status_code for a in answers] == [202] * STOPS, [a.text for a in answers]
        final = await many.state(turn_id, auth)
        assert (final["status"], final["done"], final["stopped"]) == ("stopped", True, True)
        assert len(stop_reports(caplog, turn_id)) == 1, "one Stop ended it: one report"
        scripts.assert_valid_history(await many.store.history(final["conversation_id"]))
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert many.ran.counts["delete_file"] == 0


async def test_an_approval_against_a_stop_one_wins_and_a_late_approval_is_409(
    many: Served, caplog: pytest.LogCaptureFixture
) -> None:
    ran = 0
    for round in range(ROUNDS):
        turn_id, auth = await waiting(many)
        approve = many.decide(turn_id, auth, "toolu_delete", True)
        stop = many.client.post(f"/api/turns/{turn_id}/cancel", headers=auth)
        if round % 2:  # the Stop sent first
            stopped, approved = await asyncio.gather(stop, approve)
        else:
            approved, stopped = await asyncio.gather(approve, stop)
        assert stopped.status_code == 202, stopped.text
        assert approved.status_code in (202, 409), approved.text
        final = await many.until(turn_id, auth, "stopped")
        await many.queue.join()
        assert final["done"] is True
        late = await many.decide(turn_id, auth, "toolu_delete", False)
        assert late.status_code == 409, "the turn was decided: the approval came after"
        scripts.assert_valid_history(await many.store.history(final["conversation_id"]))
        # The Stop decided first: the tool never runs. The approval decided first: the
        # turn is queued to run it, and the Stop, after, ends the turn before its next
        # model call (before the tool too, if the job reads the Stop before it starts).
        runs, ran = many.ran.counts["delete_file"] - ran, many.ran.counts["delete_file"]
        assert runs <= (1 if approved.status_code == 202 else 0), (round, approved.text)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def waiting_turns(store: Store, count: int) -> list[str]:
    """`count` turns waiting for a person, each in a conversation of its own."""
    ran = Ran()
    job = TurnJob(store, ScriptedProvider([ASKS] * count), ran.toolset(), resuming=GATE)
    turn_ids = []
    for _ in range(count):
        _, token_hash = new_token()
        conversation_id = await store.create_conversation(token_hash)
        turn = await store.create_turn(conversation_id, "delete my notes")
        assert await job.run(turn.turn_id) is None, "the job ends while the turn waits"
        turn_ids.append(turn.turn_id)
    return turn_ids


async def test_two_sweepers_ending_the_same_timed_out_approvals_each_end_once(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    turn_ids = await waiting_turns(store, 150)
    reports: list[Report] = []
    hasty = Resuming(approval_timeout=0.0)
    one = Sweeper(store, resuming=hasty, reporter=reports.append)
    two = Sweeper(store, resuming=hasty, reporter=reports.append)
    caplog.set_level(logging.WARNING, logger="turnkeeper.sweeper")
    await asyncio.gather(one.tick(), two.tick())
    assert not [r for r in caplog.records if "the sweep failed" in r.getMessage()]
    assert (one.failing, two.failing) == (0, 0), "no refused write taken for an outage"
    assert (one.hold_until, two.hold_until) == (0.0, 0.0), "no lease's hold"
    ended = sorted(r.turn_id for r in reports if r.event == "stopped")
    assert ended == sorted(turn_ids), "every one ended once"
    for turn_id in turn_ids:
        state = await store.state_after(turn_id, 0)
        assert state is not None
        assert (state["status"], state["done"]) == ("stopped", True)
        assert state["messages"][-1]["key"] == "notices.approval_timeout"
    assert await store.waiting(0.0) == []
