"""A stop against the turn: checked before each model call, raced against the call in flight.

The loop asks its hooks whether the turn is to stop before every model call
(`checked`, counted: a trace records which check saw it). During a call, one
wait for a stop (the hooks' `wait_stop`) runs beside the turn; when it returns,
the call in flight is aborted (`unless_stopped` returns None) and whatever the
provider answers is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

logger = logging.getLogger("turnkeeper.loop")

T = TypeVar("T")


class StopRace:
    """The turn's watch for a stop: the checks before calls, and the race during them."""

    def __init__(self, wait_stop: Callable[[], Awaitable[None]]) -> None:
        self._wait_stop = wait_stop
        self.checks = 0
        self.stopped_at_check: int | None = None
        """Which stop check, counted from 1, saw the turn asked to stop."""
        self._stop: asyncio.Future[None] | None = None
        """The one wait for a stop, started at the first call."""
        self._calling: asyncio.Task[Any] | None = None
        """The turn's task while a call is in flight."""
        self._aborted = False
        """The stop cancelled the call in flight."""
        self._watch_queued: asyncio.Handle | None = None
        """The start of the wait, scheduled and not run yet (cancelled by `close()`: left in
        the event loop's queue, it would keep the whole turn alive until the loop runs it)."""
        self._closed = False

    def checked(self, stop: bool) -> bool:
        """Count a stop check and what it said; `stop`."""
        self.checks += 1
        if stop:
            self.stopped_at_check = self.checks
        return stop

    async def unless_stopped(self, call: Coroutine[Any, Any, T]) -> T | None:
        """The call's result, or None if a stop came before it did (the call is then
        aborted, and whatever it answers is dropped).

        The call runs in the turn's own task (no task per call). One wait for the stop
        runs beside the turn, from the first call that gives the event loop control to
        `close()` (started again at the next call if it failed); when it returns during a
        call, it cancels the turn's task there, and that cancel is taken back here,
        whatever the provider made of it."""
        stop = self._stop
        if stop is not None and stop.done() and self._stop_returned():  # else it is pending
            call.close()
            return None
        if self._watch_queued is None and (stop is None or stop.done()):
            # the first call, or the wait failed
            self._watch_queued = asyncio.get_running_loop().call_soon(self._watch)
        task = asyncio.current_task()
        assert task is not None, "a model call runs in a task"
        self._calling, entry = task, task.cancelling()
        try:
            result = await call
        except asyncio.CancelledError:
            if self._taken_back(task, entry):
                return None
            raise
        except Exception:
            if self._taken_back(task, entry):
                return None  # the provider made the abort an error of its own
            raise
        finally:
            self._calling = None
        if self._aborted and self._taken_back(task, entry):
            return None  # it answered despite the abort
        stop = self._stop
        if stop is not None and stop.done() and self._stop_returned():
            return None  # the stop came with the answer
        return result

    def close(self) -> None:
        """The turn is over: stop waiting for a stop."""
        self._closed = True
        if self._watch_queued is not None:
            self._watch_queued.cancel()
            self._watch_queued = None
        if self._stop is not None:
            self._stop.cancel()

    def _watch(self) -> None:
        """Start the one wait for a stop, once the event loop has control: a turn that never
        gives it control (an instant model) ends before there is any call to abort."""
        self._watch_queued = None
        if self._closed or (self._stop is not None and not self._stop.done()):
            return
        self._stop = asyncio.ensure_future(self._wait_stop())
        self._stop.add_done_callback(self._stop_came)

    def _stop_returned(self) -> bool:
        waiter = self._stop
        return (
            waiter is not None
            and waiter.done()
            and not waiter.cancelled()
            and waiter.exception() is None
        )

    def _taken_back(self, task: asyncio.Task[Any], entry: int) -> bool:
        """Whether the stop aborted the call just made; its cancel is then taken back.
        A cancel of the turn's task from outside, still counted, comes out as one."""
        if not self._aborted:
            return False
        self._aborted = False
        task.uncancel()
        if task.cancelling() > entry:
            raise asyncio.CancelledError
        return True

    def _stop_came(self, waiter: asyncio.Future[None]) -> None:
        """The stop wait ended: abort the call in flight, if any (the next stop check
        ends the turn otherwise), unless the wait itself failed."""
        if waiter.cancelled():
            return
        if waiter.exception() is not None:
            logger.warning("waiting for a stop failed: %r", waiter.exception())
            return
        if self._calling is not None and not self._aborted:
            self._aborted = True
            self._calling.cancel()
