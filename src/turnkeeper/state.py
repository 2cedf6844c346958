"""The published state (docs/design.md §5): what the widget polls, as frozen types.

A turn's state moves through pure transitions, each returning a new state one
version on:

    queued(…)            version 1, the user's bubble (its only author)
      → running()        the worker has it
      → iterated(…)      after each iteration: caption, the reply's text, the tools'
                         cards, usage
      → ended(…)         once, on every exit: the outcome, its notice, done
    failed(…)            a turn that could not finish, from its last state

Nobody else counts versions or numbers bubbles: a new bubble's id follows the
last one's (`m1`, `m2`, … across the conversation's turns). `to_json()` is
exactly the JSON the API serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cards import Card
from .outcomes import ERROR_OUTCOMES, OUTCOME_KEYS, Outcome, Status
from .usage import Usage


@dataclass(frozen=True, slots=True)
class Bubble:
    """One published message: model `text`, a runtime notice's i18n `key`, or a tool's
    `card`."""

    id: str
    role: str
    """`user` or `bot`."""
    text: str | None = None
    key: str | None = None
    is_error: bool = False
    card: Card | None = None

    def to_json(self) -> dict[str, Any]:
        if self.card is not None:
            return {"id": self.id, "role": self.role, "card": self.card.to_json()}
        if self.key is None:
            return {"id": self.id, "role": self.role, "text": self.text}
        return {"id": self.id, "role": self.role, "key": self.key, "is_error": self.is_error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bubble:
        return cls(
            id=data["id"],
            role=data["role"],
            text=data.get("text"),
            key=data.get("key"),
            is_error=bool(data.get("is_error", False)),
            card=Card.from_json(data["card"]) if data.get("card") is not None else None,
        )


@dataclass(frozen=True, slots=True)
class PublishedState:
    turn_id: str
    conversation_id: str
    version: int
    status: str
    done: bool
    stopped: bool
    has_error: bool
    activity: str | None
    messages: tuple[Bubble, ...]
    usage: dict[str, int | float]
    """`Usage.as_dict()`: the token counts, and `cost_usd` when the price is known."""
    approvals: tuple[dict[str, Any], ...] = ()
    """While `waiting`: the tool uses waiting for a person's yes (approvals.py)."""

    def to_json(self) -> dict[str, Any]:
        return {**self.bare(), "messages": [m.to_json() for m in self.messages]}

    def bare(self) -> dict[str, Any]:
        """The JSON without its messages (the stores keep those one row each)."""
        return {
            "turn_id": self.turn_id,
            "conversation_id": self.conversation_id,
            "version": self.version,
            "status": self.status,
            "done": self.done,
            "stopped": self.stopped,
            "has_error": self.has_error,
            "activity": self.activity,
            "usage": self.usage,
        } | ({"approvals": list(self.approvals)} if self.approvals else {})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PublishedState:
        return cls(
            turn_id=data["turn_id"],
            conversation_id=data["conversation_id"],
            version=int(data["version"]),
            status=data["status"],
            done=bool(data["done"]),
            stopped=bool(data["stopped"]),
            has_error=bool(data["has_error"]),
            activity=data.get("activity"),
            messages=tuple(Bubble.from_json(m) for m in data.get("messages") or ()),
            usage=dict(data.get("usage") or {}),
            approvals=tuple(data.get("approvals") or ()),
        )

    # ---- transitions -------------------------------------------------------

    def _next(
        self, messages: tuple[Bubble, ...], usage: dict[str, int | float], activity: str | None
    ) -> PublishedState:
        """One version on, still running. Written out rather than `dataclasses.replace`:
        a transition runs every iteration, and `replace` costs more than the rest of it."""
        return PublishedState(
            self.turn_id,
            self.conversation_id,
            self.version + 1,
            Status.RUNNING.value,
            False,
            False,
            False,
            activity,
            messages,
            usage,
        )

    def _with(
        self, *bubbles: tuple[str | None, str | None, bool, Card | None]
    ) -> tuple[Bubble, ...]:
        """The messages with the runtime's new bubbles (`text`, `key`, `is_error`, `card`)."""
        if not bubbles:
            return self.messages
        n = int(self.messages[-1].id[1:]) if self.messages else 0
        added = (
            Bubble(f"m{n + i}", "bot", text, key, is_error, card)
            for i, (text, key, is_error, card) in enumerate(bubbles, 1)
        )
        return (*self.messages, *added)

    def running(self) -> PublishedState:
        return self._next(self.messages, self.usage, self.activity)

    def iterated(
        self, activity: str | None, text: str | None, usage: Usage, cards: tuple[Card, ...] = ()
    ) -> PublishedState:
        """After an iteration: its caption, the reply's text (if worth showing), then the
        cards its tools returned, each a bubble of its own, in the tools' order; usage so far."""
        shown = ((text, None, False, None),) if text and text.strip() else ()
        carded = tuple((None, None, False, card) for card in cards)
        return self._next(self._with(*shown, *carded), usage.as_dict(), activity)

    def ended(
        self, outcome: Outcome, *, text: str | None, key: str | None, usage: Usage
    ) -> PublishedState:
        """The final state of any exit: the answer or the outcome's notice, done, no caption."""
        shown = ((text, None, False, None),) if text and text.strip() else ()
        notice = ((None, key, outcome is not Outcome.STOPPED, None),) if key else ()
        return PublishedState(
            self.turn_id,
            self.conversation_id,
            self.version + 1,
            outcome.value,
            True,
            outcome is Outcome.STOPPED,
            outcome in ERROR_OUTCOMES,
            None,
            self._with(*shown, *notice),
            usage.as_dict(),
        )


def queued(
    turn_id: str, conversation_id: str, question: str, message_offset: int = 0, *, version: int = 1
) -> PublishedState:
    """The first state of a turn: version 1, queued, its user message shown. (A turn run
    without a store starts from version 0: nothing of it has been published.)"""
    return PublishedState(
        turn_id=turn_id,
        conversation_id=conversation_id,
        version=version,
        status=Status.QUEUED.value,
        done=False,
        stopped=False,
        has_error=False,
        activity=None,
        messages=(Bubble(f"m{message_offset + 1}", "user", question),),
        usage=Usage().as_dict(),
    )


def failed(state: PublishedState, usage: Usage, *, stopped: bool = False) -> PublishedState:
    """`state` finalised as `failed`: done, has_error, an `errors.ai_failed` bubble, no caption;
    as `stopped` (a `notices.stopped` bubble, no error) when its cancel had been accepted."""
    outcome = Outcome.STOPPED if stopped else Outcome.FAILED
    return state.ended(outcome, text=None, key=OUTCOME_KEYS[outcome], usage=usage)
