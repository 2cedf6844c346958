"""A tool call that waits for a person's yes, through the HTTP API on both stores
(docs/design.md §11): the turn waits, an approval or a denial resumes it in a new
job, the model is asked once per response, the tool runs once or never."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests import scripts
from tests.api.test_routes import HeldQueue, client_for, start_turn
from tests.waiting import eventually
from turnkeeper.api import create_app
from turnkeeper.budget import Budget
from turnkeeper.cli import timeline
from turnkeeper.outcomes import Outcome
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.service.sweeper import Sweeper
from turnkeeper.store import Store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.resume import Resuming
from turnkeeper.wire import ToolSpec

DELETE = {"path": "notes.txt"}


@dataclass
class Ran:
    """How many times each tool ran."""

    counts: dict[str, int] = field(default_factory=lambda: {"lookup": 0, "delete_file": 0})

    def toolset(self) -> FunctionToolset:
        def lookup(args: dict[str, Any]) -> str:
            self.counts["lookup"] += 1
            return "found it"

        def delete_file(args: dict[str, Any]) -> str:
            self.counts["delete_file"] += 1
            return f"deleted {args['path']}"

        return FunctionToolset(
            [
                Tool(ToolSpec("lookup", "Look it up."), lookup),
                Tool(ToolSpec("delete_file", "Delete a file."), delete_file, needs_approval=True),
            ]
        )


@dataclass
class Served:
    client: httpx.AsyncClient
    queue: LocalQueue
    model: ScriptedProvider
    ran: Ran
    store: Store

    async def state(self, turn_id: str, auth: dict[str, str]) -> dict[str, Any]:
        response = await self.client.get(f"/api/turns/{turn_id}", headers=auth)
        assert response.status_code == 200
        body: dict[str, Any] = response.json()
        return body

    async def until(self, turn_id: str, auth: dict[str, str], status: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def reached() -> bool:
            seen.update(await self.state(turn_id, auth))
            return bool(seen["status"] == status)

        await eventually(reached, f"the turn to be {status}")
        return seen

    async def decide(
        self, turn_id: str, auth: dict[str, str], tool_use_id: str, approved: bool
    ) -> httpx.Response:
        return await self.client.post(
            f"/api/turns/{turn_id}/approvals",
            json={"tool_use_id": tool_use_id, "approved": approved},
            headers=auth,
        )


SCRIPT = [
    scripts.asks(
        scripts.tool_use("lookup", {}, id="toolu_look"),
        scripts.tool_use("delete_file", DELETE, id="toolu_delete"),
        say="I will delete it.",
    ),
    scripts.answer("Done."),
]


async def serving(
    store: Store, script: list[dict[str, Any]], budget: Budget | None = None
) -> AsyncIterator[Served]:
    ran = Ran()
    model = ScriptedProvider(script)
    job = TurnJob(
        store,
        model,
        ran.toolset(),
        budget=budget or Budget(),
        activities={"delete_file": "activity.delete_file"},
        resuming=Resuming(needs_approval=frozenset({"delete_file"})),
    )
    queue = LocalQueue(job)
    async with client_for(create_app(store, queue)) as client:
        yield Served(client, queue, model, ran, store)
    await queue.close()


@pytest.fixture
async def served(store: Store) -> AsyncIterator[Served]:
    async for s in serving(store, SCRIPT):
        yield s


async def waiting_turn(served: Served) -> tuple[str, dict[str, str], dict[str, Any]]:
    turn_id, auth = await start_turn(served.client, "delete my notes")
    state = await served.until(turn_id, auth, "waiting")
    await served.queue.join()
    return turn_id, auth, state


async def test_a_turn_waits_for_approval_after_running_the_tools_that_need_none(
    served: Served,
) -> None:
    turn_id, auth, state = await waiting_turn(served)
    assert (state["done"], state["has_error"], state["stopped"]) == (False, False, False)
    assert state["activity"] is None, "nothing was deleted yet"
    assert state["approvals"] == [
        {
            "tool_use_id": "toolu_delete",
            "tool": "delete_file",
            "input": DELETE,
            "key": "activity.delete_file",
            "ask": "ask.delete_file",
        }
    ]
    assert state["messages"][-1]["text"] == "I will delete it."
    assert served.ran.counts == {"lookup": 1, "delete_file": 0}
    assert len(served.model.requests) == 1
    again = await served.state(turn_id, auth)
    assert again == state, "a waiting turn does not move on its own"


async def test_an_approved_tool_runs_once_and_the_model_is_asked_once_per_response(
    served: Served,
) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    response = await served.decide(turn_id, auth, "toolu_delete", True)
    assert response.status_code == 202
    assert response.json() == {"turn_id": turn_id, "status": "queued"}
    final = await served.until(turn_id, auth, "finished")
    await served.queue.join()
    assert final["done"] is True
    assert "approvals" not in final
    assert final["messages"][-1]["text"] == "Done."
    decision = {"tool": "delete_file", "approved": True, "ask": "ask.delete_file"}
    said, kept, answer = final["messages"][-3:]
    assert said["text"] == "I will delete it."
    assert kept == {"id": kept["id"], "role": "user", "decision": decision}
    assert int(answer["id"][1:]) == int(kept["id"][1:]) + 1 == int(said["id"][1:]) + 2
    path = f"/api/conversations/{final['conversation_id']}"
    transcript = (await served.client.get(path, headers=auth)).json()["messages"]
    in_turn = [{**m, "turn_id": turn_id} for m in (kept, answer)]
    assert transcript[-2:] == in_turn, "a reload shows the decision where it was made"
    assert served.ran.counts == {"lookup": 1, "delete_file": 1}
    first, second = served.model.requests
    assert second[: len(first)] == first, "the resumed turn goes on from the same history"
    results = second[-1]["content"]
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("toolu_look", "found it"),
        ("toolu_delete", "deleted notes.txt"),
    ]
    history = await served.store.history(final["conversation_id"])
    scripts.assert_valid_history(history)
    assert sum(m["role"] == "assistant" for m in history) == 2


async def test_a_denied_tool_never_runs_and_the_model_reads_that_the_person_declined(
    served: Served,
) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    assert (await served.decide(turn_id, auth, "toolu_delete", False)).status_code == 202
    final = await served.until(turn_id, auth, "finished")
    await served.queue.join()
    assert served.ran.counts == {"lookup": 1, "delete_file": 0}
    assert final["messages"][-2]["decision"] == {
        "tool": "delete_file", "approved": False, "ask": "ask.delete_file"
    }  # fmt: skip
    assert len(served.model.requests) == 2
    denied = served.model.requests[1][-1]["content"][1]
    assert denied["tool_use_id"] == "toolu_delete"
    assert denied["is_error"] is True
    assert "declined" in denied["content"]
    scripts.assert_valid_history(await served.store.history(final["conversation_id"]))


async def test_a_decision_the_turn_does_not_wait_for_is_409_and_bad_ones_400_or_404(
    served: Served,
) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    assert (await served.decide(turn_id, auth, "toolu_look", True)).status_code == 409
    assert (await served.decide(turn_id, auth, "toolu_nope", True)).status_code == 409
    wrong = {"authorization": "Bearer not-the-token"}
    assert (await served.decide(turn_id, wrong, "toolu_delete", True)).status_code == 404
    assert (await served.decide("t_unknown", auth, "toolu_delete", True)).status_code == 404
    bodies: list[Any] = [
        {"tool_use_id": "toolu_delete"},
        {"approved": True},
        [],
        {"tool_use_id": 3},
    ]
    for body in bodies:
        response = await served.client.post(
            f"/api/turns/{turn_id}/approvals", json=body, headers=auth
        )
        assert response.status_code == 400, body
        assert "error" in response.json()
    assert (await served.state(turn_id, auth))["status"] == "waiting"
    assert (await served.decide(turn_id, auth, "toolu_delete", True)).status_code == 202
    assert (await served.decide(turn_id, auth, "toolu_delete", False)).status_code == 409
    await served.until(turn_id, auth, "finished")
    assert served.ran.counts["delete_file"] == 1


async def test_a_turn_waits_for_every_use_before_it_resumes(store: Store) -> None:
    script = [
        scripts.asks(
            scripts.tool_use("delete_file", {"path": "a"}, id="toolu_a"),
            scripts.tool_use("delete_file", {"path": "b"}, id="toolu_b"),
        ),
        scripts.answer("One gone."),
    ]
    async for served in serving(store, script):
        turn_id, auth, state = await waiting_turn(served)
        assert [a["tool_use_id"] for a in state["approvals"]] == ["toolu_a", "toolu_b"]
        first = await served.decide(turn_id, auth, "toolu_b", False)
        assert first.json()["status"] == "waiting"
        state = await served.state(turn_id, auth)
        assert state["status"] == "waiting"
        assert [a["tool_use_id"] for a in state["approvals"]] == ["toolu_a"]
        assert (await served.decide(turn_id, auth, "toolu_a", True)).status_code == 202
        await served.until(turn_id, auth, "finished")
        assert served.ran.counts["delete_file"] == 1
        results = served.model.requests[1][-1]["content"]
        assert [r.get("is_error", False) for r in results] == [False, True]


async def test_waiting_longer_than_the_deadline_is_not_working_time(store: Store) -> None:
    budget = Budget(deadline=1.0, margin=0.05, min_call=0.05)
    async for served in serving(store, SCRIPT, budget):
        turn_id, auth, _ = await waiting_turn(served)
        # The point is time passing while the turn waits: longer than its whole deadline.
        await asyncio.sleep(1.2)
        assert (await served.decide(turn_id, auth, "toolu_delete", True)).status_code == 202
        final = await served.until(turn_id, auth, "finished")
        assert final["messages"][-1]["text"] == "Done."
        assert served.ran.counts["delete_file"] == 1


async def test_a_stop_while_waiting_ends_the_turn_at_once(served: Served) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    started = time.monotonic()
    response = await served.client.post(f"/api/turns/{turn_id}/cancel", headers=auth)
    assert response.status_code == 202
    final = await served.state(turn_id, auth)
    assert time.monotonic() - started < 1.0
    assert (final["status"], final["done"], final["stopped"]) == ("stopped", True, True)
    assert final["messages"][-1]["key"] == "notices.stopped"
    assert (await served.decide(turn_id, auth, "toolu_delete", True)).status_code == 409
    assert served.ran.counts == {"lookup": 1, "delete_file": 0}
    history = await served.store.history(final["conversation_id"])
    scripts.assert_valid_history(history)
    kept, stopped = history[-1]["content"]
    assert kept["content"] == "found it"
    assert stopped["is_error"] is True
    assert "stopped" in stopped["content"]
    assert len(served.model.requests) == 1


async def test_a_turn_nobody_answers_ends_stopped_after_the_approval_timeout(
    served: Served,
) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    patient = Sweeper(served.store, resuming=Resuming(approval_timeout=3600))
    assert await patient.sweep() == []
    hasty = Sweeper(served.store, resuming=Resuming(approval_timeout=0.001))
    assert await hasty.sweep() == [turn_id]
    final = await served.state(turn_id, auth)
    assert (final["status"], final["done"], final["has_error"]) == ("stopped", True, False)
    assert final["messages"][-1]["key"] == "notices.approval_timeout"
    assert served.ran.counts["delete_file"] == 0
    scripts.assert_valid_history(await served.store.history(final["conversation_id"]))


async def test_the_stored_timeline_shows_the_wait_the_decision_and_the_resume(
    served: Served,
) -> None:
    turn_id, auth, _ = await waiting_turn(served)
    assert (await served.decide(turn_id, auth, "toolu_delete", True)).status_code == 202
    await served.until(turn_id, auth, "finished")
    rows = timeline.stored_rows(await served.store.iterations(turn_id))
    assert [r.iteration for r in rows] == [1, 2]
    assert rows[0].waiting is True
    assert rows[1].resumed == "after approval: delete_file approved"
    shown = timeline.render(rows, "finished")
    assert "waited for a person's decision" in shown
    assert "resumed after approval: delete_file approved" in shown


async def test_a_stop_after_the_approval_before_the_turn_resumes_runs_nothing(
    store: Store,
) -> None:
    ran = Ran()
    model = ScriptedProvider(SCRIPT[:1])
    job = TurnJob(
        store, model, ran.toolset(), resuming=Resuming(needs_approval=frozenset({"delete_file"}))
    )
    held = HeldQueue()
    async with client_for(create_app(store, held)) as client:
        turn_id, auth = await start_turn(client, "delete my notes")
        assert await job.run(held.turn_ids.pop()) is None, "the job ends while the turn waits"
        decided = await client.post(
            f"/api/turns/{turn_id}/approvals",
            json={"tool_use_id": "toolu_delete", "approved": True},
            headers=auth,
        )
        assert decided.json()["status"] == "queued"
        assert (await client.post(f"/api/turns/{turn_id}/cancel", headers=auth)).status_code == 202
        assert await job.run(held.turn_ids.pop()) == Outcome.STOPPED
        final = (await client.get(f"/api/turns/{turn_id}", headers=auth)).json()
    assert (final["status"], final["done"]) == ("stopped", True)
    assert ran.counts == {"lookup": 1, "delete_file": 0}
    assert len(model.requests) == 1
    history = await store.history(final["conversation_id"])
    scripts.assert_valid_history(history)
    kept, unrun = history[-1]["content"]
    assert kept["content"] == "found it", "what ran before the wait keeps its result"
    assert unrun["is_error"] is True
