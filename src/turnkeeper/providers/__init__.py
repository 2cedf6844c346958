"""Providers: one adapter per wire format behind one small interface.

- `scripted`: Anthropic Messages API bodies returned in order (offline, replay, demo).
- `anthropic`: the Anthropic Messages API through the official SDK.
- `openai`: any OpenAI-compatible Chat Completions server through the official SDK.

Imports only the ground floor (`turnkeeper.errors`, `wire`, `usage`,
`credentials`, `budget`): a provider knows the wire, not the loop that calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import ConfigError
from ..wire import Message, Reply, ToolResult, ToolSpec, WireFormat
from . import chat_api, messages_api

WIRES: dict[str, WireFormat] = {w.name: w for w in (messages_api.WIRE, chat_api.WIRE)}
"""Every wire format by the name the store records with a turn."""


def wire_format(name: str) -> WireFormat:
    """The wire format a stored turn was written in."""
    if name not in WIRES:
        raise ConfigError(f"unknown wire format {name!r}; known: {', '.join(WIRES)}")
    return WIRES[name]


class Provider(Protocol):
    """A model behind one wire format."""

    wire: WireFormat
    """The wire format of the history this provider reads and writes."""

    async def complete(
        self, history: Sequence[Message], tools: Sequence[ToolSpec], timeout: float
    ) -> Reply:
        """Call the model once within `timeout` seconds (the per-call timeout the loop
        derived from what remains: hand it to the SDK, and raise `ProviderUnavailable`
        or `TimeoutError` when it passes); raise `ProviderError` when no usable
        response came. The loop adds no timer of its own per call: only the turn's
        deadline stops a provider that ignores its timeout."""
        ...

    def user_message(self, text: str) -> Message:
        """The user's question as a history message."""
        ...

    def tool_results(self, results: Sequence[ToolResult]) -> list[Message]:
        """Tool results as history messages, in the order given."""
        ...

    def describe(self) -> dict[str, Any]:
        """The request parameters worth tracing, without secrets."""
        ...
