"""The calls compaction makes in a turn: a summary, and a refused call sent once more.

`compact()` makes the turn's next request smaller (`context.Window.compact`), asking
the model for a summary through the turn's call room, so the summary call is timed,
raced against a stop, priced, watched and logged like any other (its decision is
`compaction`, its caption `activity.compacted`); its usage is the turn's. What was
compacted goes on the next call's record, the caption into the published state, and
the new record into the turn's next write.

`sent()` is one model call of the loop. A refusal for size (`ContextTooLong`) or a
reply that stopped on `model_context_window_exceeded` is compacted harder and the same
call is sent once more: a new request inside the turn, not a retried turn. Refused
again, the refusal ends the turn `context_exceeded`.

The calls compaction makes are model calls like the loop's: each summary call is made
only while the day's limit has room (`hooks.limit_reached()`), its usage recorded at
once (a billed cut reply's too, before its compaction), so the check before the next
one counts it; compaction done, the call it was for is checked again. A limit used up
meanwhile raises `LimitReached`, and the loop ends the turn `limit_reached`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from ..budget import Budget
from ..errors import ContextTooLong, ProviderError, ProviderUnavailable
from ..outcomes import Stop
from ..providers import Provider
from ..store.records import EventType
from ..usage import Usage
from ..wire import Message, ToolSpec
from .call_log import CallLog
from .clock import TurnClock
from .compaction import DEFAULT, Compaction
from .events import Emitter
from .hooks import Hooks
from .model_call import CallRoom, Priced

__all__ = ["DEFAULT", "Compaction"]  # the loop's names of compaction's settings, from here

COMPACTED = "activity.compacted"
"""The caption of a turn that compacted: "Summarised the earlier conversation"."""


class Compacting(Protocol):
    """What of the turn compaction reads and changes (the loop's `_Turn`)."""

    history: list[Message]
    room: CallRoom
    provider: Provider
    usage: Usage
    log: CallLog
    budget: Budget
    deadline: float
    clock: TurnClock
    activity: str | None
    events: Emitter
    hooks: Hooks

    async def iteration_done(self) -> None:
        """Publish the state and write what changed (the new record with it)."""
        ...


class LimitReached(Exception):
    """The day's limit was used up while compacting (the message names its key): the call
    compaction was for is not made."""


async def _compacted_first(turn: Compacting, timeout: float) -> float:
    """The request would pass the trigger: compact it before it is sent. The call's timeout,
    less what the summary took (none left: the turn's time is up)."""
    if not await compact(turn):
        return timeout
    left = turn.budget.timeout_for_call(turn.deadline - turn.clock.now())
    if left is None:
        out_of_time = ProviderUnavailable("too little time left for the call after compacting")
        out_of_time.wait = 0.0  # the turn ends `time_limit` (errors.py)
        raise out_of_time
    return min(timeout, left)


async def compact(turn: Compacting, *, forced: bool = False) -> bool:
    """Compact the turn's next request; whether anything was (then the turn is told).
    `LimitReached` if the day's limit is used up for the call it was compacted for."""
    shrunk = await turn.room.window.compact(turn.history, partial(_summary, turn), forced=forced)
    if shrunk is None:
        _paid_for(turn)
        return False
    turn.log.compacted(str(shrunk))
    told = getattr(turn.room.watch, "compacted", None)  # a watch written before it has none
    if told is not None:
        told(shrunk.summarised, shrunk.cleared)
    if turn.activity != COMPACTED:
        turn.activity = COMPACTED
        turn.events.emit(EventType.ACTIVITY, {"key": COMPACTED})
    await turn.iteration_done()
    _paid_for(turn)
    return True


def _paid_for(turn: Compacting) -> None:
    """Before the call compaction was made for: the day's limit, as the turn's last write
    read the day, with what the turn recorded since."""
    key = turn.hooks.limit_reached()
    if key is not None:
        raise LimitReached(f"{key} is used up")


async def _summary(turn: Compacting, asked: str) -> str | None:
    """One model call for a summary; None when no time is left for it, the day's limit is
    used up (what was summarised is kept; the call it was for is not made), it failed
    (the call that follows is sent without it: refused, it ends the turn), a stop
    aborted it (the next call sees the stop), or it came back empty."""
    timeout = turn.budget.timeout_for_call(turn.deadline - turn.clock.now())
    if timeout is None or turn.hooks.limit_reached() is not None:
        return None
    settings = turn.room.window.settings
    via = summariser(turn.provider, None if settings is None else settings.model)
    try:
        called = await turn.room.call([via.user_message(asked)], (), timeout, via=via)
    except ProviderError:  # recorded with the call; the request goes on uncompacted
        return None
    if called is None:
        return None
    _billed(turn, called)
    await turn.hooks.record_usage(turn.usage)
    turn.log.decided("compaction", COMPACTED)
    return called.reply.text.strip() or None


def _billed(turn: Compacting, called: Priced) -> None:
    """A call that is not one of the loop's iterations, counted in the turn's usage."""
    turn.usage.add(called.usage)
    turn.room.window.calls += 1


def served(provider: Provider, settings: Compaction | None) -> Provider:
    """The provider a turn calls: with `strategy="server"`, one that asks the API to compact
    at `at` x the window (an adapter's `compacting_on_server`: Anthropic's context
    management), where the provider has it; else `provider` itself."""
    if settings is None or settings.strategy != "server":
        return provider
    on_server: Callable[[int | None], Provider] | None = getattr(
        provider, "compacting_on_server", None
    )
    if on_server is None:
        return provider
    window = settings.window_for(provider.describe().get("model"))
    return on_server(None if window is None else int(settings.at * window))


def summariser(provider: Provider, model: str | None) -> Provider:
    """The provider that writes summaries: the turn's, asked without its instructions and
    server tools (an SDK adapter's `summarising`), with `model` if one is named."""
    summarising: Callable[[str | None], Provider] | None = getattr(provider, "summarising", None)
    return provider if summarising is None else summarising(model)


async def sent(
    turn: Compacting,
    tools: Sequence[ToolSpec],
    timeout: float,
    on_text: Callable[[str], None] | None,
) -> Priced | None:
    """The loop's model call, of the request built from the compaction record (compacted
    first if it would pass the trigger); refused for its size, compacted and sent once
    more. The window learns what the call that answered sent. (One coroutine on the
    common path: this runs on every model call.)"""
    window, record = turn.room.window, turn.room.window.record
    # `over` is only ever true with a trigger: a window known, none on the server's side
    trigger = window.on and window.size is not None and not window.on_server
    if trigger and window.over(turn.history, tools):
        timeout = await _compacted_first(turn, timeout)
        record = window.record
    # the request is the history itself until the conversation is compacted (`request`)
    request = window.request(turn.history) if record.reach or record.cleared else turn.history
    try:
        called = await turn.room.call(request, tools, timeout, on_text)
    except ContextTooLong as refused:
        if not window.on:
            raise
        window.refused(refused.window)
        if not await compact(turn, forced=True):
            raise
        return await _again(turn, tools, on_text, _Again(refused, None))
    if called is None:
        return None
    if called.reply.stop is Stop.CONTEXT_EXCEEDED and window.on:
        turn.log.decided("compaction", None)
        _billed(turn, called)  # and recorded, so that compaction's calls are checked with it
        await turn.hooks.record_usage(turn.usage)
        counted = Priced(called.reply, Usage())  # the loop adds nothing more for it
        if await compact(turn, forced=True):
            return await _again(turn, tools, on_text, _Again(None, counted))
        return counted
    if trigger:  # the estimate it makes is only ever read against a trigger
        window.seen(called.usage, len(turn.history) + called.reply.keep, called.reply.context)
    return called


async def _again(
    turn: Compacting,
    tools: Sequence[ToolSpec],
    on_text: Callable[[str], None] | None,
    again: _Again,
) -> Priced | None:
    """The request, compacted after a refusal for its size, sent once more (if time is
    left: else the refusal stands)."""
    left = turn.budget.timeout_for_call(turn.deadline - turn.clock.now())
    if left is None:
        return again.give_up()
    request = turn.room.window.request(turn.history)
    called = await turn.room.call(request, tools, left, on_text)
    if called is not None:
        length = len(turn.history) + called.reply.keep
        turn.room.window.seen(called.usage, length, called.reply.context)
    return called


class _Again:
    """A call refused for its size after which the request was compacted: send it again."""

    def __init__(self, refused: ContextTooLong | None, called: Priced | None) -> None:
        self.refused = refused
        self.called = called
        """The cut reply, its usage already the turn's (`_billed`)."""

    def give_up(self) -> Priced | None:
        """No time is left to send it again: the refusal stands."""
        if self.refused is not None:
            raise self.refused
        return self.called
