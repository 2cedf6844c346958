"""What a store call refuses with: each a `TurnError`, each answered by its caller (a
worker stops writing, the API answers `404`, `409` or `429`)."""

from __future__ import annotations

from ..errors import TurnError


class FenceLost(TurnError):
    """A write presented a fence the turn no longer has: another party finalised it."""


REFUSED = "turn {turn_id}: write with fence {fence} refused: the turn was finalised or taken over"


def refused(turn_id: str, fence: int) -> FenceLost:
    """The error for a write whose fence the turn no longer has."""
    return FenceLost(REFUSED.format(turn_id=turn_id, fence=fence))


class Busy(TurnError):
    """The conversation already has a turn that is not done."""


class NoConversation(TurnError):
    """No conversation has this id (none ever did, or it was deleted): nothing was created
    for it."""


class NoTurn(TurnError):
    """No turn has this id (none ever did, or its conversation was deleted)."""


class OverLimit(TurnError):
    """A new turn's asker is over a limit (`usage.Limits`): nothing was created. `key` names
    the limit (`limits.turns_per_minute`, …), `retry_after` the whole seconds to wait."""

    def __init__(self, key: str, retry_after: int) -> None:
        super().__init__(f"{key}: ask again in {retry_after} s")
        self.key = key
        self.retry_after = retry_after
