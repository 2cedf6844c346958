"""The published state (docs/design.md §5): what the widget polls, as frozen types.

A turn's state moves through pure transitions, each returning a new state one
version on:

    queued(…)            version 1, the user's bubble (its only author)
      → running()        the worker has it
      → iterated(…)      after each iteration: caption, the reply's text, the tools'
                         cards, usage
      → ended(…)         once, however the turn ends (its `Ending`): the outcome, its
                         notice, done

Nobody else counts versions or numbers bubbles: a new bubble's id follows the
last one's (`m1`, `m2`, … across the conversation's turns). `to_json()` is
exactly the JSON the API serves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from .cards import Card
from .i18n import ask_key
from .outcomes import STATUSES, Ending, Status, TurnStatus
from .usage import Usage

Role = Literal["user", "bot"]
"""Who a published message is from: the reader (`user`) or the assistant and the runtime
(`bot`). The state (`Bubble.role`) and the OpenAPI document (`Bubble.role`) both use this."""

ROLES: tuple[Role, ...] = ("user", "bot")


def role(value: str) -> Role:
    """The role `value` names; `ValueError` if it names none."""
    for known in ROLES:
        if value == known:
            return known
    raise ValueError(f"{value!r} is not a role (user, bot)")


@dataclass(frozen=True, slots=True)
class Decided:
    """A person's decision on a tool use, kept in the transcript ("You approved: Delete a
    note"): the tool, the decision, and the key of the tool's ask text (`ask.<tool>`)."""

    tool: str
    approved: bool
    ask: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "approved": self.approved, "ask": self.ask}

    @classmethod
    def of(cls, approval: Approval, approved: bool) -> Decided:
        """The decision on `approval`'s use."""
        return cls(approval.tool, approved, ask_key(approval.tool))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decided:
        ask = data.get("ask")
        return cls(str(data["tool"]), bool(data["approved"]), ask if isinstance(ask, str) else None)


@dataclass(frozen=True, slots=True)
class Bubble:
    """One published message: model `text`, a runtime notice's i18n `key`, a tool's
    `card`, or a person's `decision` on a tool use."""

    id: str
    role: Role
    text: str | None = None
    key: str | None = None
    is_error: bool = False
    card: Card | None = None
    decision: Decided | None = None

    def to_json(self) -> dict[str, Any]:
        """The message as the API serves it: its `text`, its notice's `key`, its `card`, or
        its `decision`."""
        if self.decision is not None:
            return {"id": self.id, "role": self.role, "decision": self.decision.to_json()}
        if self.card is not None:
            return {"id": self.id, "role": self.role, "card": self.card.to_json()}
        if self.key is None:
            return {"id": self.id, "role": self.role, "text": self.text}
        return {"id": self.id, "role": self.role, "key": self.key, "is_error": self.is_error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bubble:
        return cls(
            id=data["id"],
            role=role(data["role"]),
            text=data.get("text"),
            key=data.get("key"),
            is_error=bool(data.get("is_error", False)),
            card=Card.from_json(data["card"]) if data.get("card") is not None else None,
            decision=Decided.from_json(data["decision"]) if data.get("decision") else None,
        )


@dataclass(frozen=True, slots=True)
class Approval:
    """A tool use a `waiting` turn holds for a person's yes, as published: the use's id,
    the tool, the input the model gave it, the tool's caption key (None: it has none), and
    the key of its ask text (`ask_key`), so the widget can say what the assistant wants to
    do in the reader's language."""

    tool_use_id: str
    tool: str
    input: Any
    key: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tool_use_id": self.tool_use_id, "tool": self.tool, "input": self.input,
                "key": self.key, "ask": ask_key(self.tool)}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Approval:
        key = data.get("key")
        return cls(
            str(data["tool_use_id"]),
            str(data.get("tool") or ""),
            data.get("input", {}),
            key if isinstance(key, str) else None,
        )


@dataclass(frozen=True, slots=True)
class PublishedState:
    """A turn's state as the widget polls it (`GET /api/turns/{id}`, docs/design.md §5):
    `version` strictly increases with every publish, the last one is `done`. Built only by
    `queued()` and the transitions below; `to_json()` is exactly what the API serves."""

    turn_id: str
    conversation_id: str
    version: int
    status: TurnStatus
    done: bool
    stopped: bool
    has_error: bool
    activity: str | None
    messages: tuple[Bubble, ...]
    usage: Usage
    """Summed over the turn's model calls so far; never changed once published."""
    approvals: tuple[Approval, ...] = ()
    """While `waiting`: the tool uses waiting for a person's yes (approvals.py)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON the API serves."""
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
            "usage": self.usage.as_dict(),
        } | ({"approvals": [a.to_json() for a in self.approvals]} if self.approvals else {})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PublishedState:
        return cls(
            turn_id=data["turn_id"],
            conversation_id=data["conversation_id"],
            version=int(data["version"]),
            status=STATUSES[data["status"]],
            done=bool(data["done"]),
            stopped=bool(data["stopped"]),
            has_error=bool(data["has_error"]),
            activity=data.get("activity"),
            messages=tuple(Bubble.from_json(m) for m in data.get("messages") or ()),
            usage=Usage.from_dict(data.get("usage") or {}),
            approvals=tuple(Approval.from_json(a) for a in data.get("approvals") or ()),
        )

    # ---- transitions -------------------------------------------------------

    def _next(
        self, messages: tuple[Bubble, ...], usage: Usage, activity: str | None
    ) -> PublishedState:
        """One version on, still running. Written out rather than `dataclasses.replace`:
        a transition runs every iteration, and `replace` costs more than the rest of it."""
        return PublishedState(
            self.turn_id,
            self.conversation_id,
            self.version + 1,
            Status.RUNNING,
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
        """A worker has the turn: no caption yet (the notice that it waited for one gone)."""
        return self._next(self.messages, self.usage, None)

    def iterated(
        self, activity: str | None, text: str | None, usage: Usage, cards: tuple[Card, ...] = ()
    ) -> PublishedState:
        """After an iteration: its caption, the reply's text (if worth showing), then the
        cards its tools returned, each a bubble of its own, in the tools' order; usage so far."""
        shown = ((text, None, False, None),) if text and text.strip() else ()
        carded = tuple((None, None, False, card) for card in cards)
        return self._next(self._with(*shown, *carded), usage.copy(), activity)

    def waiting(
        self,
        text: str | None,
        usage: Usage,
        cards: tuple[Card, ...],
        approvals: tuple[Approval, ...],
    ) -> PublishedState:
        """After the iteration a turn stops in to wait for a person: `waiting` (not done) with
        its `approvals`, and no caption (the response's would say, in the past tense, what
        has not happened)."""
        shown = self.iterated(None, text, usage, cards)
        return replace(shown, status=Status.WAITING, approvals=approvals)

    def after_decision(
        self, left: tuple[Approval, ...], decided: Decided | None = None
    ) -> PublishedState:
        """One version on once a person decided one use: still `waiting` for the `left`
        ones, else `queued` again (it resumes in a new job); the decision kept as the
        reader's own bubble, so the transcript says what they approved or denied."""
        status = Status.WAITING if left else Status.QUEUED
        messages = self.messages
        if decided is not None:
            n = int(messages[-1].id[1:]) if messages else 0
            messages = (*messages, Bubble(f"m{n + 1}", "user", decision=decided))
        return replace(
            self, version=self.version + 1, status=status, approvals=left, messages=messages
        )

    def requeued(self) -> PublishedState:
        """One version on, `queued` again after its worker stopped (it resumes in a new job)."""
        return replace(
            self, version=self.version + 1, status=Status.QUEUED, activity=None, approvals=()
        )

    def ended(self, end: Ending, *, text: str | None, usage: Usage) -> PublishedState:
        """The final state, however the turn ended: the answer or the ending's notice (shown
        as an error unless the reader stopped it), done, no caption."""
        shown = ((text, None, False, None),) if text and text.strip() else ()
        notice = ((None, end.key, not end.stopped, None),) if end.key else ()
        return PublishedState(
            self.turn_id,
            self.conversation_id,
            self.version + 1,
            end.outcome,
            True,
            end.stopped,
            end.has_error,
            None,
            self._with(*shown, *notice),
            usage.copy(),
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
        status=Status.QUEUED,
        done=False,
        stopped=False,
        has_error=False,
        activity=None,
        messages=(Bubble(f"m{message_offset + 1}", "user", question),),
        usage=Usage(),
    )
