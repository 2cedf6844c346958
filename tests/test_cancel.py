"""Stop is prompt: a cancel aborts the model call in flight, lets running tools finish,
starts nothing new, and ends the turn `stopped`: in the loop, on both stores, and in a
`turnkeeper worker` process that hears of the cancel from another process."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests import scripts
from tests.fake_model import HOLD, FakeModelServer
from tests.models import LOOKUP, GatedModel
from tests.scripts import assert_valid_history
from tests.test_server import output, turnkeeper
from tests.waiting import eventually
from turnkeeper import LocalHooks, Outcome, ScriptedProvider, run_turn
from turnkeeper.errors import ProviderFailed
from turnkeeper.observe.report import Report
from turnkeeper.providers import messages_api
from turnkeeper.service.job import TurnJob
from turnkeeper.service.queue import LocalQueue
from turnkeeper.store import Store, new_token, open_store
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.turn.loop import TurnResult
from turnkeeper.turn.replay import first_difference, replay
from turnkeeper.wire import ToolSpec

QUESTION = "take your time"
BOUND = 10.0
"""A generous bound on how long a stopped turn may take to end."""
PROMPT = 2.0
"""What a Stop may take to end a turn held in its model call, through a worker process
(the promise is about a second; the browser test allows two as well)."""


def quiet_hooks() -> LocalHooks:
    return LocalHooks(reporter=lambda report: None)


class SlowTool:
    """The `slow` tool: runs until the test sets `release`; `started` says it runs."""

    def __init__(self) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, args: dict[str, Any]) -> str:
        self.started.set()
        await self.release.wait()
        return "slow and done"


def asks_for_slow(
    call: Callable[[dict[str, Any]], Awaitable[str]],
) -> tuple[FunctionToolset, ScriptedProvider]:
    """A model that asks for the `slow` tool (`call`) once, then would answer "never"."""
    tools = FunctionToolset([Tool(ToolSpec("slow", "Take a while."), call)])
    return tools, ScriptedProvider(
        [scripts.asks(scripts.tool_use("slow")), scripts.answer("never")]
    )


async def ended(running: asyncio.Task[Any]) -> Any:
    async with asyncio.timeout(BOUND):
        return await running


async def calls_made(model: GatedModel, n: int) -> None:
    async def made() -> bool:
        return model.calls >= n

    await eventually(made, f"model call {n} starting")


async def replays_identically(result: TurnResult) -> None:
    replayed = (await replay(result.trace)).trace
    assert first_difference(result.trace, replayed) is None
    assert replayed.outcome == "stopped"
    assert replayed.calls[-1].stopped is True


# ---- the loop -------------------------------------------------------------------


async def test_a_stop_during_a_call_aborts_it_and_appends_nothing() -> None:
    hooks = quiet_hooks()
    model = GatedModel([scripts.answer("the answer the reader tried to stop")])
    running = asyncio.create_task(run_turn(QUESTION, provider=model, hooks=hooks))
    await model.started.wait()
    hooks.stop()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert result.history == [{"role": "user", "content": QUESTION}]
    assert (result.usage.iterations, result.usage.output_tokens) == (0, 0)
    state = result.state.to_json()
    assert (state["status"], state["has_error"], state["done"]) == ("stopped", False, True)
    assert state["messages"][-1]["key"] == "notices.stopped"
    assert not [m for m in state["messages"] if m["role"] == "bot" and "text" in m]
    assert result.trace.calls[0].stopped is True
    assert hooks.reports == [], "a stop is not an error"
    await replays_identically(result)


async def test_a_stop_during_the_last_call_ends_stopped_not_finished() -> None:
    hooks = quiet_hooks()
    model = GatedModel([scripts.asks(scripts.tool_use("lookup")), scripts.answer("never shown")])
    running = asyncio.create_task(run_turn(QUESTION, provider=model, toolset=LOOKUP, hooks=hooks))
    await model.started.wait()
    model.gate.set()  # the first call answers; its tool runs; the second call starts
    await calls_made(model, 2)
    hooks.stop()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert [m["role"] for m in result.history] == ["user", "assistant", "user"]
    assert_valid_history(result.history)
    assert result.usage.iterations == 1, "the aborted call's usage is not counted"
    assert "never shown" not in str(result.state.to_json())
    await replays_identically(result)


async def test_a_stop_during_tools_lets_them_finish_and_starts_no_call() -> None:
    hooks = quiet_hooks()
    slow = SlowTool()
    tools, provider = asks_for_slow(slow)
    running = asyncio.create_task(run_turn(QUESTION, provider=provider, toolset=tools, hooks=hooks))
    await slow.started.wait()
    hooks.stop()
    slow.release.set()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert len(provider.requests) == 1, "no model call starts after the stop"
    assert_valid_history(result.history)
    assert "slow and done" in str(result.history[-1]), "the running tool finished"


async def test_a_stop_and_a_cancel_of_the_task_together_still_cancel_the_task() -> None:
    """The stop aborts the call by cancelling the turn's own task and takes that cancel
    back; a cancel from outside in the same instant must still come out as one."""

    class CancelledToo(LocalHooks):
        async def wait_stop(self) -> None:
            await super().wait_stop()
            asyncio.get_running_loop().call_soon(running.cancel)  # just before the abort

    hooks = CancelledToo(reporter=lambda report: None)
    model = GatedModel([scripts.answer("never shown")])
    running = asyncio.create_task(run_turn(QUESTION, provider=model, hooks=hooks))
    await model.started.wait()
    hooks.stop()
    with pytest.raises(asyncio.CancelledError):
        await ended(running)
    assert hooks.finishes == 1
    assert hooks.published[-1].to_json()["done"] is True


async def test_a_turn_that_never_gives_the_event_loop_control_starts_no_stop_wait() -> None:
    """The wait for a stop starts once the event loop has control: a turn on an instant
    model (nothing to abort) starts no wait for a stop, and nothing piles up between such
    turns. (The scripted model streams its answer: writing its first text delta at once is
    a task of the event log's, done by the time the turn is.)"""
    created: list[Any] = []
    tasks: list[asyncio.Task[Any]] = []
    loop = asyncio.get_running_loop()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        created.append(coro)
        tasks.append(asyncio.Task(coro, loop=loop, **kwargs))
        return tasks[-1]

    loop.set_task_factory(counting)
    try:
        for _ in range(3):
            model = ScriptedProvider([scripts.asks(scripts.tool_use("x")), scripts.answer("hi")])
            result = await run_turn(QUESTION, provider=model, hooks=quiet_hooks())
            assert result.outcome is Outcome.FINISHED
        await asyncio.sleep(0)
    finally:
        loop.set_task_factory(None)
    assert [c.__qualname__ for c in created if "Emitter" not in c.__qualname__] == []
    assert all(t.done() for t in tasks), "nothing piles up between turns"


async def test_a_stop_that_comes_with_the_answer_ends_the_turn_stopped() -> None:
    """The stop wait returns in the same step of the event loop as the answer, before
    the turn resumes with it: the answer the reader tried to stop is not kept."""

    class Waiting(LocalHooks):
        waiting = asyncio.Event()

        async def wait_stop(self) -> None:
            self.waiting.set()
            await super().wait_stop()

    hooks = Waiting(reporter=lambda report: None)
    model = GatedModel([scripts.answer("the answer the reader tried to stop")])
    running = asyncio.create_task(run_turn(QUESTION, provider=model, hooks=hooks))
    async with asyncio.timeout(BOUND):
        await hooks.waiting.wait()  # the stop wait is waiting
    hooks.stop()
    model.gate.set()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert result.history == [{"role": "user", "content": QUESTION}]


class Swallowing(GatedModel):
    """A provider that does not let a cancel through: it answers, or fails, instead."""

    def __init__(self, responses: list[dict[str, Any]], *, fail: bool = False) -> None:
        super().__init__(responses)
        self.fail = fail

    async def complete(self, history: Any, tools: Any, timeout: float, on_text: Any = None) -> Any:
        try:
            return await super().complete(history, tools, timeout, on_text)
        except asyncio.CancelledError:
            if self.fail:
                raise ProviderFailed("the connection was aborted") from None
            return messages_api.parse_reply(scripts.answer("answered anyway"))


@pytest.mark.parametrize("fail", [False, True], ids=["answers", "fails"])
async def test_a_stop_is_a_stop_whatever_the_provider_makes_of_its_cancel(fail: bool) -> None:
    """The abort's cancel is taken back even if the provider swallowed it: the turn
    ends stopped, and its task is not left with a cancel pending."""
    hooks = quiet_hooks()
    model = Swallowing([scripts.answer("never shown")], fail=fail)

    async def turn() -> tuple[TurnResult, int]:
        result = await run_turn(QUESTION, provider=model, hooks=hooks)
        task = asyncio.current_task()
        assert task is not None
        return result, task.cancelling()

    running = asyncio.create_task(turn())
    await model.started.wait()
    hooks.stop()
    result, cancelling = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert result.history == [{"role": "user", "content": QUESTION}]
    assert cancelling == 0
    assert hooks.reports == []


async def test_a_wait_for_a_stop_that_failed_is_started_again_at_the_next_call() -> None:
    class FailsOnce(LocalHooks):
        waits = 0

        async def wait_stop(self) -> None:
            self.waits += 1
            if self.waits == 1:
                raise RuntimeError("the store is away for a moment")
            await super().wait_stop()

    hooks = FailsOnce(reporter=lambda report: None)
    model = GatedModel([scripts.asks(scripts.tool_use("nothing")), scripts.answer("too late")])
    running = asyncio.create_task(run_turn(QUESTION, provider=model, hooks=hooks))
    await model.started.wait()
    model.gate.set()
    await calls_made(model, 2)
    hooks.stop()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.STOPPED
    assert hooks.waits == 2
    assert "too late" not in str(result.history), "the second call was aborted"
    assert_valid_history(result.history)


async def test_the_wait_for_a_stop_ends_with_the_turn() -> None:
    """One wait per turn, from its first call: nothing of it outlives the turn."""
    hooks = quiet_hooks()
    before = len(asyncio.all_tasks())
    model = ScriptedProvider([scripts.asks(scripts.tool_use("nothing")), scripts.answer("done")])
    result = await run_turn(QUESTION, provider=model, hooks=hooks)
    await asyncio.sleep(0)
    assert result.outcome is Outcome.FINISHED
    assert len(asyncio.all_tasks()) == before


async def test_a_failing_wait_for_a_stop_stops_nothing() -> None:
    """A hook that breaks its promise never to raise: the call goes on and answers."""
    failed = asyncio.Event()

    class Broken(LocalHooks):
        async def wait_stop(self) -> None:
            failed.set()
            raise RuntimeError("the store is away")

    model = GatedModel([scripts.answer("hi")])
    hooks = Broken(reporter=lambda report: None)
    running = asyncio.create_task(run_turn(QUESTION, provider=model, hooks=hooks))
    await failed.wait()
    model.gate.set()
    result: TurnResult = await ended(running)
    assert result.outcome is Outcome.FINISHED
    assert result.history[-1]["content"][0]["text"] == "hi"


# ---- both stores ----------------------------------------------------------------


async def queued(store: Store, question: str = QUESTION) -> tuple[str, str]:
    conversation_id = await store.create_conversation(new_token()[1])
    return conversation_id, (await store.create_turn(conversation_id, question)).turn_id


async def test_a_cancel_during_a_held_call_ends_the_turn_stopped(store: Store) -> None:
    conversation_id, turn_id = await queued(store)
    model = GatedModel([scripts.answer("the answer the reader tried to stop")])
    running = asyncio.create_task(TurnJob(store, model).run(turn_id))
    await model.started.wait()
    await store.request_cancel(turn_id)
    assert await ended(running) is Outcome.STOPPED
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["stopped"], state["has_error"]) == ("stopped", True, False)
    assert state["usage"]["iterations"] == 0
    assert await store.history(conversation_id) == [{"role": "user", "content": QUESTION}]
    assert [c["decision"] for c in await store.iterations(turn_id)] == ["stopped"]
    assert not await store.cancel_requested(turn_id), "the final write clears the flag"

    second = (await store.create_turn(conversation_id, "and now?")).turn_id
    provider = ScriptedProvider([scripts.answer("now")])
    assert await TurnJob(store, provider).run(second) is Outcome.FINISHED
    assert_valid_history(provider.requests[0])
    assert_valid_history(await store.history(conversation_id))


async def test_a_cancel_during_the_last_call_ends_the_turn_stopped(store: Store) -> None:
    conversation_id, turn_id = await queued(store)
    model = GatedModel([scripts.asks(scripts.tool_use("lookup")), scripts.answer("never shown")])
    running = asyncio.create_task(TurnJob(store, model, LOOKUP).run(turn_id))
    await model.started.wait()
    model.gate.set()
    await calls_made(model, 2)
    await store.request_cancel(turn_id)
    assert await ended(running) is Outcome.STOPPED
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert state["status"] == "stopped"
    assert "never shown" not in str(state["messages"])
    history = await store.history(conversation_id)
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert_valid_history(history)


async def test_a_cancel_during_tools_lets_them_finish_and_starts_no_call(store: Store) -> None:
    conversation_id, turn_id = await queued(store)
    slow = SlowTool()
    tools, provider = asks_for_slow(slow)
    running = asyncio.create_task(TurnJob(store, provider, tools).run(turn_id))
    await slow.started.wait()
    await store.request_cancel(turn_id)
    slow.release.set()
    assert await ended(running) is Outcome.STOPPED
    assert len(provider.requests) == 1
    history = await store.history(conversation_id)
    assert_valid_history(history)
    assert "slow and done" in str(history[-1])


async def test_a_turn_whose_cancel_was_accepted_ends_stopped_when_the_process_stops(
    store: Store,
) -> None:
    """SIGINT or SIGTERM after the reader's Stop was accepted (the tool still running):
    the turn the process cuts short ends `stopped`, as the reader asked, and is not
    reported as a failure."""
    conversation_id, turn_id = await queued(store)
    slow = SlowTool()
    tools, provider = asks_for_slow(slow)
    reports: list[Report] = []
    queue = LocalQueue(TurnJob(store, provider, tools, reporter=reports.append))
    await queue.enqueue(turn_id)
    await slow.started.wait()
    await store.request_cancel(turn_id)
    async with asyncio.timeout(BOUND):
        await queue.drain(0.05)  # the grace ends with the tool still running
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["done"], state["stopped"]) == ("stopped", True, True)
    assert state["has_error"] is False
    assert state["messages"][-1]["key"] == "notices.stopped"
    assert [r.event for r in reports if r.level >= logging.WARNING] == []
    assert_valid_history(await store.history(conversation_id))


async def test_a_cancel_from_another_process_during_tools_is_heard_before_the_next_call(
    store: Store, store_url: str
) -> None:
    """A second store on the same database, as another process sharing the SQLite file:
    its cancel wakes nothing in this process, so the turn hears of it from the flag the
    checkpoint after the tools reads back (on PostgreSQL NOTIFY may be first)."""
    other = await open_store(store_url)
    try:
        conversation_id, turn_id = await queued(store)

        async def cancelled_meanwhile(args: dict[str, Any]) -> str:
            await other.request_cancel(turn_id)
            return "done while cancelled"

        tools, provider = asks_for_slow(cancelled_meanwhile)
        assert await TurnJob(store, provider, tools).run(turn_id) is Outcome.STOPPED
    finally:
        await other.close()
    assert len(provider.requests) == 1, "no model call after the cancel"
    state = await store.state_after(turn_id, 0)
    assert state is not None
    assert (state["status"], state["usage"]["iterations"]) == ("stopped", 1)
    history = await store.history(conversation_id)
    assert_valid_history(history)
    assert "done while cancelled" in str(history[-1])


# ---- PostgreSQL: a cancel from another process ------------------------------------


async def test_a_cancel_through_another_connection_is_heard_by_notify(store_url: str) -> None:
    """Two stores on one database, as the API and a worker on two machines: the worker's
    store learns of the API's cancel by NOTIFY (PostgreSQL) and the turn stops."""
    if not store_url.startswith("postgresql"):
        return  # SQLite serves and runs turns in one process; the other test covers it
    api, worker = await open_store(store_url), await open_store(store_url)
    try:
        _, turn_id = await queued(api)
        model = GatedModel([scripts.answer("never")])
        running = asyncio.create_task(TurnJob(worker, model).run(turn_id))
        await model.started.wait()
        await api.request_cancel(turn_id)
        assert await ended(running) is Outcome.STOPPED
    finally:
        await api.close()
        await worker.close()


async def test_a_worker_process_aborts_a_held_call_on_cancel(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema
    from turnkeeper.service.worker import ProcrastinateQueue

    log = tmp_path / "worker.log"
    answer = scripts.answer("the answer the reader tried to stop")
    with fresh_schema(postgres_database) as url, FakeModelServer([HOLD, answer]) as model:
        store = await open_store(url)
        try:
            _, turn_id = await queued(store)
            async with ProcrastinateQueue(url) as queue:
                await queue.enqueue(turn_id)
            env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
            args = ("worker", "--provider", "anthropic", "--database", url)
            with turnkeeper(*args, log=log, env=env):

                async def held() -> bool:
                    return len(model.requests) == 1

                await eventually(held, "the worker's model call", bound=30)
                asked = time.monotonic()
                await store.request_cancel(turn_id)

                async def done() -> bool:
                    state = await store.state_after(turn_id, 0)
                    return state is not None and bool(state["done"])

                await eventually(done, "the turn ending while its call is held", bound=BOUND)
                # "Within about a second": NOTIFY reaches the worker, which aborts the call.
                assert time.monotonic() - asked < PROMPT, output(log)
            state = await store.state_after(turn_id, 0)
            assert state is not None
            assert state["status"] == "stopped", output(log)
            assert state["usage"]["iterations"] == 0
            assert len(model.requests) == 1
        finally:
            model.release()
            await store.close()


async def test_a_cancel_sent_while_the_listener_was_down_is_heard_after_it_reconnects(
    postgres_database: str,
) -> None:
    """The listening connection is killed (a restart, a failover): it reconnects, and
    every waiter reads its flag again, so a notification lost meanwhile loses no cancel."""
    import psycopg

    from tests.databases import fresh_schema
    from turnkeeper.store.listener import CHANNEL

    listening = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        f" AND query = 'LISTEN {CHANNEL}' AND pid <> pg_backend_pid()"
    )
    with fresh_schema(postgres_database) as url:
        api, worker = await open_store(url), await open_store(url)
        try:
            _, turn_id = await queued(api)
            model = GatedModel([scripts.answer("never")])
            running = asyncio.create_task(TurnJob(worker, model).run(turn_id))
            await model.started.wait()
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:

                async def listener_up() -> bool:
                    return bool(await (await admin.execute(listening)).fetchall())

                await eventually(listener_up, "the worker's store listening for cancels")
                await admin.execute(f"SELECT pg_terminate_backend(pid) FROM ({listening}) l")
            await api.request_cancel(turn_id)
            assert await ended(running) is Outcome.STOPPED
        finally:
            await api.close()
            await worker.close()
