"""turnkeeper's `run_turn` through `AnthropicProvider`, over HTTP to the billing fake.

The prompt-cache workload's two turns (`cache_turn`) in one conversation, with
the adapter's defaults (`prompt_cache` on, five minutes), the one-hour TTL, or
the cache turned off.
"""

from __future__ import annotations

from typing import Any

from turnkeeper import Budget, LocalHooks, Outcome, run_turn
from turnkeeper.providers.anthropic import AnthropicProvider
from turnkeeper.tools.functions import FunctionToolset, Tool
from turnkeeper.wire import Message, ToolSpec

from .. import cache_turn
from .turnkeeper_loop import quiet

PROMPT_CACHE: dict[str, bool | str] = {"default": True, "1h": "1h", "off": False}
"""The workload's variants: `AnthropicProvider(prompt_cache=...)`."""


def toolset() -> FunctionToolset:
    def read(arguments: dict[str, Any]) -> str:
        return cache_turn.page(int(arguments.get("page", 1)))

    return FunctionToolset(
        [
            Tool(ToolSpec(name, cache_turn.description(name), cache_turn.SCHEMA), read)
            for name in cache_turn.TOOL_NAMES
        ]
    )


async def turns(base_url: str, variant: str, iterations: int) -> dict[str, Any]:
    """Both questions, one after the other in one conversation; the model calls of each
    and the usage turnkeeper published for each."""
    provider = AnthropicProvider(
        model=cache_turn.MODEL,
        api_key=cache_turn.KEY,
        base_url=base_url,
        system=cache_turn.instructions(),
        max_retries=0,
        prompt_cache=PROMPT_CACHE[variant],
    )
    tools, history = toolset(), list[Message]()
    budget = Budget(max_iterations=iterations, deadline=600.0)
    calls, usages = [], []
    try:
        for question in cache_turn.QUESTIONS:
            result = await run_turn(
                question, provider=provider, toolset=tools, history=history, budget=budget,
                hooks=LocalHooks(quiet),
            )  # fmt: skip
            assert result.outcome is Outcome.FINISHED, result.outcome
            history = result.history
            calls.append(result.usage.iterations)
            usages.append(result.usage.as_dict())
    finally:
        await provider.aclose()
    return {"calls": calls, "usage": usages}
