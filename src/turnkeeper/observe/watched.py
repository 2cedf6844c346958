"""What a turn tells whoever watches it, as data: the turn, and each model call that ended.

The types the instruments (`instruments.py`) hand to the watchers
(`telemetry.py`, `metrics.py`), in a module of their own so that the
watchers need nothing else of the instruments, which load them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..usage import Usage


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """A turn as its watchers first see it: ids, provider, the model requested, the question."""

    turn_id: str
    conversation_id: str
    provider: str
    """`anthropic`, `openai`, … (the provider's own name, else its wire format)."""
    model: str | None
    """The model requested."""
    question: str = ""


@dataclass(frozen=True, slots=True)
class CallEnd:
    """One model call that ended: with a response (`usage`) or an `error`."""

    iteration: int
    seconds: float
    model: str | None
    """The model that answered (the response's `model`), else the one requested."""
    usage: Usage | None = None
    """This call's usage, priced when the model's price is known; None for an error."""
    finish_reason: str | None = None
    error: str | None = None
    tools: Sequence[str] = ()
    text: str = ""
    stopped: bool = False
    """A stop (the turn's cancel) aborted the call: no response, no error."""
    pieces: int = 0
    """Pieces of answer text the provider streamed during the call (0: none streamed)."""
    first_text: float | None = None
    """Seconds from the call's start to its first piece of text; None if none came."""
