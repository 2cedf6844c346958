"""What the loop tells the world, and asks of it, while a turn runs.

The loop knows nothing about storage, HTTP or queues; it calls these hooks in a
fixed order. Per iteration: `record_usage` as soon as a model call returns,
then `checkpoint`, then `publish`. At the end, exactly once: `clear`, then the
final `publish` (with `done: true`), then `record_usage` with the totals.
`should_stop` is asked before every model call; `report` gets every reported exit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .report import Report, Reporter, log_report
from .usage import Usage
from .wire import Message


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Enough to recover a turn that dies: its history, progress, usage and caption."""

    turn_id: str
    iteration: int
    history: Sequence[Message]
    """The whole history so far (the loop's own list: copy what you keep)."""
    appended: Sequence[Message]
    """The messages added to the history since the previous checkpoint."""
    state: dict[str, Any]
    """The published state as of this checkpoint."""


class Hooks(Protocol):
    async def should_stop(self) -> bool: ...

    async def record_usage(self, usage: Usage) -> None: ...

    async def checkpoint(self, checkpoint: Checkpoint) -> None: ...

    async def publish(self, state: dict[str, Any]) -> None: ...

    async def clear(self) -> None: ...

    def report(self, report: Report) -> None: ...


class LocalHooks:
    """Hooks that keep everything in memory: for the CLI, scripts and tests."""

    def __init__(self, reporter: Reporter = log_report) -> None:
        self.reporter = reporter
        self.published: list[dict[str, Any]] = []
        self.checkpoints: list[Checkpoint] = []
        self.reports: list[Report] = []
        self.usage = Usage()
        self.cleared = 0
        self.stop_requested = False

    def stop(self) -> None:
        """Ask the turn to stop before its next model call."""
        self.stop_requested = True

    @property
    def state(self) -> dict[str, Any] | None:
        """The last published state."""
        return self.published[-1] if self.published else None

    async def should_stop(self) -> bool:
        return self.stop_requested

    async def record_usage(self, usage: Usage) -> None:
        self.usage = usage.copy()

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        self.checkpoints.append(checkpoint)

    async def publish(self, state: dict[str, Any]) -> None:
        self.published.append(state)

    async def clear(self) -> None:
        self.cleared += 1

    def report(self, report: Report) -> None:
        self.reports.append(report)
        self.reporter(report)
