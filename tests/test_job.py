"""TurnJob and lifecycle.fail(), in process, on both stores."""

from __future__ import annotations

import asyncio

import pytest

from tests import scripts
from tests.models import LOOKUP, GatedModel, StubbornModel
from tests.scripts import assert_valid_history
from turnkeeper import state as published
from turnkeeper.budget import Budget
from turnkeeper.observe.report import Report
from turnkeeper.outcomes import Outcome
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.service.job import TurnJob
from turnkeeper.store import Store, held_by, new_token
from turnkeeper.store.records import Recovery, Taken
from turnkeeper.turn.lifecycle import NOT_RUN, fail, tail


async def queued(store: Store, question: str = "what's up?") -> tuple[str, str]:
    conversation_id = await store.create_conversation(new_token()[1])
    return conversation_id, (await store.create_turn(conversation_id, question)).turn_id


async def test_a_turn_runs_and_its_history_is_stored_whole(store: Store) -> None:
    conversation_id, turn_id = await queued(store)
    provider = ScriptedProvider(
        [scripts.asks(scripts.tool_use("lookup")), scripts.answer("all good")]
    )
    outcome = await TurnJob(store, provider, LOOKUP).run(turn_id)
    assert outcome is Outcome.FINISHED
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"], state["activity"]) == ("finished", True, None)
    assert state["messages"][-1]["text"] == "all good"
    assert state["usage"]["iterations"] == 2
    history = await store.history(conversation_id)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert_valid_history(history)


async def test_a_turn_reads_its_cancel_flag_once_not_before_every_call(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each checkpoint reads the flag back with its write: the stop check before the
    first call reads it, the checks after a checkpoint do not. (The stop wait, which
    reads it too, once and after each wake-up, is left out here.)"""
    _, turn_id = await queued(store)
    reads = 0
    read = store.cancel_requested

    async def counted(turn_id: str) -> bool:
        nonlocal reads
        reads += 1
        return await read(turn_id)

    async def never(turn_id: str) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(store, "cancel_requested", counted)
    monkeypatch.setattr(store, "wait_cancel", never)
    steps = [scripts.asks(scripts.tool_use("lookup"))] * 4
    provider = ScriptedProvider([*steps, scripts.answer("all good")])
    assert await TurnJob(store, provider, LOOKUP).run(turn_id) is Outcome.FINISHED
    assert len(provider.requests) == 5
    assert reads == 1, f"{reads} reads of the cancel flag for 5 model calls"


async def test_the_next_turn_sees_the_whole_history(store: Store) -> None:
    conversation_id, turn_id = await queued(store, "first")
    await TurnJob(store, ScriptedProvider([scripts.answer("one")])).run(turn_id)
    second = (await store.create_turn(conversation_id, "second")).turn_id
    provider = ScriptedProvider([scripts.answer("two")])
    await TurnJob(store, provider).run(second)
    sent = provider.requests[0]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == "first"
    assert sent[2]["content"] == "second"
    state = await store.state_after(second, 0)
    assert state is not None
    assert [m["id"] for m in state["messages"]] == ["m3", "m4"]


async def test_a_turn_is_tried_once(store: Store) -> None:
    _, turn_id = await queued(store)
    provider = ScriptedProvider([scripts.answer("once")])
    job = TurnJob(store, provider)
    assert await job.run(turn_id) is Outcome.FINISHED
    assert await job.run(turn_id) is None
    assert len(provider.requests) == 1


async def test_a_cancelled_turn_stops_before_its_first_call(store: Store) -> None:
    _, turn_id = await queued(store)
    await store.request_cancel(turn_id)
    provider = ScriptedProvider([])
    assert await TurnJob(store, provider).run(turn_id) is Outcome.STOPPED
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["stopped"], state["has_error"]) == ("stopped", True, False)
    assert provider.requests == []
    assert not await store.cancel_requested(turn_id), "the final write clears the flag"


async def test_the_job_timeout_runs_failed(store: Store) -> None:
    conversation_id, turn_id = await queued(store, "hang")
    budget = Budget(deadline=1.0, call_timeout=0.1, min_call=0.05, margin=0.05)
    reports: list[Report] = []
    job = TurnJob(store, StubbornModel([]), budget=budget, margin=0.2, reporter=reports.append)
    assert await job.run(turn_id) is Outcome.FAILED
    assert [r.event for r in reports] == ["failed"], "one failure, one report"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"], state["has_error"]) == ("failed", True, True)
    assert state["messages"][-1] == {
        "id": "m2",
        "role": "bot",
        "key": "errors.ai_failed",
        "is_error": True,
    }
    assert await store.history(conversation_id) == [{"role": "user", "content": "hang"}]


async def test_a_job_that_lost_its_turn_writes_nothing(store: Store) -> None:
    conversation_id, turn_id = await queued(store)
    provider = GatedModel([scripts.answer("too late")])
    running = asyncio.create_task(TurnJob(store, provider).run(turn_id))
    await asyncio.wait_for(provider.started.wait(), 10)
    recovery = await store.take_over(turn_id, held_by(1))
    assert recovery is not None
    assert await fail(store, turn_id, held_by(recovery.fence))
    taken = await store.state_after(turn_id, 0)
    provider.gate.set()
    assert await asyncio.wait_for(running, 10) is None
    assert await store.state_after(turn_id, 0) == taken
    assert taken is not None
    assert taken["status"] == "failed"
    assert "too late" not in str(await store.history(conversation_id))


def test_failed_answers_a_tool_use_left_without_results() -> None:
    use = scripts.tool_use("lookup", id="toolu_1")
    recovery = Recovery(
        turn_id="t",
        conversation_id="c",
        fence=2,
        question="q",
        wire="anthropic",
        version=3,
        message_offset=0,
        state=published.queued("t", "c", "q"),
        checkpointed=True,
        last_message={"role": "assistant", "content": [scripts.text("let me look"), use]},
    )
    (results,) = tail(Taken(recovery, None, cancel=False), NOT_RUN)
    assert results["role"] == "user"
    (block,) = results["content"]
    assert (block["tool_use_id"], block["is_error"]) == ("toolu_1", True)


async def test_a_store_failure_in_a_hook_is_reported_once(store: Store) -> None:
    _, turn_id = await queued(store)

    reports: list[Report] = []
    real_checkpoint = store.checkpoint

    async def checkpoint(*args: object, **kwargs: object) -> bool:
        raise ConnectionError("the store went away")

    store.checkpoint = checkpoint  # type: ignore[method-assign]
    try:
        job = TurnJob(
            store,
            ScriptedProvider([scripts.asks(scripts.tool_use("lookup")), scripts.answer("x")]),
            reporter=reports.append,
        )
        assert await job.run(turn_id) is Outcome.FAILED
    finally:
        store.checkpoint = real_checkpoint  # type: ignore[method-assign]
    assert [r.event for r in reports] == ["failed"]
    assert "the store went away" in reports[0].message


async def test_a_worker_logs_one_line_as_a_turn_starts_and_one_as_it_ends(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """An operator follows a worker by its log: each turn's start and end, with its
    conversation, outcome and seconds, at INFO; a failed turn's end says so too."""
    conversation_id, turn_id = await queued(store)
    caplog.set_level("INFO", logger="turnkeeper.job")
    assert await TurnJob(store, ScriptedProvider([scripts.answer("hi")])).run(turn_id)
    lines = [r.getMessage() for r in caplog.records if r.name == "turnkeeper.job"]
    assert lines[0] == f"turn {turn_id} of conversation {conversation_id}: started"
    assert lines[1].startswith(f"turn {turn_id} of conversation {conversation_id}: finished after ")
    assert lines[1].endswith(" s")
    assert len(lines) == 2
    caplog.clear()
    _, hung = await queued(store, "hang")
    budget = Budget(deadline=1.0, call_timeout=0.1, min_call=0.05, margin=0.05)
    job = TurnJob(store, StubbornModel([]), budget=budget, margin=0.2, reporter=lambda _: None)
    assert await job.run(hung) is Outcome.FAILED
    ends = [
        r.getMessage()
        for r in caplog.records
        if r.levelname == "INFO" and "after" in r.getMessage()
    ]
    [end] = ends
    assert end.startswith(f"turn {hung} of conversation ")
    assert ": failed after " in end
