"""The live line: what `turnkeeper run` shows on a terminal while a turn runs.

One line, rewritten in place: the caption of what just happened, in the
reader's language ("Read a file · 2.4 s"), and the elapsed time, ticking
while the model thinks. When the turn ends the line is cleared and the
outcome is printed after the transcript ("Finished · 3.1 s"). `run` uses it
only when stdout is a terminal and `--json` is not given: piped output holds
only the result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TextIO

from .. import i18n
from ..observe.report import Reporter
from ..store.records import Checkpoint
from ..turn.hooks import LocalHooks

CLEAR = "\r\x1b[K"
TICK = 0.2
"""Seconds between redraws of the elapsed time."""


class LiveLine:
    """The CLI's one live line while a turn runs: the activity caption, in the reader's
    language, and the seconds elapsed."""

    def __init__(
        self, stream: TextIO, locale: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = stream
        self.locale = locale
        self.clock = clock
        self.started = clock()
        self.caption = i18n.resolve("ui.working", locale) or ""

    def elapsed(self) -> float:
        """Seconds since the line was made."""
        return self.clock() - self.started

    def update(self, key: str | None) -> None:
        """Show the caption of activity `key` (the working notice without one)."""
        caption = i18n.resolve(key, self.locale) if key else None
        self.caption = caption or i18n.resolve("ui.working", self.locale) or ""
        self.draw()

    def draw(self) -> None:
        """Redraw the line in place."""
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
