"""The live line: what `turnkeeper run` shows on a terminal while a turn runs.

One line, rewritten in place: the caption of what just happened, in the
reader's language ("Read a file · 2.4 s"), and the elapsed time, ticking
while the model thinks. When the turn ends the line is cleared and the
outcome is printed after the transcript ("Finished · 3.1 s"). The answer's text
is printed as it arrives (the turn's `text.delta` events): the line gives way
to it, and the transcript at the end leaves out what was printed so. `run` uses it
only when stdout is a terminal and `--json` is not given: piped output holds
only the result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TextIO

from .. import i18n
from ..assistant import Assistant
from ..observe.report import Reporter
from ..store.records import Checkpoint, EventType, NewEvent
from ..turn.hooks import LocalHooks

CLEAR = "\r\x1b[K"
TICK = 0.2
"""Seconds between redraws of the elapsed time."""


class LiveLine:
    """The CLI's one live line while a turn runs: the activity caption, in the reader's
    language, and the seconds elapsed."""

    def __init__(
        self,
        stream: TextIO,
        locale: str,
        clock: Callable[[], float] = time.monotonic,
        *,
        name: str = Assistant.name,
    ) -> None:
        self.stream = stream
        self.locale = locale
        self.name = name
        """The assistant's name, before its text (as the transcript labels its lines)."""
        self.clock = clock
        self.started = clock()
        self.caption = i18n.resolve("ui.working", locale) or ""
        self.writing: str | None = None
        """The bubble whose text is being printed as it arrives (the line waits meanwhile)."""
        self.streamed: set[str] = set()
        """Bubbles whose text was printed as it arrived, and stands (not retracted)."""
        self.asked: str | None = None
        """The question, printed before the first text that arrives."""
        self.asked_shown = False

    def text(self, message: str, delta: str) -> None:
        """Print a piece of the answer's text as it arrives, after the assistant's name."""
        if self.writing != message:
            self.text_done()
            if self.asked is not None and not self.asked_shown:
                you = i18n.resolve("ui.you", self.locale)
                self.stream.write(f"{CLEAR}{you}: {self.asked}\n")
                self.asked_shown = True
            self.stream.write(f"{CLEAR}{self.name}: ")
            self.writing = message
            self.streamed.add(message)
        self.stream.write(delta)
        self.stream.flush()

    def text_done(self, retracted: str | None = None) -> None:
        """The text printed as it arrived ends (withdrawn, if `retracted` names it)."""
        self.streamed.discard(retracted or "")
        if self.writing is not None:
            self.stream.write("\n")
            self.stream.flush()
            self.writing = None

    def elapsed(self) -> float:
        """Seconds since the line was made."""
        return self.clock() - self.started

    def update(self, key: str | None) -> None:
        """Show the caption of activity `key` (the working notice without one)."""
        caption = i18n.resolve(key, self.locale) if key else None
        self.caption = caption or i18n.resolve("ui.working", self.locale) or ""
        self.draw()

    def draw(self) -> None:
        """Redraw the line in place (not while text is printed as it arrives)."""
        if self.writing is not None:
            return
        self.stream.write(f"{CLEAR}{self.caption} · {self.elapsed():.1f} s")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the line."""
        self.stream.write(CLEAR)
        self.stream.flush()

    def outcome(self, status: str) -> str:
        """The outcome line, in the reader's language."""
        name = i18n.resolve(f"cli.outcome.{status}", self.locale) or status
        return f"{name} · {self.elapsed():.1f} s"

    @asynccontextmanager
    async def ticking(self) -> AsyncIterator[None]:
        """Redraw the elapsed time every `TICK` seconds while the body runs; clear at the end."""

        async def tick() -> None:
            while True:
                self.draw()
                await asyncio.sleep(TICK)

        task = asyncio.create_task(tick(), name="live line")
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            self.clear()


class LiveHooks(LocalHooks):
    """`LocalHooks` that also show every published state on a live line."""

    def __init__(self, line: LiveLine, reporter: Reporter) -> None:
        super().__init__(reporter=reporter)
        self.line = line

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        await super().checkpoint(checkpoint)
        self.line.update(checkpoint.state.activity)

    def keep(self, batch: Sequence[NewEvent]) -> None:
        super().keep(batch)
        for kind, body in batch:
            if kind is EventType.TEXT_DELTA:
                self.line.text(body["message"], body["delta"])
            elif kind is EventType.TEXT_RETRACTED:
                self.line.text_done(retracted=body["message"])
            else:
                self.line.text_done()
