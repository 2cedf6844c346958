"""The stop race on its own (turn/stop_race.py): a Stop that comes before a model call,
during it, after it returned, or while it raises; the checks the loop counts; and the
wait for a stop, which a closed turn stops and whose failure aborts nothing."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable

import pytest

from tests.waiting import eventually
from turnkeeper.turn.stop_race import StopRace


class Call:
    """A model call that waits for `answer` and then returns it (or raises `fails`), and says
    whether it started, and whether it was cancelled."""

    def __init__(self, fails: Exception | None = None) -> None:
        self.answer = asyncio.Event()
        self.fails = fails
        self.started = False
        self.cancelled = False

    async def __call__(self) -> str:
        self.started = True
        try:
            await self.answer.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.fails is not None:
            raise self.fails
        return "the reply"


async def until(condition: Callable[[], bool], what: str) -> None:
    async def holds() -> bool:
        return condition()

    await eventually(holds, what, bound=5)


def race_until(stop: asyncio.Event) -> StopRace:
    async def wait_stop() -> None:
        await stop.wait()

    return StopRace(wait_stop)


async def test_a_stop_before_the_call_aborts_it_without_an_answer() -> None:
    stop, call = asyncio.Event(), Call()
    stop.set()
    race = race_until(stop)
    assert await race.unless_stopped(call()) is None
    assert call.started
    assert call.cancelled, "the call was aborted once the wait saw the stop"
    again = Call()
    assert await race.unless_stopped(again()) is None
    assert not again.started, "a call after the stop returned never runs"
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_stop_during_the_call_aborts_it() -> None:
    stop, call = asyncio.Event(), Call()
    race = race_until(stop)
    running = asyncio.create_task(race.unless_stopped(call()))
    await until(lambda: call.started, "the call started")
    stop.set()
    assert await running is None
    assert call.cancelled
    assert not running.cancelled(), "the abort's cancel is taken back"


async def test_a_stop_after_the_call_returned_leaves_its_answer() -> None:
    stop, call = asyncio.Event(), Call()
    call.answer.set()
    race = race_until(stop)
    assert await race.unless_stopped(call()) == "the reply"
    stop.set()
    await until(lambda: race._stop is not None and race._stop.done(), "the wait saw the stop")
    assert asyncio.current_task().cancelling() == 0, "no call was in flight to abort"  # type: ignore[union-attr]
    after = Call()
    assert await race.unless_stopped(after()) is None
    assert not after.started


async def test_a_call_that_raises_without_a_stop_raises() -> None:
    stop, call = asyncio.Event(), Call(fails=RuntimeError("the provider failed"))
    call.answer.set()
    race = race_until(stop)
    with pytest.raises(RuntimeError, match="the provider failed"):
        await race.unless_stopped(call())


async def test_a_call_that_makes_the_abort_an_error_of_its_own_is_stopped() -> None:
    """A provider that turns the cancel into its own exception still comes out stopped."""
    stop = asyncio.Event()
    started = asyncio.Event()

    async def translating() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("connection closed") from None
        return "never"

    race = race_until(stop)
    running = asyncio.create_task(race.unless_stopped(translating()))
    await started.wait()
    stop.set()
    assert await running is None


async def test_a_cancel_from_outside_during_a_stopped_call_still_cancels() -> None:
    stop, call = asyncio.Event(), Call()
    race = race_until(stop)
    running = asyncio.create_task(race.unless_stopped(call()))
    await until(lambda: call.started, "the call started")
    running.cancel()
    stop.set()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_the_checks_count_and_remember_the_one_that_saw_the_stop() -> None:
    race = race_until(asyncio.Event())
    assert [race.checked(s) for s in (False, False, True)] == [False, False, True]
    assert (race.checks, race.stopped_at_check) == (3, 3)


async def test_a_closed_race_stops_waiting() -> None:
    stop, call = asyncio.Event(), Call()
    call.answer.set()
    race = race_until(stop)
    waiting = asyncio.create_task(race.unless_stopped(call()))
    assert await waiting == "the reply"
    await asyncio.sleep(0)  # the wait for a stop starts once the event loop has control
    assert race._stop is not None
    assert not race._stop.done()
    race.close()
    await until(lambda: race._stop is not None and race._stop.cancelled(), "the wait ended")


async def test_a_failing_wait_for_a_stop_aborts_nothing(caplog: pytest.LogCaptureFixture) -> None:
    async def broken() -> None:
        raise ConnectionError("the store is out of reach")

    race, call = StopRace(broken), Call()
    running = asyncio.create_task(race.unless_stopped(call()))
    await until(lambda: "waiting for a stop failed" in caplog.text, "the failure logged")
    call.answer.set()
    assert await running == "the reply"
    assert caplog.records[-1].levelno == logging.WARNING


async def test_a_race_closed_before_the_event_loop_ran_is_not_held_by_what_it_scheduled() -> None:
    """The wait for a stop starts once the event loop has control; a turn that ends before
    that (an instant model) must not leave that start queued, holding the race and through
    it the whole turn, until the loop runs it."""
    never = asyncio.Event()

    async def wait_stop() -> None:
        await never.wait()

    async def instant() -> str:
        return "the reply"

    race = StopRace(wait_stop)
    assert await race.unless_stopped(instant()) == "the reply"
    race.close()
    kept = weakref.ref(race)
    del race
    assert kept() is None, "the closed race is still referenced"
