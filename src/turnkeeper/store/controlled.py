"""What a reader controls of their own conversations, as the store's contract and values:
deleting one, renaming it, rating a turn (`controls.py` writes them once for both
databases). Imports nothing of the store, so `base.Store` can extend its protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Rating = Literal["up", "down"]
RATINGS: tuple[Rating, ...] = ("up", "down")


@dataclass(frozen=True, slots=True)
class Given:
    """A turn's feedback as just given: what the metrics count it by."""

    outcome: str
    model: str | None


@dataclass(frozen=True, slots=True)
class Rated:
    """A turn's feedback as kept: `trace show` prints it."""

    rating: str
    comment: str | None
    at: float
    """When it was last given (Unix seconds)."""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One turn's feedback as `turnkeeper feedback` exports it."""

    turn_id: str
    conversation_id: str
    outcome: str
    rating: str
    comment: str | None
    at: float
    """When it was last given (Unix seconds)."""
    user: str | None
    locale: str
    question: str


class ReaderControls(Protocol):
    """The calls of `Store` that serve the reader's controls."""

    async def delete_conversation(self, conversation_id: str, *, stop: bool) -> bool:
        """Delete the conversation and everything of it (turns, history, messages, model
        calls' records, events, feedback) in one transaction; False if there is none.
        `Busy` while a turn of it is not done, unless `stop` (controls.py)."""
        ...

    async def rename_conversation(self, conversation_id: str, title: str | None) -> str | None:
        """Give the conversation its own title (None: its first question); the title it is
        now listed by. `NoConversation` if there is none."""
        ...

    async def give_feedback(
        self, turn_id: str, rating: Rating, comment: str | None
    ) -> Given | None:
        """Keep the reader's feedback on a done turn over any before; None if not done."""
        ...

    async def feedback_of(self, turn_id: str) -> Rated | None:
        """The turn's feedback, or None."""
        ...

    async def feedback(self, since: float) -> list[Feedback]:
        """Every turn's feedback given since `since` (Unix seconds), oldest first."""
        ...
