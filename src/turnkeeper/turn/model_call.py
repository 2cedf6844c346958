"""The model call's room: the turn's clock, pricing, telemetry and the race against a stop.

The loop makes every model call through its turn's `CallRoom`. The room reads
the clock (every reading is kept, so a replay can give them back), tells the
watchers of each call as it starts and ends, prices the reply for the model
that answered, and races the call against the hooks' `wait_stop`: a stop that
comes during a call aborts it. It keeps one `ModelCall` record per call (the
raw response or the error, or that a stop aborted it; its duration, the
per-call timeout used, the decision), which the store writes and the trace
file holds (`trace.py`).

This is the one place where a call's failure becomes a `ProviderError`: an
exception the provider did not translate, a `TimeoutError` out of the call
(one message for every timeout, `errors.timed_out`), and the turn's deadline
passing inside a call that ignored its timeout (`overran`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from ..budget import Clock
from ..errors import ProviderError, ProviderFailed, ProviderUnavailable, timed_out
from ..observe import prices
from ..observe.watched import CallEnd
from ..observe.watchers import UNWATCHED, TurnWatch
from ..providers import Provider
from ..store.records import ModelCall
from ..usage import Usage
from ..wire import Message, Reply, ToolSpec

logger = logging.getLogger("turnkeeper.loop")


@dataclass(frozen=True, slots=True)
class Priced:
    """A model call's reply, and its usage priced for the model that answered (when that
    model's price is known)."""

    reply: Reply
    usage: Usage


class CallRoom:
    """Where a turn's model calls happen: its clock, and each call, priced, watched and
    raced against a stop."""

    def __init__(
        self,
        provider: Provider,
        clock: Clock,
        watch: TurnWatch = UNWATCHED,
        *,
        earlier: int = 0,
        resumed: str | None = None,
    ) -> None:
        self.provider = provider
        self.watch = watch
        """Told of every model call as it starts and ends (spans, metrics)."""
        self.calls: list[ModelCall] = []
        """One record per model call, in order."""
        self.earlier = earlier
        """Model calls the turn made in earlier jobs (a resumed turn numbers on from them)."""
        self.resumed = resumed
        """Why the turn resumed in this job (approvals.py), recorded on its first call."""
        self.readings: list[float] = []
        """Every clock reading the turn made, in order."""
        self.stop_checks = 0
        self.stopped_at_check: int | None = None
        """Which stop check, counted from 1, saw the turn asked to stop."""
        self._clock = clock
        self._stop: asyncio.Future[None] | None = None
        """The one wait for a stop, started at the first call."""
        self._calling: asyncio.Task[Any] | None = None
        """The turn's task while a model call is in flight."""
        self._aborted = False
        """The stop cancelled the call in flight."""
        self._watch_asked = False
        self._closed = False
        self.started = self.now()
        self.streams = _takes_on_text(provider)
        """The provider hands each piece of answer text to an `on_text` callback."""
        self._pieces: _Pieces | None = None
        """The text the call in flight streamed."""
        described = provider.describe()
        self.requested: str | None = described.get("model")
        """The model requested, as the provider describes itself."""
        self.cache_ttl = "1h" if described.get("prompt_cache") == "1h" else "5m"
        """The TTL of the prompt cache's marks: its writes are priced at it."""

    # ---- the clock ------------------------------------------------------

    def now(self) -> float:
        """Read the turn's clock (kept, for the trace)."""
        t = self._clock()
        self.readings.append(t)
        return t

    @property
    def elapsed(self) -> float:
        """Seconds from the turn's start to the clock's last reading."""
        return self.readings[-1] - self.started

    def clock(self) -> list[float]:
        """The readings, as seconds since the first (as a trace records them)."""
        first = self.readings[0] if self.readings else 0.0
        return [t - first for t in self.readings]

    def stop_checked(self, stop: bool) -> bool:
        """Count a stop check and what it said; `stop`."""
        self.stop_checks += 1
        if stop:
            self.stopped_at_check = self.stop_checks
        return stop

    # ---- one call -------------------------------------------------------

    async def call(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        stop: Callable[[], Awaitable[None]],
        on_text: Callable[[str], None] | None = None,
    ) -> Priced | None:
        """One model call, recorded, raced against `stop`: None if `stop` returned first and
        the call was aborted; any failure comes out as a `ProviderError`. `on_text` gets
        each piece of answer text as it arrives, if the provider streams."""
        started = self.now()
        call = ModelCall(self.earlier + len(self.calls) + 1, started - self.started, timeout)
        if not self.calls:  # the first call of a resumed turn's job says why it resumed
            call.resumed = self.resumed
        self.calls.append(call)
        self.watch.call_started(call.iteration)
        try:
            reply = await self._unless_stopped(
                self._complete(history, tools, timeout, on_text), stop
            )
        except BaseException as e:  # a cancel too (the deadline's backstop, the task's): timed
            call.duration = self.now() - started
            if not isinstance(e, Exception):
                end = self._end(call, self.requested, error="CancelledError")
                self.watch.call_ended(end)  # its span ends, cut short
                raise
            error = provider_error(e, timeout)
            call.error = error.describe()
            self.watch.call_ended(self._end(call, self.requested, error=str(error)))
            raise error from e
        call.duration = self.now() - started
        if reply is None:
            call.stopped, call.decision = True, "stopped"
            self.watch.call_ended(self._end(call, self.requested, stopped=True))
            return None
        return Priced(reply, self._answered(call, reply))

    def _complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: Callable[[str], None] | None,
    ) -> Coroutine[Any, Any, Reply]:
        self._pieces = None
        if on_text is None or not self.streams:
            return self.provider.complete(history, tools, timeout)
        self.calls[-1].streamed = True
        self._pieces = pieces = _Pieces(on_text)
        complete: Any = self.provider.complete  # the streaming seam (providers/__init__.py)
        return complete(history, tools, timeout, on_text=pieces)  # type: ignore[no-any-return]

    def _end(self, call: ModelCall, model: str | None, **fields: Any) -> CallEnd:
        """What the watchers are told of a call that ended, with what it streamed."""
        pieces = self._pieces
        if pieces is None:
            return CallEnd(call.iteration, call.duration, model, **fields)
        return CallEnd(
            call.iteration, call.duration, model, **fields,
            pieces=pieces.count, first_text=pieces.first,
        )  # fmt: skip

    def _answered(self, call: ModelCall, reply: Reply) -> Usage:
        """Record the reply on `call`, priced, and tell the watchers; its priced usage."""
        answered = reply.raw.get("model") if isinstance(reply.raw, dict) else None
        call.model = answered if isinstance(answered, str) else self.requested
        usage = prices.current().priced(
            reply.usage, call.model, self.provider.wire.name, self.cache_ttl
        )
        call.response, call.stop_reason, call.usage = reply.raw, reply.raw_stop, usage
        call.tools = [u.name for u in reply.tool_uses]
        if self.watch is not UNWATCHED:  # a record per call only for someone who reads it
            self.watch.call_ended(
                self._end(
                    call, call.model, usage=usage, finish_reason=reply.raw_stop,
                    tools=call.tools, text=reply.text,
                )
            )  # fmt: skip
        return usage

    def decided(self, decision: str, caption: str | None) -> None:
        """What the loop made of the last call's reply, and the caption it left."""
        self.calls[-1].decision, self.calls[-1].caption = decision, caption

    def tools_took(self, seconds: float) -> None:
        """How long the tools the last call asked for took (none yet when a resumed turn
        answers the tools its last response asked for)."""
        if self.calls:
            self.calls[-1].tools_duration = seconds

    def overran(self) -> str:
        """The turn's deadline passed in real time: a provider or a toolset ignored its
        timeout, or a write of the turn waited for a store out of reach. A call still in
        flight ends as an error (the provider was unavailable); what happened, for the
        turn's report."""
        last = self.calls[-1] if self.calls else None
        if last is not None and last.error is None and last.response is None:
            why = "the deadline passed during a model call that ignored its timeout"
            last.error = ProviderUnavailable(why).describe()
            return why
        return (
            "the deadline passed during tools that ignored their timeout, or while a write"
            " of the turn waited for the store"
        )

    # ---- the race against a stop ----------------------------------------

    async def _unless_stopped(
        self, call: Coroutine[Any, Any, Reply], stop: Callable[[], Awaitable[None]]
    ) -> Reply | None:
        """The call's reply, or None if `stop` returned before it did (the call is then
        aborted, and whatever it answers is dropped).

        The call runs in the turn's own task (no task per call). One wait for the stop
        runs beside the turn, from the first call that gives the event loop control to
        `close()` (started again at the next call if it failed); when it returns during a
        call, it cancels the turn's task there, and that cancel is taken back here,
        whatever the provider made of it."""
        if self._stop_returned():
            call.close()
            return None
        if not self._watch_asked and (self._stop is None or self._stop.done()):
            self._watch_asked = True  # the first call, or the wait failed
            asyncio.get_running_loop().call_soon(self._watch, stop)
        task = asyncio.current_task()
        assert task is not None, "a model call runs in a task"
        self._calling, entry = task, task.cancelling()
        try:
            reply = await call
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
        if self._taken_back(task, entry) or self._stop_returned():
            return None  # it answered despite the abort, or the stop came with the answer
        return reply

    def _watch(self, stop: Callable[[], Awaitable[None]]) -> None:
        """Start the one wait for a stop, once the event loop has control: a turn that never
        gives it control (an instant model) ends before there is any call to abort."""
        self._watch_asked = False
        if self._closed or (self._stop is not None and not self._stop.done()):
            return
        self._stop = asyncio.ensure_future(stop())
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

    def close(self) -> None:
        """The turn is over: stop waiting for a stop."""
        self._closed = True
        if self._stop is not None:
            self._stop.cancel()


class _Pieces:
    """A call's `on_text`, counting the pieces and timing the first (in real time: the
    turn's clock is kept for the trace, and a replay gives its readings back)."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.count = 0
        self.first: float | None = None
        self.started = time.monotonic()

    def __call__(self, piece: str) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.started
        self.count += 1
        self.on_text(piece)


def _takes_on_text(provider: Provider) -> bool:
    """Whether the provider's `complete` takes an `on_text` callback."""
    try:
        parameters = inspect.signature(provider.complete).parameters
    except (TypeError, ValueError):
        return False
    return "on_text" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def provider_error(e: Exception, timeout: float) -> ProviderError:
    """What a model call's failure means: the provider's own error, the per-call timeout
    (the provider is unavailable), or anything else (it failed)."""
    if isinstance(e, ProviderError):
        return e
    if isinstance(e, TimeoutError):
        return ProviderUnavailable(timed_out(timeout))
    return ProviderFailed(f"{type(e).__name__}: {e}")
