"""Reports: how turns ended, when someone should see it.

A cap that binds, a truncation, a failure: each reported row of the stop-reason
table (its `outcomes.Ending` says at which level, and in what words) goes
through one `report()`, once, with the turn and conversation ids,
the outcome, the stop reason, the iteration, the elapsed time and the usage
(cost included). `report()` writes one structured log record to the
`turnkeeper.report` logger and, when `sentry-sdk` is installed and initialised,
sends warnings and errors to Sentry, its text redacted first (`credentials`:
whatever made the message, a configured secret in it goes nowhere). Finished
turns are never reported;
refusals are reported at info (and not sent to Sentry). An application can
pass its own reporter instead.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..credentials import redact_text, redact_value
from ..outcomes import Outcome
from ..usage import Usage

if TYPE_CHECKING:
    from sentry_sdk._types import Event

logger = logging.getLogger("turnkeeper.report")

OUTCOMES = frozenset(o.value for o in Outcome)


@dataclass(frozen=True, slots=True)
class Report:
    """One reported ending or incident of a turn: what a reporter (`log_report` by default, or the
    application's own) receives, and what goes to the `turnkeeper.report` log and to Sentry.

    `event` is the outcome (`truncated`, `iteration_limit`, `failed`, …) or an incident that
    does not end the turn (`tool_error`); `level` is the logging level it is reported at;
    `usage` and `elapsed` say what the turn had cost and how long it had run when it happened.
    """

    turn_id: str
    iteration: int
    event: str
    """The outcome or incident: `truncated`, `iteration_limit`, `tool_error`, …"""
    message: str
    level: int = logging.WARNING
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    details: dict[str, Any] = field(default_factory=dict)
    conversation_id: str | None = None
    elapsed: float | None = None
    """Seconds since the turn started, when known."""

    @property
    def outcome(self) -> str | None:
        """The turn's outcome when the report is of its ending, else None (an incident)."""
        return self.event if self.event in OUTCOMES else None

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON: the fields the log record carries as `extra`, Sentry as context."""
        return {
            "turn_id": self.turn_id,
            "conversation_id": self.conversation_id,
            "outcome": self.outcome,
            "event": self.event,
            "message": self.message,
            "level": logging.getLevelName(self.level),
            "stop_reason": self.stop_reason,
            "iteration": self.iteration,
            "elapsed": None if self.elapsed is None else round(self.elapsed, 3),
            "usage": self.usage.as_dict(),
            "cost_usd": self.usage.cost_usd,
            "details": self.details,
        }


Reporter = Callable[[Report], None]


def report(r: Report) -> None:
    """The default reporter: one log record with the report's fields as `extra`
    (`record.turnkeeper`), and the report in Sentry when Sentry is set up; both redacted."""
    r = redacted(r)
    logger.log(
        r.level,
        "turn %s iteration %d: %s: %s",
        r.turn_id,
        r.iteration,
        r.event,
        r.message,
        extra={"turnkeeper": r.as_dict()},
    )
    if r.level >= logging.WARNING:
        to_sentry(r)


log_report = report
"""The default reporter, by the name `Hooks` and the job take it."""


def redacted(r: Report) -> Report:
    """The report with its message and details redacted (`credentials.redact_text`)."""
    return dataclasses.replace(r, message=redact_text(r.message), details=redact_value(r.details))


def to_sentry(r: Report) -> bool:
    """Send the report to Sentry if `sentry-sdk` is installed and initialised; whether it was."""
    try:
        import sentry_sdk
        from sentry_sdk.integrations.logging import ignore_logger
    except ImportError:
        return False
    if not sentry_sdk.get_client().is_active():
        return False
    ignore_logger(logger.name)  # sent here, with its fields: not a second time from the log
    level: Literal["error", "warning"] = "error" if r.level >= logging.ERROR else "warning"
    with sentry_sdk.new_scope() as scope:
        scope.set_tag("turnkeeper.event", r.event)
        scope.set_tag("turnkeeper.outcome", r.outcome or "")
        scope.set_context("turnkeeper", r.as_dict())
        scope.fingerprint = ["turnkeeper", r.event, r.stop_reason or ""]
        # No stack of its own: sentry-sdk 3 attaches one to every message by default, with
        # the callers' local variables, which hold the text before its redaction.
        message: Event = {
            "message": f"turn {r.event}: {r.message}",
            "level": level,
            "threads": {"values": []},
        }
        sentry_sdk.capture_event(message)
    return True
