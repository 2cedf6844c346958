"""The fake model and the trivial tool that every contender is driven by.

The model is a script of Anthropic Messages API response bodies: `rounds`
responses that each ask for one `lookup` tool use, then an `end_turn` answer.
Each contender wraps the same bodies in its framework's own types and finds its
step from the length of the history it is sent (O(1), so the fake never
rescans). The tool returns a fixed string of `payload` characters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

TOOL_NAME = "lookup"
TOOL_DESCRIPTION = "Look a key up."
TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
}
MODEL = "claude-fake"
ANSWER = "done"


@dataclass(frozen=True, slots=True)
class Spec:
    """One turn's shape: tool round trips, tool result size, model latency."""

    rounds: int
    payload: int = 16
    delay: float = 0.0

    @property
    def calls(self) -> int:
        """Model calls per turn: one per round trip and the final answer."""
        return self.rounds + 1


Turn = Callable[[], Awaitable[Any]]
"""Runs one whole turn of the fake model through a contender."""

TurnFactory = Callable[[Spec], Turn]


def body(step: int, spec: Spec) -> dict[str, Any]:
    """The response body for model call `step` (0-based) of a turn shaped by `spec`."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    if step < spec.rounds:
        use = {
            "type": "tool_use",
            "id": f"toolu_{step:05d}",
            "name": TOOL_NAME,
            "input": {"key": f"k{step}"},
        }
        content: list[dict[str, Any]] = [use]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": ANSWER}]
        stop = "end_turn"
    return {
        "id": f"msg_{step:05d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def script(spec: Spec) -> list[dict[str, Any]]:
    """Every body of one turn, in order."""
    return [body(step, spec) for step in range(spec.calls)]


def step_of(history_length: int) -> int:
    """The model call a history of this length is sent for: user, then (assistant, tool) pairs."""
    return (history_length - 1) // 2


class Lookup(Protocol):
    """The trivial tool's type: an async function of one string, `key`, by name or position."""

    def __call__(self, key: str) -> Coroutine[Any, Any, str]: ...


def tool(spec: Spec) -> Lookup:
    """The trivial tool: an async function of one string returning `spec.payload` characters."""
    result = "x" * spec.payload

    async def lookup(key: str) -> str:
        """Look a key up."""
        return result

    return lookup


# ---- what the fake model does on every call -------------------------------

stamps: list[float] | None = None
"""When set, every model call appends `time.perf_counter()` here (workload C)."""


async def called(spec: Spec) -> None:
    """What every fake model call does before answering: note the time, sleep if asked."""
    if stamps is not None:
        stamps.append(time.perf_counter())
    if spec.delay:
        await asyncio.sleep(spec.delay)
