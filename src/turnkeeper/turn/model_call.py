"""The model call's room: each call of the turn, raced against a stop, priced and watched.

The loop makes every model call through its turn's `CallRoom`. The room reads
the turn's clock (`clock.py`), tells the watchers of each call as it starts and
ends, races the call against a stop (`stop_race.py`: a stop that comes during a
call aborts it), prices the reply for the model that answered, and tells the
turn's call log (`call_log.py`) what each call came to: the raw response or the
error, or that a stop aborted it, and its duration. The log builds the
`ModelCall` records the store writes and the trace file holds (`trace.py`).

This is the one place where a call's failure becomes a `ProviderError`: an
exception the provider did not translate, a `TimeoutError` out of the call
(one message for every timeout, `errors.timed_out`), and the turn's deadline
passing inside a call that ignored its timeout (`overran`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import credentials
from ..credentials import SecretStream, hide_secrets
from ..errors import ProviderError, ProviderFailed, ProviderUnavailable, timed_out
from ..observe import prices
from ..observe.watched import CallEnd
from ..observe.watchers import UNWATCHED, TurnWatch
from ..providers import Provider, takes_text
from ..store.records import Compacted
from ..usage import Usage
from ..wire import Message, Reply, ToolSpec, ToolUse
from .call_log import CallLog
from .clock import TurnClock
from .compaction import Compaction
from .context import Window
from .stop_race import StopRace


@dataclass(slots=True)
class Priced:
    """A model call's reply, and its usage priced for the model that answered (when that
    model's price is known)."""

    reply: Reply
    usage: Usage


class CallRoom:
    """Where a turn's model calls happen: each one timed, raced against a stop, priced,
    watched and logged."""

    def __init__(
        self,
        provider: Provider,
        clock: TurnClock,
        race: StopRace,
        log: CallLog,
        watch: TurnWatch = UNWATCHED,
        compaction: Compaction | None = None,
        compacted: Compacted | None = None,
    ) -> None:
        self.provider = provider
        self.clock = clock
        self.race = race
        self.log = log
        self.watch = watch
        """Told of every model call as it starts and ends (spans, metrics)."""
        described = self.described = provider.describe()
        """The request's parameters as the turn starts (its instructions: `instructed`)."""
        self.requested: str | None = described.get("model")
        """The model requested, as the provider describes itself."""
        self.cache_ttl = "1h" if described.get("prompt_cache") == "1h" else "5m"
        """The TTL of the prompt cache's marks: its writes are priced at it."""
        self.streams = takes_text(provider)
        """The provider hands each piece of answer text to an `on_text` callback."""
        self._pieces: _Pieces | None = None
        """The text the call in flight streamed."""
        self.window = Window(compaction, compacted, provider.wire, described)
        """Builds each call's request inside the model's context window from `compacted`,
        the conversation's compaction record (context.py; `compaction` None: off)."""

    async def call(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: Callable[[str], None] | None = None,
        via: Provider | None = None,
    ) -> Priced | None:
        """One model call, logged, raced against a stop: None if the stop came first and
        the call was aborted; any failure comes out as a `ProviderError`. `on_text` gets
        each piece of answer text as it arrives, if the provider streams. `via`: another
        provider than the turn's (the summariser's, context.py), called without `on_text`."""
        started = self.clock.now()
        streamed = on_text is not None and self.streams
        iteration = self.log.began(started - self.clock.started, timeout, streamed=streamed)
        if self.watch is not UNWATCHED:
            self.watch.call_started(iteration)
        try:
            if via is None and not streamed:  # the common call, as `_complete` makes it
                self._pieces = None
                asked = self.provider.complete(history, tools, timeout)
            else:
                asked = self._complete(history, tools, timeout, on_text, via)
            reply = await self.race.unless_stopped(asked)
        except BaseException as e:  # a cancel too (the deadline's backstop, the task's): timed
            duration = self.clock.now() - started
            if not isinstance(e, Exception):
                self.log.ended(duration)
                end = self._end(iteration, duration, self.requested, error="CancelledError")
                self.watch.call_ended(end)  # its span ends, cut short
                raise
            error = provider_error(e, timeout)
            self.log.ended(duration, error=error)
            self.watch.call_ended(self._end(iteration, duration, self.requested, error=str(error)))
            raise error from e
        duration = self.clock.now() - started
        if reply is None:
            self.log.ended(duration, stopped=True, decision="stopped")
            self.watch.call_ended(self._end(iteration, duration, self.requested, stopped=True))
            return None
        if credentials.kept_any:
            reply = secrets_hidden(reply)
        if self._pieces is not None:
            self._pieces.end()
        return Priced(reply, self._answered(iteration, duration, reply))

    def _answered(self, iteration: int, duration: float, reply: Reply) -> Usage:
        """Log the reply, priced, and tell the watchers; its priced usage."""
        answered = reply.raw.get("model") if isinstance(reply.raw, dict) else None
        model = answered if isinstance(answered, str) else self.requested
        usage = prices.current().priced(reply.usage, model, self.provider.wire.name, self.cache_ttl)
        tools = [u.name for u in reply.tool_uses]
        self.log.ended(duration, reply.raw, None, reply.raw_stop, tools, usage, model)
        if self.watch is not UNWATCHED:  # a record per call only for someone who reads it
            self.watch.call_ended(
                self._end(
                    iteration, duration, model, usage=usage, finish_reason=reply.raw_stop,
                    tools=tools, text=reply.text,
                )
            )  # fmt: skip
        return usage

    def _complete(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: Callable[[str], None] | None,
        via: Provider | None = None,
    ) -> Coroutine[Any, Any, Reply]:
        self._pieces = None
        if via is not None:
            return via.complete(history, tools, timeout)
        if on_text is None or not self.streams:
            return self.provider.complete(history, tools, timeout)
        self._pieces = pieces = _Pieces(on_text)
        return self.provider.complete(history, tools, timeout, on_text=pieces)

    def _end(self, iteration: int, duration: float, model: str | None, **fields: Any) -> CallEnd:
        """What the watchers are told of a call that ended, with what it streamed."""
        pieces = self._pieces
        if pieces is None:
            return CallEnd(iteration, duration, model, **fields)
        return CallEnd(
            iteration, duration, model, **fields, pieces=pieces.count, first_text=pieces.first
        )

    def overran(self) -> str:
        """The turn's deadline passed in real time: a provider or a toolset ignored its
        timeout, or a write of the turn waited for a store out of reach. A call still in
        flight ends as an error (the provider was unavailable); what happened, for the
        turn's report."""
        why = "the deadline passed during a model call that ignored its timeout"
        if self.log.unanswered(ProviderUnavailable(why)):
            return why
        return (
            "the deadline passed during tools that ignored their timeout, or while a write"
            " of the turn waited for the store"
        )

    def close(self) -> None:
        """The turn is over: stop waiting for a stop; the last call's record is built."""
        self.race.close()
        self.log.close()


class _Pieces:
    """A call's `on_text`, counting the pieces and timing the first (in real time, not on
    the turn's clock: the trace keeps that clock, and a replay gives it back). The kept
    secrets are hidden in what it passes on, one split across pieces too (`SecretStream`)."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.count = 0
        self.first: float | None = None
        self.started = time.monotonic()
        self.secrets = SecretStream()

    def __call__(self, piece: str) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.started
        self.count += 1
        passed = self.secrets.feed(piece)
        if passed:
            self.on_text(passed)

    def end(self) -> None:
        """The call answered: pass on what was held back."""
        held = self.secrets.end()
        if held:
            self.on_text(held)


def secrets_hidden(reply: Reply) -> Reply:
    """The reply with the process's kept secrets (API keys, URLs' user-info, as given and as
    HTTP Basic encodes it) replaced in its message, text, tool inputs and raw body, before
    anything of it is stored, published, traced or printed (docs/design.md §10). Only the
    exact strings change: every block and field stays as the model gave it."""
    message = hide_secrets(reply.message)
    if message is reply.message and hide_secrets(reply.raw) is reply.raw:
        return reply
    uses = tuple(ToolUse(u.id, u.name, hide_secrets(u.input)) for u in reply.tool_uses)
    return replace(
        reply,
        message=message,
        text=hide_secrets(reply.text),
        tool_uses=uses,
        raw=hide_secrets(reply.raw),
    )


def provider_error(e: Exception, timeout: float) -> ProviderError:
    """What a model call's failure means: the provider's own error, the per-call timeout
    (the provider is unavailable), or anything else (it failed)."""
    if isinstance(e, ProviderError):
        return e
    if isinstance(e, TimeoutError):
        return ProviderUnavailable(timed_out(timeout))
    return ProviderFailed(f"{type(e).__name__}: {e}")
