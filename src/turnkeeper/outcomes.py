"""The closed sets the loop matches on: what a response asks for, how a turn ends."""

from __future__ import annotations

from enum import StrEnum


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


class Status(StrEnum):
    """The non-terminal values of the published `status`."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    """For a person's decision on a tool call (approvals.py); not working, not done."""


# The message key shown for each outcome; `failed` picks its key from the error.
OUTCOME_KEYS: dict[Outcome, str | None] = {
    Outcome.FINISHED: None,
    Outcome.TRUNCATED: "errors.ai_truncated",
    Outcome.REFUSED: "errors.ai_refused",
    Outcome.CONTEXT_EXCEEDED: "errors.ai_context_full",
    Outcome.ITERATION_LIMIT: "errors.ai_iteration_limit",
    Outcome.TIME_LIMIT: "errors.ai_time_limit",
    Outcome.STOPPED: "notices.stopped",
    Outcome.FAILED: "errors.ai_failed",
}

ERROR_OUTCOMES = frozenset(
    {
        Outcome.TRUNCATED,
        Outcome.CONTEXT_EXCEEDED,
        Outcome.ITERATION_LIMIT,
        Outcome.TIME_LIMIT,
        Outcome.FAILED,
    }
)
