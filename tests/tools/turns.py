"""Running a scripted turn against a toolset, and reading what the tools answered."""

from __future__ import annotations

from typing import Any

from turnkeeper.budget import Budget
from turnkeeper.providers.scripted import ScriptedProvider
from turnkeeper.tools import Toolset
from turnkeeper.turn.hooks import LocalHooks
from turnkeeper.turn.loop import TurnResult, run_turn


async def scripted_turn(
    toolset: Toolset, *responses: dict[str, Any], budget: Budget | None = None
) -> tuple[TurnResult, LocalHooks]:
    """Run one turn whose model answers with `responses`; the result and the hooks it used."""
    hooks = LocalHooks()
    provider = ScriptedProvider(list(responses))
    result = await run_turn(
        "go", provider=provider, toolset=toolset, hooks=hooks, budget=budget or Budget()
    )
    assert provider.unused == 0
    return result, hooks


def tool_results(result: TurnResult, step: int = 0) -> list[dict[str, Any]]:
    """The `tool_result` blocks answering the `step`-th tool-using response, in order."""
    answers = [
        m
        for m in result.history
        if m["role"] == "user"
        and isinstance(m["content"], list)
        and any(b.get("type") == "tool_result" for b in m["content"])
    ]
    blocks: list[dict[str, Any]] = answers[step]["content"]
    assert all(b["type"] == "tool_result" for b in blocks)
    return blocks
