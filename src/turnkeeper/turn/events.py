"""The turn's events on their way to the hooks: what the loop emits, coalesced and in order.

The loop emits each event here (`emit`); the provider's `on_text` seam hands
each piece of answer text to `text`. Events wait in `pending` for the next
write the turn makes anyway (a checkpoint, the final write, the wait:
`settle()` hands them over, in order, for that write's transaction). Text
deltas do not wait for one: the first is written at once (`hooks.events`),
then at most one write per `every` seconds (a timer flushes what accumulated,
the deltas of one message joined into one). A flush in flight is awaited
before anything else is handed over, so the numbering keeps the order.

Per model call, the text streamed into the next bot bubble is settled once:
`complete()` when the reply's text is shown (its part not streamed yet, if
any, follows as a last delta: a provider that does not stream still fills
the log), or `retract()` when it never stands (a `max_tokens` or `refusal`
stop, a failed or stopped call), with the key of the notice shown instead.
Whitespace is held until some text follows it, so a reply of whitespace alone,
never shown, streams nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from ..outcomes import Outcome, ending
from ..state import Approval, Bubble, PublishedState
from ..store import Store
from ..store.records import EventBody, EventType, NewEvent, TurnEvent
from ..wire import ToolResult, ToolUse
from .activity import caption

logger = logging.getLogger("turnkeeper.loop")

EVERY = 0.05
"""Seconds between two writes of a turn's text deltas, at least."""
OUTPUT_CUT = 4000
"""Characters of a tool's result a `tool.ended` event holds at most."""


class Writes(Protocol):
    """Where the emitter writes what cannot wait for the turn's next write (the hooks)."""

    async def events(self, batch: Sequence[NewEvent]) -> None: ...


class Streamed:
    """How much text a call streamed, kept as its length and its last characters rather
    than the text itself: an answer may be megabytes long (`max_response`), and the reply
    holds it already."""

    TAIL = 64

    def __init__(self) -> None:
        self.length = 0
        self.tail = ""

    def add(self, text: str) -> None:
        self.length += len(text)
        self.tail = (self.tail + text[-self.TAIL :])[-self.TAIL :]

    def begins(self, text: str) -> bool:
        """Whether `text` begins with what was streamed (its length and last characters)."""
        return len(text) >= self.length and text[: self.length].endswith(self.tail)


class Emitter:
    """One turn's events on their way to `hooks`: pending until the turn's next write,
    text deltas coalesced into at most one write of their own per `every` seconds."""

    def __init__(
        self,
        hooks: Writes,
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write: Callable[[Sequence[NewEvent]], Awaitable[None]] | None = getattr(
            hooks, "events", None
        )
        """The hooks' own write of events (hooks written before the log have none: their
        events then wait for the turn's next write)."""
        self.every = every
        self.clock = clock
        self.pending: list[NewEvent] = []
        self.deltas = 0
        """Text deltas written so far (after coalescing), over the turn's run."""
        self.first_delta: float | None = None
        """When the first piece of text arrived (the clock's reading), if one did."""
        self.message: str | None = None
        """The bubble the text of the call in flight streams into."""
        self._streamed = Streamed()
        """How much the call in flight streamed (whitespace not yet emitted apart)."""
        self._held = ""
        """Leading whitespace of the call in flight, not emitted until text follows it."""
        self._unwritten = 0
        """Text deltas in `pending` (a counter: nothing rescans the batch it goes out in)."""
        self._last = -math.inf
        self._flushing: asyncio.Task[None] | None = None
        self._bubbles: tuple[Bubble, ...] | None = None
        self._next = "m1"
        """The bubbles of the state the last call began in, and the id of the next one."""
        self._timer: asyncio.TimerHandle | None = None

    # ---- emitting -------------------------------------------------------

    def emit(self, kind: EventType, body: EventBody) -> None:
        """An event, to be written with the turn's next write (after every delta before it)."""
        self.pending.append((kind, body))

    def begin(self, state: PublishedState) -> None:
        """A model call starts: its text streams into the bubble `state`'s next bot text
        becomes (`next_bubble`, worked out here: this runs on every model call)."""
        if state.messages is not self._bubbles:  # else the same bubbles: the same next one
            last = int(state.messages[-1].id[1:]) if state.messages else 0
            self._bubbles, self._next = state.messages, f"m{last + 1}"
        self.message, self._held = self._next, ""
        if self._streamed.length:  # the last call's count starts again (none: nothing to do)
            self._streamed = Streamed()

    def text(self, piece: str) -> None:
        """The provider's `on_text`: a piece of answer text, as it arrives."""
        if self.message is None or not piece:
            return
        if self.first_delta is None:
            self.first_delta = self.clock()
        if not self._streamed.length and not (self._held + piece).strip():
            self._held += piece
            return
        self._delta(self._held + piece)
        self._held = ""

    def complete(self, text: str) -> None:
        """The call's reply is shown with `text`: stream what of it has not been."""
        streamed = self._streamed
        if streamed.begins(text) and len(text) > streamed.length:
            self._delta(text[streamed.length :], write=False)  # the turn's next write takes it
        elif not streamed.begins(text):
            logger.warning("the streamed text is not the start of the reply's text")
        self.message = None

    def captioned(
        self, was: str | None, steps: Sequence[str], table: Mapping[str, str]
    ) -> str | None:
        """The caption after `steps`, which ran (`table`'s key of the last, or `was` if
        none): an event when it changed to one."""
        activity = caption(steps, was, table)
        if activity is not None and activity != was:
            self.emit(EventType.ACTIVITY, {"key": activity})
        return activity

    def replied(self, text: str, outcome: Outcome | None) -> None:
        """A reply came, with `outcome` (None: the turn goes on): its text streamed stands
        if it is shown, else it is retracted."""
        if outcome in (None, Outcome.FINISHED) and text.strip():
            self.complete(text)
        elif self.message is not None and self._streamed.length:
            self.retract((ending(outcome).key or "") if outcome is not None else "")
        else:  # nothing streamed to withdraw (as `retract` would find)
            self.message = None

    def moved(self, before: PublishedState, after: PublishedState, *emitted: NewEvent) -> None:
        """The state moved from `before` to `after`: the cards it shows, then `emitted`."""
        if len(after.messages) > len(before.messages):  # else no bubble, so no card, is new
            self.pending.extend(cards(before, after))
        self.pending.extend(emitted)

    def tools_started(self, uses: Sequence[ToolUse]) -> None:
        """A round's uses start: their `tool.started` events."""
        for u in uses:
            body = {"tool_use_id": u.id, "tool": u.name, "input": u.input}
            self.pending.append((EventType.TOOL_STARTED, body))

    def tools_ended(self, results: Sequence[ToolResult]) -> None:
        """A round's results: their `tool.ended` events, the text cut to `OUTPUT_CUT`."""
        for r in results:
            body = {"tool_use_id": r.tool_use_id, "is_error": r.is_error, "output": r.content}
            if len(r.content) > OUTPUT_CUT:
                body["output"] = tool_output(r.content)
            self.pending.append((EventType.TOOL_ENDED, body))

    def retract(self, key: str) -> None:
        """The call's text never stands: withdraw what it streamed, if anything."""
        if self.message is not None and self._streamed.length:
            self.emit(EventType.TEXT_RETRACTED, {"message": self.message, "key": key})
        self.message = None

    def _delta(self, text: str, *, write: bool = True) -> None:
        assert self.message is not None
        self._streamed.add(text)
        last = self.pending[-1] if self.pending else None
        if last is not None and last[0] is EventType.TEXT_DELTA:
            joined = last[1]["delta"] + text
            self.pending[-1] = (EventType.TEXT_DELTA, {"delta": joined, "message": self.message})
        else:
            self.pending.append((EventType.TEXT_DELTA, {"delta": text, "message": self.message}))
            self._unwritten += 1
        if write:
            self._schedule()

    # ---- writing --------------------------------------------------------

    def _schedule(self) -> None:
        if self._flushing is not None or self._timer is not None or self.write is None:
            return  # the flush in flight, or the timer, takes these too (or the next write)
        wait = self._last + self.every - self.clock()
        if wait <= 0:
            self._start()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._start)

    def _start(self) -> None:
        self._timer = None
        if self._flushing is None and self.pending:
            self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        batch, self.pending = self.pending, []
        deltas, self._unwritten = self._unwritten, 0
        try:
            assert self.write is not None, "scheduled only for hooks that write events"
            await self.write(batch)
            self.deltas += deltas
        except Exception as e:  # the turn's next write carries them instead
            logger.warning("writing a turn's text deltas failed; the next write takes them: %s", e)
            self.pending[:0] = batch
            self._unwritten += deltas
        finally:
            self._last = self.clock()
            self._flushing = None
        if self._unwritten:
            self._schedule()

    def _take(self) -> list[NewEvent]:
        """What is pending, handed over: the deltas in it count as written."""
        batch, self.pending = self.pending, []
        self.deltas += self._unwritten
        self._unwritten = 0
        return batch

    async def settle(self) -> list[NewEvent]:
        """Every event not written yet, in order, for the write the turn makes now (after
        the deltas' write in flight, if any, has ended)."""
        if self._timer is not None or self._flushing is not None:
            await self._quiet()
        batch, self.pending = self.pending, []  # `_take`, written out: once per write
        if self._unwritten:
            self.deltas += self._unwritten
            self._unwritten = 0
        return batch

    async def _quiet(self) -> None:
        """No timer armed, no flush in flight: what they would write goes with the caller's."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._flushing is not None:
            await asyncio.shield(self._flushing)
        if self._timer is not None:  # set as that flush ended: what it would write goes now
            self._timer.cancel()
            self._timer = None

    def write_now(self) -> Awaitable[None] | None:
        """The write of what is pending in a write of its own (a round of tools starts), for
        the caller to await at once; None: nothing to write, or no write of the hooks' own
        (the turn's next write takes it). Not a coroutine itself: it runs every round."""
        if self.write is None:
            return None
        if self._timer is not None or self._flushing is not None:
            return self._write_quietly()
        if not self.pending:
            return None
        batch, self.pending = self.pending, []  # `_take`, written out: once per round
        if self._unwritten:
            self.deltas += self._unwritten
            self._unwritten = 0
        return self.write(batch)

    async def _write_quietly(self) -> None:
        """`write_now`, once the timer and the flush in flight are out of the way."""
        await self._quiet()
        if self.pending and self.write is not None:
            await self.write(self._take())


def tool_output(text: str) -> str:
    """A tool result's text as a `tool.ended` event holds it: cut to `OUTPUT_CUT`."""
    return text if len(text) <= OUTPUT_CUT else text[:OUTPUT_CUT]


def cards(before: PublishedState, after: PublishedState) -> list[NewEvent]:
    """A `card` event for each bubble with a card that `after` holds and `before` did not."""
    return [
        (EventType.CARD, {"card": m.card.to_json(), "message": m.id})
        for m in after.messages[len(before.messages) :]
        if m.card is not None
    ]


def waiting(approvals: Sequence[Approval]) -> list[NewEvent]:
    """The events of a run that stops to wait for a person."""
    asked = {"approvals": [a.to_json() for a in approvals]}
    return [(EventType.APPROVAL_REQUESTED, asked), (EventType.TURN_WAITING, {})]


def ended(state: PublishedState) -> NewEvent:
    """The `turn.ended` event of a turn's final state."""
    body = {
        "status": str(state.status),
        "outcome": str(state.status),
        "usage": state.usage.as_dict(),
    }
    return (EventType.TURN_ENDED, body)


def unsettled(
    streamed: Sequence[TurnEvent], shown: PublishedState, key: str | None
) -> list[NewEvent]:
    """A `text.retracted` for text a turn streamed and never showed before it was taken
    over: a bubble its last deltas went into (`streamed`: its log's text deltas and
    retractions, in order) that its state `shown` does not hold."""
    last: dict[str, str] = {}
    for event in streamed:
        message = event.body.get("message")
        if event.type is EventType.TEXT_DELTA and isinstance(message, str):
            last[message] = "delta"
        elif event.type is EventType.TEXT_RETRACTED and isinstance(message, str):
            last.pop(message, None)
    held = {m.id for m in shown.messages}
    return [
        (EventType.TEXT_RETRACTED, {"message": m, "key": key or ""}) for m in last if m not in held
    ]


async def streamed(store: Store, turn_id: str) -> list[TurnEvent]:
    """The turn's text deltas and retractions, in order, read page by page (what
    `end_turn` reads in its transaction, for an exit made outside one)."""
    found: list[TurnEvent] = []
    after = 0
    while page := await store.events_after(turn_id, after):
        found += [e for e in page if e.type in (EventType.TEXT_DELTA, EventType.TEXT_RETRACTED)]
        after = page[-1].seq
    return found
