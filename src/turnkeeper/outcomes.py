"""The closed sets the loop matches on: what a response asks for, how a turn ends.

How a turn ends is one value, an `Ending`, built by one function, `ending()`:
its outcome, the notice the reader sees, whether it is an error, whether the
reader stopped it, and how it is reported. The loop ends a turn with one, the
published state shows it, the job and the sweeper finalise with one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, assert_never

if TYPE_CHECKING:
    from .wire import Json, Reply

from .i18n import counted


class Stop(StrEnum):
    """Why a model call stopped, mapped once by each provider adapter."""

    TOOL_USE = "tool_use"
    PAUSE_TURN = "pause_turn"
    COMPACTION = "compaction"
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    CONTEXT_EXCEEDED = "model_context_window_exceeded"
    OTHER = "other"


class Outcome(StrEnum):
    """How a turn ended; also the terminal values of the published `status`."""

    FINISHED = "finished"
    TRUNCATED = "truncated"
    REFUSED = "refused"
    CONTEXT_EXCEEDED = "context_exceeded"
    ITERATION_LIMIT = "iteration_limit"
    TIME_LIMIT = "time_limit"
    STOPPED = "stopped"
    FAILED = "failed"
    LIMIT_REACHED = "limit_reached"
    """The user's (or the assistant's) day of tokens or cost was used up before a call."""


class Status(StrEnum):
    """The non-terminal values of the published `status`."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    """For a person's decision on a tool call (approvals.py); not working, not done."""


TurnStatus = Status | Outcome
"""The published `status`: queued, running, waiting (for a person), or how the turn
ended. The state (`PublishedState.status`) and the OpenAPI document (`State.status`) both
use this."""

STATUSES: Mapping[str, TurnStatus] = {s.value: s for s in (*Status, *Outcome)}
"""Each status by its value, as the store and the API write it."""


@dataclass(frozen=True, slots=True)
class Ending:
    """How a turn ended, decided once by `ending()`: everyone who shows, publishes, counts
    or reports the end of a turn reads it here and never works it out again."""

    outcome: Outcome
    key: str | None
    """The notice's message key the reader sees (None: a finished turn shows its answer)."""
    has_error: bool
    """The published `has_error`: the turn did not do what was asked, and should have."""
    stopped: bool
    """The reader asked for it to stop: not an error (its notice is not shown as one)."""
    level: int | None
    """The level it is reported at (None: not reported)."""
    why: str
    """What its report says happened."""

    @property
    def reported_at(self) -> int:
        """The level a report of it has when it is reported anyway (a turn finalised from
        its checkpoint, a waiting turn stopped): its own, else INFO."""
        return logging.INFO if self.level is None else self.level

    def says(self, iterations: int, detail: str = "") -> str:
        """What its report says: what happened, after how many iterations, and `detail`."""
        return f"{self.why} after {counted(iterations, 'iteration')}" + (
            f": {detail}" if detail else ""
        )


# outcome: (the notice's key, has_error, the level it is reported at, what the report says)
_ENDINGS: dict[Outcome, tuple[str | None, bool, int | None, str]] = {
    Outcome.FINISHED: (None, False, None, ""),
    Outcome.TRUNCATED: (
        "errors.ai_truncated",
        True,
        logging.WARNING,
        "response truncated on max_tokens",
    ),
    Outcome.REFUSED: ("errors.ai_refused", False, logging.INFO, "the model refused; not retried"),
    Outcome.CONTEXT_EXCEEDED: (
        "errors.ai_context_full",
        True,
        logging.ERROR,
        "the model's context window is full",
    ),
    Outcome.ITERATION_LIMIT: (
        "errors.ai_iteration_limit",
        True,
        logging.WARNING,
        "hit the iteration cap",
    ),
    Outcome.TIME_LIMIT: (
        "errors.ai_time_limit",
        True,
        logging.WARNING,
        "hit its wall-clock budget",
    ),
    Outcome.STOPPED: ("notices.stopped", False, None, ""),
    Outcome.FAILED: ("errors.ai_failed", True, logging.ERROR, "the turn failed"),
    Outcome.LIMIT_REACHED: (
        "notices.limit_reached",
        False,
        logging.INFO,
        "the day's limit is used up; the next model call was not made",
    ),
}


def ending(outcome: Outcome, key: str | None = None) -> Ending:
    """How a turn that ends with `outcome` ends: shown as its notice `key` when given (a
    failure's comes from its error: `errors.ai_unavailable`), else as the outcome's own."""
    own, has_error, level, why = _ENDINGS[outcome]
    return Ending(outcome, key or own, has_error, outcome is Outcome.STOPPED, level, why)


def unfinished(stopped: bool) -> Ending:
    """How a turn that could not finish ends: `stopped` if the reader had asked for that
    (not an error), else `failed`."""
    return ending(Outcome.STOPPED if stopped else Outcome.FAILED)


def details_of(reply: Reply) -> dict[str, Json]:
    """The report's details of a turn that ended on `reply`: the response's `stop_details`
    (a refusal's `category` and `explanation`), when it has them. The reader's notice is
    the outcome's, whatever they say."""
    return {"stop_details": reply.stop_details} if reply.stop_details else {}


def decide(reply: Reply) -> Outcome | None:
    """What a response means for the turn: the outcome it ends with, or None when the turn
    goes on (tools to run, or a paused turn to re-send)."""
    match reply.stop:
        case Stop.TOOL_USE | Stop.PAUSE_TURN | Stop.COMPACTION:
            return None
        case Stop.END_TURN:
            return Outcome.FINISHED
        case Stop.MAX_TOKENS:
            return Outcome.TRUNCATED
        case Stop.REFUSAL:
            return Outcome.REFUSED
        case Stop.CONTEXT_EXCEEDED:
            return Outcome.CONTEXT_EXCEEDED
        case Stop.OTHER:
            return Outcome.FAILED
        case _ as unreachable:
            assert_never(unreachable)
