"""Providers: one adapter per wire format behind one small interface.

- `scripted`: Anthropic Messages API bodies returned in order (offline, replay, demo).
- `anthropic`: the Anthropic Messages API through the official SDK.
- `openai`: any OpenAI-compatible Chat Completions server through the official SDK.
- `openai-responses`: OpenAI's Responses API (or a server that speaks it), same SDK.
- `demo`, `dev`: offline models, no key; `dev` calls each tool offered with input made
  from its schema (`samples`) and streams what came back at a reader's pace.

Imports only the ground floor (`turnkeeper.errors`, `wire`, `usage`,
`credentials`, `budget`): a provider knows the wire, not the loop that calls it.
Both SDK adapters stream by default and fold the stream back into the exact body a
plain call returns (`messages_stream`, `chat_stream`); `on_text` is the seam through
which the answer's text leaves a call while it is still arriving.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeAlias

from ..errors import ConfigError
from ..wire import Message, Reply, ToolResult, ToolSpec, WireFormat
from . import chat_api, messages_api, responses_api

WIRES: dict[str, WireFormat] = {
    w.name: w for w in (messages_api.WIRE, chat_api.WIRE, responses_api.WIRE)
}
"""Every wire format by the name the store records with a turn."""

MAX_RESPONSE = 4 * 1024 * 1024
"""The most content one response may hold, in bytes (decoded, before it is parsed): 4 MiB,
far above any real answer. A larger one is `ResponseTooLarge`, read no further, and the
turn fails with `errors.ai_too_large` (`Assistant(max_response=)` sets another)."""

TextSink: TypeAlias = Callable[[str], None]
"""Called with each piece of a reply's visible answer text, in order, as it arrives.

Only answer text: an Anthropic `text` block's `text_delta`s (with the `"\n"` that joins
one text block to the next), a Chat Completions `delta.content`; never thinking nor a
tool's input. The pieces of one call join to its `Reply.text`. They come before the
stop reason is known (a reply that ends `max_tokens` has streamed its cut text too) and
a call that then fails has streamed some; the sink must not raise and must not block:
it is called in the middle of reading the response."""


_turn_instructions: ContextVar[str | None] = ContextVar("turnkeeper_instructions", default=None)


def system_of(own: str | None) -> str | None:
    """The instructions a request carries: the turn's own (`instructed`), else the
    provider's. A provider of one process serves every turn, so a turn's instructions
    travel with the turn's tasks, as its `ToolContext` does, not in the provider."""
    return _turn_instructions.get() or own


@contextlib.contextmanager
def instructed(text: str | None) -> Iterator[None]:
    """`text` is the instructions of every request made in this task and the tasks it
    starts (an assistant's `instructions(ctx)`, called once per turn by its job)."""
    token = _turn_instructions.set(text)
    try:
        yield
    finally:
        _turn_instructions.reset(token)


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
        self,
        history: Sequence[Message],
        tools: Sequence[ToolSpec],
        timeout: float,
        on_text: TextSink | None = None,
    ) -> Reply:
        """Call the model once within `timeout` seconds (the per-call timeout the loop
        derived from what remains: hand it to the SDK, and raise `ProviderUnavailable`
        or `TimeoutError` when it passes); raise `ProviderError` when no usable
        response came. The loop adds no timer of its own per call: only the turn's
        deadline stops a provider that ignores its timeout.

        `on_text`, when given, receives the answer's text piece by piece as it arrives
        (`TextSink`); a provider that does not stream may give it all at once, or not
        call it at all. Cancelling the call aborts it, a stream in flight included."""
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


def takes_text(provider: Provider) -> bool:
    """Whether `provider.complete` takes `on_text`. A provider of one's own written before
    the seam does not: call it without (its answers arrive whole, as its `Reply`). Read once
    per function (every turn asks: a signature costs more than a model call's bookkeeping)."""
    complete = getattr(provider.complete, "__func__", provider.complete)
    try:
        return _takes_text(complete)
    except TypeError:  # not hashable: read it each time
        return _reads_on_text(complete)


@functools.lru_cache(maxsize=256)
def _takes_text(complete: Callable[..., object]) -> bool:
    return _reads_on_text(complete)


def _reads_on_text(complete: Callable[..., object]) -> bool:
    try:
        parameters = inspect.signature(complete).parameters
    except (TypeError, ValueError):
        return False
    return "on_text" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
