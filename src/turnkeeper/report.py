"""Reports: the turn's exits that someone should see in the logs.

A cap that binds, a truncation, a failure: each is reported once with the turn,
the iteration, the stop reason and the usage so far. `log_report` writes them
to the `turnkeeper` logger; an application passes its own reporter instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .usage import Usage

logger = logging.getLogger("turnkeeper")


@dataclass(frozen=True, slots=True)
class Report:
    turn_id: str
    iteration: int
    event: str
    """The outcome or incident: `truncated`, `iteration_limit`, `tool_error`, …"""
    message: str
    level: int = logging.WARNING
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "iteration": self.iteration,
            "event": self.event,
            "message": self.message,
            "level": logging.getLevelName(self.level),
            "stop_reason": self.stop_reason,
            "usage": self.usage.as_dict(),
            "details": self.details,
        }


Reporter = Callable[[Report], None]


def log_report(report: Report) -> None:
    """The default reporter: one log record with the report's fields as `extra`."""
    logger.log(
        report.level,
        "turn %s iteration %d: %s: %s",
        report.turn_id,
        report.iteration,
        report.event,
        report.message,
        extra={"turnkeeper": report.as_dict()},
    )
