"""Running real turns against the wire server: a toolset that answers any tool, quiet hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnkeeper import Budget, LocalHooks, TurnResult, run_turn
from turnkeeper.observe.report import Report
from turnkeeper.providers import Provider
from turnkeeper.wire import ToolResult, ToolSpec, ToolUse


class EchoTools:
    """Answers every tool use with a result naming it and its position in the turn."""

    def __init__(self, names: Sequence[str] = ("tool",)) -> None:
        self.names = names
        self.calls: list[ToolUse] = []

    async def list_tools(self) -> Sequence[ToolSpec]:
        return [ToolSpec(n, f"the {n} tool") for n in self.names]

    async def call(self, use: ToolUse, timeout: float) -> ToolResult:
        self.calls.append(use)
        return ToolResult(use.id, f"{use.name} result {len(self.calls)}")


def _quiet(report: Report) -> None:
    """Reports are asserted through LocalHooks.reports, not logged."""


async def run(
    provider: Provider, *, budget: Budget | None = None, question: str = "question"
) -> tuple[TurnResult, LocalHooks]:
    hooks = LocalHooks(reporter=_quiet)
    result = await run_turn(
        question, provider=provider, toolset=EchoTools(), budget=budget, hooks=hooks
    )
    return result, hooks


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as sent, without the prompt-cache marks the request added to some blocks."""
    return [
        {**m, "content": [_unmarked(b) for b in m["content"]]}
        if isinstance(m.get("content"), list)
        else m
        for m in messages
    ]


def _unmarked(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def bubbles(result: TurnResult) -> list[dict[str, Any]]:
    """The published bot messages of a turn."""
    return [m for m in result.state.to_json()["messages"] if m["role"] == "bot"]
