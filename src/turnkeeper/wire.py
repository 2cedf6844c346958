"""The shapes that cross the provider boundary.

A `Message` is one entry of the history in the provider's own wire format and
is never rewritten. A `Reply` is a read-only view of one model response that
the provider adapter computes; the loop decides on the view and appends
`Reply.message` verbatim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cards import Card
from .outcomes import Stop
from .usage import Usage

Json = Any
Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, its JSON schema."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One client tool the model asked to run."""

    id: str
    name: str
    input: Json

    def to_json(self) -> dict[str, Any]:
        """The use as a resume record keeps it (records.py)."""
        return {"id": self.id, "name": self.name, "input": self.input}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolUse:
        return cls(str(data["id"]), str(data["name"]), data.get("input"))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, answered to the model under the tool use's id."""

    tool_use_id: str
    content: str
    is_error: bool = False
    card: Card | None = None
    """The `Card` the tool returned (its JSON is `content`), for the reader to see as a card;
    the model reads only `content`."""

    def to_json(self) -> dict[str, Any]:
        """The result as a resume record keeps it (records.py), its card too."""
        out: dict[str, Any] = {
            "tool_use_id": self.tool_use_id,
            "content": self.content,
            "is_error": self.is_error,
        }
        if self.card is not None:
            out["card"] = self.card.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolResult:
        card = Card.from_json(data["card"]) if data.get("card") is not None else None
        return cls(data["tool_use_id"], data["content"], bool(data.get("is_error")), card)


@dataclass(frozen=True, slots=True)
class Reply:
    """A view of one model response."""

    stop: Stop
    raw_stop: str | None
    message: Message
    """The assistant message to append to the history, verbatim."""
    text: str
    """The response's text blocks joined with a newline."""
    tool_uses: tuple[ToolUse, ...]
    """Client tool uses the runtime must run."""
    steps: tuple[str, ...]
    """Names of every tool the response used, client or server side, in order."""
    usage: Usage
    raw: Json
    """The response body as it came, for the trace."""
    keep: bool = True
    """False when `message` holds nothing: the API rejects an empty assistant message
    anywhere but last, so the loop does not append it."""
    stop_details: Json = None
    """Why the model stopped, when the response says more than its stop reason (a refusal's
    `category` and `explanation`): reported and traced, never shown to the reader."""
    context: int | None = None
    """The tokens the conversation holds after this call, when the response says so apart
    from its usage (Anthropic's last `usage.iterations` entry: after the API compacted, the
    usage counts the compaction too); None: the usage's input and output are it."""


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One wire format's pure functions, carried by every provider that speaks it.

    `name` is what the store records with a turn, so a turn whose worker died
    can be closed in the format its history was written in.
    """

    name: str
    parse_reply: Callable[[Json], Reply]
    user_message: Callable[[str], Message]
    tool_results: Callable[[Sequence[ToolResult]], list[Message]]
    tool_uses: Callable[[Message], tuple[ToolUse, ...]]
    message_text: Callable[[Message], str]
    recorded_results: Callable[[Sequence[Message]], dict[str, ToolResult]]
